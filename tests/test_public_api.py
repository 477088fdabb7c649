"""The public API speaks one vocabulary (issue #14): the package's names come from one list, each
concept has one name (the old names of 0.1.0's renames are gone, not kept as aliases: issue #26),
and one preset object per harness carries its budgets and its compaction policy."""

from __future__ import annotations

import ast
import dataclasses
import inspect
from pathlib import Path
from typing import Any

import pytest

import agentcontext as ac
from agentcontext import _core, budgets, compaction, errors

MESSAGES: list[dict[str, Any]] = [
    {"role": "system", "content": "be brief"},
    {"role": "user", "content": "read the config"},
    {
        "role": "assistant",
        "content": None,
        "tool_calls": [{"id": "c1", "type": "function", "function": {"name": "read", "arguments": "{}"}}],
    },
    {"role": "tool", "tool_call_id": "c1", "content": "x = 1\n" * 50},
    {"role": "assistant", "content": "done"},
    {"role": "user", "content": "thanks"},
]


def conv() -> ac.Conversation:
    return ac.Conversation(MESSAGES)


# -- one list --------------------------------------------------------------------------------


def test_all_exports_and_type_checking_imports_are_one_list() -> None:
    """``__all__`` and ``_EXPORTS`` are derived from ``_PUBLIC``; the TYPE_CHECKING imports (which
    type checkers need spelled out) name exactly the same things from the same modules."""
    assert ac.__all__ == sorted(ac._EXPORTS)
    assert set(ac._EXPORTS) == {name for names in ac._PUBLIC.values() for name in names}
    tree = ast.parse(Path(ac.__file__).read_text(encoding="utf-8"))
    block = next(n for n in tree.body if isinstance(n, ast.If) and ast.unparse(n.test) == "TYPE_CHECKING")
    imported = {
        (alias.asname or alias.name): (node.module, alias.name)
        for node in block.body
        if isinstance(node, ast.ImportFrom)
        for alias in node.names
    }
    assert imported == ac._EXPORTS
    for name in ac.__all__:
        assert getattr(ac, name) is not None, name


def test_the_core_names_come_from_its_own_list() -> None:
    """The compiled module's ``__all__`` is built by PyO3 as things are added to it; the stub's copy
    is checked against it by stubtest, and the package takes from the core only names in it."""
    assert set(_core.__all__) >= {
        name for module, names in ac._PUBLIC.items() if module == "agentcontext._core" for name in names
    }


# -- one name per concept: the renamed names answer, the old ones are refused ------------------


@pytest.fixture
def text_file(tmp_path: Path) -> Path:
    path = tmp_path / "notes.txt"
    path.write_text("".join(f"line {i}\n" for i in range(1, 40)), encoding="utf-8")
    return path


def test_read_page_and_page_text_take_lines(text_file: Path) -> None:
    page = ac.read_page(text_file, 3, lines=5)
    assert (page.start_line, page.end_line) == (3, 7)
    text = text_file.read_text(encoding="utf-8")
    assert ac.page_text(text, 2, lines=4).text == ac.page_text(text, 2, 4).text
    assert ac.read_page is _core.read_page and ac.page_text is _core.page_text
    with pytest.raises(TypeError, match="limit"):
        ac.read_page(text_file, 3, limit=5)  # type: ignore[call-arg]
    with pytest.raises(TypeError, match="limit"):
        ac.page_text(text, 2, limit=4)  # type: ignore[call-arg]


def test_file_reader_takes_lines(text_file: Path) -> None:
    new = ac.FileReader(dedup=False).read(text_file, 2, lines=3)
    assert ac.FileReader(dedup=False).answer(text_file, 2, lines=3) == new
    assert "lines 2-4" in new
    for method in (ac.FileReader(dedup=False).read, ac.FileReader(dedup=False).answer):
        with pytest.raises(TypeError, match="limit"):
            method(text_file, 2, limit=3)  # type: ignore[call-arg]


