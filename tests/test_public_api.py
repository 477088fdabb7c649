"""The public API speaks one vocabulary (issue #14): the package's names come from one list, every
renamed name still works for one release with a DeprecationWarning and gives what the new name
gives, and one preset object per harness carries its budgets and its compaction policy."""

from __future__ import annotations

import ast
import dataclasses
import inspect
from pathlib import Path
from typing import Any

import pytest

import agentcontext as ac
from agentcontext import _core, _deprecation, budgets, compaction, errors

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
    assert {name for name in ac._PUBLIC.get("agentcontext._compat_core", ())} <= set(_core.__all__)


# -- deprecated names: each warns and answers as the new one --------------------------------


def _same(old: Any, new: Any) -> None:
    if isinstance(new, ac.Conversation):
        assert old._export_each() == new._export_each()
    elif isinstance(new, tuple) and new and isinstance(new[0], ac.Conversation):
        _same(old[0], new[0])
        assert old[1:] == new[1:]
    else:
        assert old == new


def _deprecated(call: Any) -> Any:
    with pytest.warns(DeprecationWarning, match="next release") as record:
        value = call()
    assert all(w.filename == __file__ for w in record), "the warning points at the caller's line"
    return value


@pytest.fixture
def text_file(tmp_path: Path) -> Path:
    path = tmp_path / "notes.txt"
    path.write_text("".join(f"line {i}\n" for i in range(1, 40)), encoding="utf-8")
    return path


def test_read_page_and_page_text_limit_is_lines(text_file: Path) -> None:
    new = ac.read_page(text_file, 3, lines=5)
    old = _deprecated(lambda: ac.read_page(text_file, 3, limit=5))
    assert (old.text, old.start_line, old.end_line) == (new.text, 3, 7)
    text = text_file.read_text(encoding="utf-8")
    assert _deprecated(lambda: ac.page_text(text, 2, limit=4)).text == ac.page_text(text, 2, lines=4).text
    with pytest.raises(errors.ArgumentTypeError, match="lines= only"):
        ac.read_page(text_file, 3, lines=5, limit=5)


def test_file_reader_limit_is_lines(text_file: Path) -> None:
    new = ac.FileReader(dedup=False).read(text_file, 2, lines=3)
    assert _deprecated(lambda: ac.FileReader(dedup=False).read(text_file, 2, limit=3)) == new
    assert _deprecated(lambda: ac.FileReader(dedup=False).answer(text_file, 2, limit=3)) == new
    assert "lines 2-4" in new


def test_recall_limit_is_lines(tmp_path: Path) -> None:
    store = ac.ResultStore(tmp_path / "store")
    rid = store.put("".join(f"row {i}\n" for i in range(100)))
    recall = ac.Recall(store)
    new = recall.recall(rid, 10, lines=5)
    assert "Use offset=15" in new
    assert _deprecated(lambda: recall.recall(rid, 10, limit=5)) == new
    assert _deprecated(lambda: recall.page(rid, 10, limit=5)) == recall.page(rid, 10, lines=5)
    assert _deprecated(lambda: store.recall(rid, 10, limit=5)) == new
    # The model's tool keeps its argument names: offset and limit (lines).
    assert recall({"id": rid, "offset": 10, "limit": 5}) == new
    assert recall({"id": rid, "limit": 0}).startswith("Error: limit must be")


def test_to_anthropic_is_to_anthropic_params() -> None:
    c = conv()
    params = c.to_anthropic_params()
    assert set(params) == {"system", "messages"}
    assert _deprecated(lambda: c.to_anthropic()) == params
    assert _deprecated(lambda: c.to_anthropic(request=True)) == c.to_anthropic_params(request=True)
    assert params == ac.convert(MESSAGES, to="anthropic")
    # to_format gives the message list for every format, Anthropic's included.
    listed = c.to_format("anthropic")
    assert isinstance(listed, list) and listed[0] == {"role": "system", "content": "be brief"}
    assert listed[1:] == params["messages"]


def test_pin_takes_pinned_by_keyword() -> None:
    c = conv()
    c.pin(4)
    c.pin(5, pinned=True)
    assert c.pinned == [4, 5]
    c.pin(5, pinned=False)
    assert c.pinned == [4]
    _deprecated(lambda: c.pin(4, False))
    assert c.pinned == []
    _deprecated(lambda: c.pin(1, True))
    assert c.pinned == [1]
    with pytest.raises(TypeError):
        c.pin(1, True, False)  # type: ignore[call-overload]
    with pytest.raises(TypeError):
        c.pin(1, None)  # type: ignore[call-overload]  # not a bool, as before
    assert c.pinned == [1]


@pytest.mark.parametrize(
    ("old", "new", "args", "kwargs"),
    [
        ("recent_start", "_recent_start", (), {"keep_messages": 2}),
        ("cut_points", "_cut_points", (), {}),
        ("export_each", "_export_each", (), {}),
        ("latest_request", "_latest_request", (1,), {}),
        ("summaries", "_summaries", (0, 4), {}),
    ],
)
def test_conversation_internals_have_underscore_names(
    old: str, new: str, args: tuple[Any, ...], kwargs: dict[str, Any]
) -> None:
    c = conv()
    expected = getattr(c, new)(*args, **kwargs)
    assert _deprecated(lambda: getattr(c, old)(*args, **kwargs)) == expected
    assert new in dir(c)


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


def test_every_renamed_keyword_is_walked() -> None:
    """Each keyword rename registered in ``_deprecation.RENAMED`` has a test above."""
    assert _deprecation.RENAMED == {
        "read_page": {"limit": "lines"},
        "page_text": {"limit": "lines"},
        "FileReader.read": {"limit": "lines"},
        "FileReader.answer": {"limit": "lines"},
        "Recall.page": {"limit": "lines"},
        "Recall.recall": {"limit": "lines"},
        "ResultStore.recall": {"limit": "lines"},
    }


# -- presets ----------------------------------------------------------------------------------


def test_one_preset_per_harness_carries_budgets_and_compaction() -> None:
    assert set(ac.PRESETS) == set(compaction.PRESETS) >= set(budgets.PRESETS)
    for name, preset in ac.PRESETS.items():
        assert isinstance(preset, ac.Preset) and preset.name == name
        assert preset.compaction is compaction.PRESETS[name]
        assert preset.budgets is budgets.PRESETS.get(name)
        if preset.budgets is not None:
            assert preset.result_policy(8_000) == preset.budgets.result_policy(8_000)
            assert preset.file_reader().limits == preset.budgets.file_reader().limits
        assert preset.compactor(environ={}).policy == preset.compaction
        assert compaction.resolve_policy(preset) is preset.compaction
    goose = ac.PRESETS["goose"]
    assert goose.budgets is None and goose.result_policy(8_000) == ac.ToolResultPolicy(context_window=8_000)


def test_old_preset_tables_keep_working() -> None:
    """``agentcontext.STRATEGIES`` is a deprecated view of the compaction halves; a budget field read
    on ``agentcontext.PRESETS[name]`` (which held budget presets) answers with a warning."""
    policy = _deprecated(lambda: ac.STRATEGIES["codex"])
    assert policy is ac.PRESETS["codex"].compaction
    assert _deprecated(lambda: sorted(ac.STRATEGIES)) == sorted(compaction.PRESETS)
    claude = ac.PRESETS["claude-code"]
    assert claude.budgets is not None
    for field in dataclasses.fields(ac.BudgetPreset):
        if field.name != "name":
            assert _deprecated(lambda f=field: getattr(claude, f.name)) == getattr(claude.budgets, field.name)
    changed = _deprecated(lambda: claude.with_(result_chars=1_000))
    assert changed == dataclasses.replace(claude.budgets, result_chars=1_000)
    with pytest.raises(AttributeError):
        _ = ac.PRESETS["goose"].read_max_lines
    with pytest.raises(AttributeError):
        _ = claude.no_such_field