def test_recall_takes_lines(tmp_path: Path) -> None:
    store = ac.ResultStore(tmp_path / "store")
    rid = store.put("".join(f"row {i}\n" for i in range(100)))
    recall = ac.Recall(store)
    new = recall.recall(rid, 10, lines=5)
    assert "Use offset=15" in new
    assert store.recall(rid, 10, lines=5) == new
    assert recall.page(rid, 10, lines=5).text in new
    for method in (recall.recall, recall.page, store.recall):
        with pytest.raises(TypeError, match="limit"):
            method(rid, 10, limit=5)  # type: ignore[call-arg]
    # The model's tool keeps its argument names: offset and limit (lines).
    assert recall({"id": rid, "offset": 10, "limit": 5}) == new
    assert recall({"id": rid, "limit": 0}).startswith("Error: limit must be")


def test_to_anthropic_params_is_the_request_and_to_format_the_list() -> None:
    c = conv()
    params = c.to_anthropic_params()
    assert set(params) == {"system", "messages"}
    assert params == ac.convert(MESSAGES, to="anthropic")
    # to_format gives the message list for every format, Anthropic's included.
    listed = c.to_format("anthropic")
    assert isinstance(listed, list) and listed[0] == {"role": "system", "content": "be brief"}
    assert listed[1:] == params["messages"]
    assert not hasattr(c, "to_anthropic")


def test_pin_takes_pinned_by_keyword_only() -> None:
    c = conv()
    c.pin(4)
    c.pin(5, pinned=True)
    assert c.pinned == [4, 5]
    c.pin(5, pinned=False)
    assert c.pinned == [4]
    for args in ((4, False), (1, True), (1, True, False)):
        with pytest.raises(TypeError):
            c.pin(*args)
    with pytest.raises(TypeError):
        c.pin(1, pinned=None)  # type: ignore[arg-type]  # not a bool
    assert c.pinned == [4]


@pytest.mark.parametrize(
    ("old", "new", "args", "kwargs"),
    [
        ("recent_start", "_raw_start_at_least", (), {"keep_messages": 2}),
        ("cut_points", "_cut_points", (), {}),
        ("export_each", "_export_each", (), {}),
        ("latest_request", "_latest_request", (1,), {}),
        ("summaries", "_summaries", (0, 4), {}),
    ],
)
def test_conversation_internals_have_underscore_names_only(
    old: str, new: str, args: tuple[Any, ...], kwargs: dict[str, Any]
) -> None:
    c = conv()
    getattr(c, new)(*args, **kwargs)
    assert new in dir(c)
    assert not hasattr(c, old)


def test_positional_renames_keep_their_calls() -> None:
    """Renamed positional-only parameters: the calls are unchanged, the errors name the new name."""
    c = conv()
    assert ac.truncate("abc\n" * 100, 200).text == ac.truncate("abc\n" * 100, 200, unit="chars").text
    with pytest.raises(errors.OptionError, match=r"^max_size"):
        ac.truncate("abc", -1)
    with pytest.raises(errors.OptionError, match=r"^max_tokens"):
        c.recent_suffix(-1)
    with pytest.raises(errors.OptionError, match=r"^max_chars"):
        c.truncate_tool_results(-1)
    with pytest.raises(errors.OptionError, match=r"^max_chars"):
        c.tool_results_over(-1)
    for fn, name in ((ac.truncate, "max_size"), (ac.read_page, "lines"), (ac.page_text, "lines")):
        assert name in inspect.signature(fn).parameters


# -- presets ----------------------------------------------------------------------------------


def test_one_preset_per_harness_carries_budgets_and_compaction() -> None:
    assert ac.PRESETS is compaction.PRESETS
    assert not hasattr(budgets, "PRESETS") and "PRESETS" not in budgets.__all__
    for name, preset in ac.PRESETS.items():
        assert isinstance(preset, ac.Preset) and preset.name == name
        assert compaction.Compactor(name, environ={}).policy is preset.compaction
        if preset.budgets is not None:
            assert preset.result_policy(8_000) == preset.budgets.result_policy(8_000)
            assert preset.file_reader().limits == preset.budgets.file_reader().limits
        assert preset.compactor(environ={}).policy == preset.compaction
        assert compaction.resolve_policy(preset) is preset.compaction
    goose = ac.PRESETS["goose"]
    assert goose.budgets is None and goose.result_policy(8_000) == ac.ToolResultPolicy(context_window=8_000)


def test_preset_tables_have_one_name() -> None:
    """``agentcontext.PRESETS`` holds :class:`~agentcontext.Preset` objects and is the one table:
    the budget numbers are read from ``.budgets``, the policy from ``.compaction``."""
    assert not hasattr(ac, "STRATEGIES") and "STRATEGIES" not in ac.__all__
    claude = ac.PRESETS["claude-code"]
    assert claude.budgets is not None
    assert claude.budgets.with_(result_max_chars=1_000) == dataclasses.replace(claude.budgets, result_max_chars=1_000)
    for field in dataclasses.fields(ac.BudgetPreset):
        assert not hasattr(claude, field.name) or field.name == "name"
    with pytest.raises(AttributeError):
        _ = claude.read_max_lines  # type: ignore[attr-defined]
    with pytest.raises(AttributeError):
        _ = claude.no_such_field  # type: ignore[attr-defined]


# -- one vocabulary ---------------------------------------------------------------------------


def _parameters(fn: Any) -> set[str]:
    return set(inspect.signature(fn).parameters)


def test_max_tokens_is_an_input_budget_and_max_output_tokens_the_output_cap() -> None:
    """Every public call that caps the model's output names it ``max_output_tokens``; no output
    cap is called ``max_tokens`` (that name is an input budget: ``trim_messages``, the adapters)."""
    from agentcontext.compiler import Compiler, LLMJudge, compile_request
    from agentcontext.memory.flush import flush_memory

    output_caps = [ac.Session, ac.Provider.complete, compile_request, Compiler.compile, LLMJudge, flush_memory]
    for fn in output_caps:
        assert "max_output_tokens" in _parameters(fn) and "max_tokens" not in _parameters(fn), fn
    assert "flush_max_output_tokens" in _parameters(ac.Compactor) and "flush_max_tokens" not in _parameters(
        ac.Compactor
    )
    assert "max_output_tokens_param" in _parameters(ac.OpenAIChatProvider)
    assert "max_tokens" in _parameters(ac.trim_messages)
    with pytest.raises(TypeError):
        ac.Session(None, max_tokens=100)  # type: ignore[call-arg, arg-type]  # refused before the body runs


def test_recent_protection_and_the_result_budget_have_one_name_each() -> None:
    """``recent_messages``/``recent_tools``/``recent_tokens`` and ``result_max_chars`` wherever the
    concept appears; the old names are gone, not aliased, also from the environment variables."""
    names = {f.name for f in dataclasses.fields(ac.CompactionPolicy)}
    assert {"recent_messages", "recent_tools", "recent_tokens", "manual_recent_messages"} <= names
    assert {"result_max_chars", "per_tool_max_chars"} <= names
    gone = {"preserve_recent_messages", "preserve_recent_tools", "keep_recent_tokens", "manual_keep_messages"}
    assert not names & (gone | {"result_budget_chars", "per_tool_budget_chars"})
    assert "result_max_chars" in {f.name for f in dataclasses.fields(ac.BudgetPreset)}
    assert "max_chars" in {f.name for f in dataclasses.fields(ac.ToolResultPolicy)}
    assert "recent_messages" in _parameters(ac.Conversation.clear_tool_results)
    policy = ac.CompactionPolicy().from_env(
        {"AGENTCONTEXT_COMPACT__RECENT_TOKENS": "500", "AGENTCONTEXT_COMPACT__PRESERVE_RECENT_MESSAGES": "1"}
    )
    assert policy.recent_tokens == 500 and policy.recent_messages == ac.CompactionPolicy().recent_messages


def test_the_compiler_hides_tools_it_has_no_strategy() -> None:
    """The compiler's plan-mode choice is ``hiding`` (``filter`` or ``deny``): "strategy" stays the
    compaction word (a preset name)."""
    from agentcontext.compiler import TOOL_HIDINGS, Compiler, WorkingSet, compile_request

    assert TOOL_HIDINGS == ("filter", "deny")
    assert "hiding" in _parameters(Compiler) and "strategy" not in _parameters(Compiler)
    assert "hiding" in _parameters(compile_request) and "strategy" not in _parameters(compile_request)
    compiled = compile_request([], WorkingSet(), mode="plan", hiding="deny", format="openai")
    assert compiled.hiding == "deny" and compiled.to_dict()["hiding"] == "deny"
    with pytest.raises(errors.OptionError, match=r"^hiding"):
        Compiler(hiding="both")
