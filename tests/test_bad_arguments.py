"""Every bad argument is a typed error (issue 12, section 6).

The walk: every numeric parameter of every public function and method (the compiled core's, read
from ``_core.pyi``; the Python half's, from their signatures) is called with bad values — negative,
zero where a positive count is needed, huge (``10**30``), and of the wrong type (``None``, a
string, a float, NaN). Each must raise an :class:`~agentcontext.errors.AgentContextError` whose
message names the parameter; a wrong type is an :class:`~agentcontext.errors.ArgumentTypeError`,
which is also a ``TypeError``. Plain ``TypeError`` is left only to Python's call protocol itself
(a missing or extra argument), which is not tested here.

``test_every_numeric_parameter_is_walked`` fails when a public callable gains a numeric parameter
that ``CASES`` does not walk, so the walk stays complete.

Then specific cases: wrong containers, messages that lead with the reason, deep nesting (Python
objects and files), integers out of range in files, providers without credentials, and the CLI
(exit 2, one line on stderr, never a traceback).
"""

from __future__ import annotations

import ast
import dataclasses
import inspect
import json
import math
import os
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

import agentcontext as ac
from agentcontext import PRESETS, errors, importers
from agentcontext._core import check_memory_record, search_log, search_messages
from agentcontext.compaction import CompactionPolicy, Compactor, Harness
from agentcontext.compaction.harnesses.alyx import Alyx
from agentcontext.compaction.harnesses.claude_code import ClaudeCode
from agentcontext.compaction.harnesses.codex import Codex
from agentcontext.compaction.harnesses.letta import Letta
from agentcontext.compaction.harnesses.openclaw import OpenClaw
from agentcontext.memory import conversation_search
from agentcontext.sessions import SnapshotStore

from .llm_server import LLMServer

BUDGET_PRESETS = {name: preset.budgets for name, preset in PRESETS.items() if preset.budgets is not None}

MESSAGES = [
    {"role": "user", "content": "read the config"},
    {
        "role": "assistant",
        "content": None,
        "tool_calls": [{"id": "c1", "type": "function", "function": {"name": "read", "arguments": "{}"}}],
    },
    {"role": "tool", "tool_call_id": "c1", "content": "x = 1\n" * 50},
    {"role": "assistant", "content": "done"},
]


def conv() -> ac.Conversation:
    return ac.Conversation(MESSAGES)


@pytest.fixture(scope="module")
def text_file(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("files") / "a.txt"
    path.write_text("line\n" * 20, encoding="utf-8")
    return path


def chat_provider(**kw: Any) -> ac.OpenAIChatProvider:
    """A provider that is never called (the checks come first); nothing listens on port 9."""
    return ac.OpenAIChatProvider("gpt-test", api_key="k", base_url="http://127.0.0.1:9/v1", context_window=50_000, **kw)


# -- the walk --------------------------------------------------------------------------------

#: kind -> the bad values of that kind. Counts are ints from 0; "positive" from 1; "optional"
#: counts may be None; "share" is a number in [0, 1]; "scale" a finite number over 0; "number" a
#: finite number from 0.
BAD: dict[str, list[Any]] = {
    "count": [-1, 10**30, None, "3", 2.5, float("nan"), True],
    "positive": [0, -1, 10**30, None, "3", 2.5],
    "optional": [-1, 10**30, "3", 2.5, float("nan")],
    "optional_positive": [0, -1, 10**30, "3", 2.5],
    "share": [-0.5, 1.5, float("nan"), None, "0.5"],
    "optional_share": [0, -0.5, 1.5, float("nan"), "0.5", True],
    "seconds": [-1.0, float("nan"), float("inf"), "3", True],
    "scale": [0, -1.0, float("nan"), float("inf"), None, "1"],
    "number": [-1.0, float("nan"), float("inf"), None, "1", True],
    "budget": [0, -1, 10**30, "abc", "0%", "150%", float("nan"), True],
    # A session's name (any str) or index (an int; -1 is the last): only other types are wrong.
    "session": [10**30, 2.5, float("nan"), True, b"x"],
}

Call = Callable[[Any, Any], Any]  # (value, text_file) -> result


def policy_field(name: str) -> Call:
    return lambda v, _: CompactionPolicy(**{name: v})


def harness_field(harness: type[Harness], name: str) -> Call:
    return lambda v, _: harness(**{name: v})


def tool_policy_field(name: str) -> Call:
    return lambda v, _: ac.ToolResultPolicy(**{name: v})


def preset_field(name: str) -> Call:
    return lambda v, _: dataclasses.replace(BUDGET_PRESETS["claude-code"], **{name: v})


def reader_field(name: str) -> Call:
    return lambda v, _: ac.FileReader(**{name: v})


#: "Qualified.name:parameter" -> (kind, call with the bad value).
CASES: dict[str, tuple[str, Call]] = {
    # the compiled core
    "truncate:max_size": ("count", lambda v, _: ac.truncate("abc" * 100, v)),
    "truncate:head_share": ("share", lambda v, _: ac.truncate("abc" * 100, 50, head_share=v)),
    "json_preview:max_chars": ("count", lambda v, _: ac.json_preview('{"a": 1}', max_chars=v)),
    "read_page:lines": ("optional", lambda v, f: ac.read_page(f, 1, v)),
    "read_page:max_lines": ("positive", lambda v, f: ac.read_page(f, max_lines=v)),
    "read_page:max_bytes": ("positive", lambda v, f: ac.read_page(f, max_bytes=v)),
    "read_page:line_max_chars": ("positive", lambda v, f: ac.read_page(f, line_max_chars=v)),
    "read_page:byte_gate": ("optional", lambda v, f: ac.read_page(f, byte_gate=v)),
    "read_page:token_gate": ("optional", lambda v, f: ac.read_page(f, token_gate=v)),
    "page_text:offset": ("optional", lambda v, _: ac.page_text("a\nb", v)),
    "page_text:lines": ("optional", lambda v, _: ac.page_text("a\nb", 1, v)),
    "page_text:max_lines": ("positive", lambda v, _: ac.page_text("a\nb", max_lines=v)),
    "page_text:max_bytes": ("positive", lambda v, _: ac.page_text("a\nb", max_bytes=v)),
    "page_text:line_max_chars": ("positive", lambda v, _: ac.page_text("a\nb", line_max_chars=v)),
    "page_text:token_gate": ("optional", lambda v, _: ac.page_text("a\nb", token_gate=v)),
    "trim_messages:max_tokens": ("count", lambda v, _: ac.trim_messages(MESSAGES, v)),
    **{
        f"trim_messages:{p}": ("count", lambda v, _, p=p: ac.trim_messages(MESSAGES, 1000, **{p: v}))
        for p in ("recent_messages", "recent_tools", "clear_at_least", "reserved_output", "safety_margin")
    },
    "Conversation.protected:recent_messages": ("count", lambda v, _: conv().protected(recent_messages=v)),
    "Conversation.protected:recent_tools": ("count", lambda v, _: conv().protected(recent_tools=v)),
    "Conversation.pin:index": ("count", lambda v, _: conv().pin(v)),
    **{
        f"Conversation.clear_tool_results:{p}": ("count", lambda v, _, p=p: conv().clear_tool_results(**{p: v}))
        for p in ("recent_messages", "recent_tools", "clear_at_least")
    },
    **{
        f"Conversation.clearable_tokens:{p}": ("count", lambda v, _, p=p: conv().clearable_tokens(**{p: v}))
        for p in ("recent_messages", "recent_tools")
    },
    "Conversation.dedup_reads:recent_messages": ("count", lambda v, _: conv().dedup_reads(["read"], recent_messages=v)),
    "Conversation.recent_suffix:max_tokens": ("count", lambda v, _: conv().recent_suffix(v)),
    "Conversation.recent_suffix:reserved_output": ("count", lambda v, _: conv().recent_suffix(100, reserved_output=v)),
    "Conversation.recent_suffix:safety_margin": ("count", lambda v, _: conv().recent_suffix(100, safety_margin=v)),
    "Conversation.split:parts": ("positive", lambda v, _: conv().split(v)),
    "Conversation.slice:start": ("count", lambda v, _: conv().slice(v)),
    "Conversation.slice:stop": ("optional", lambda v, _: conv().slice(0, v)),
    "Conversation.truncate_tool_results:max_chars": ("count", lambda v, _: conv().truncate_tool_results(v)),
    "Conversation.truncate_tool_results:head_share": (
        "share",
        lambda v, _: conv().truncate_tool_results(50, head_share=v),
    ),
    "Conversation.tool_results_over:max_chars": ("count", lambda v, _: conv().tool_results_over(v)),
    "Conversation._raw_start_at_least:keep_messages": (
        "count",
        lambda v, _: conv()._raw_start_at_least(keep_messages=v),
    ),
    "Conversation._raw_start_at_least:keep_tokens": (
        "count",
        lambda v, _: conv()._raw_start_at_least(keep_messages=1, keep_tokens=v),
    ),
    "Conversation.class_tokens:start": ("count", lambda v, _: conv().class_tokens(v)),
    "Conversation.replace:start": ("count", lambda v, _: conv().replace(v, None, [])),
    "Conversation.replace:stop": ("optional", lambda v, _: conv().replace(0, v, [])),
    "page_chars:offset": ("positive", lambda v, _: ac._core.page_chars("a\nb", v)),
    "page_chars:lines": ("positive", lambda v, _: ac._core.page_chars("a\nb", 1, v)),
    "page_chars:char_offset": ("optional", lambda v, _: ac._core.page_chars("a\nb", char_offset=v)),
    "page_chars:max_chars": ("positive", lambda v, _: ac._core.page_chars("a\nb", max_chars=v)),
    "Budget:max_tokens": ("count", lambda v, _: ac.Budget(v)),
    "Budget.fit_dicts:beside": ("count", lambda v, _: ac.Budget(1000).fit_dicts([], beside=v)),
    **{
        f"Budget:{p}": ("count", lambda v, _, p=p: ac.Budget(1000, **{p: v}))
        for p in ("recent_messages", "recent_tools", "clear_at_least", "reserved_output", "safety_margin")
    },
    "Conversation._latest_request:start": ("count", lambda v, _: conv()._latest_request(v)),
    "Conversation._latest_request:stop": ("optional", lambda v, _: conv()._latest_request(0, v)),
    "Conversation.from_file:max_bytes": ("positive", lambda v, f: ac.Conversation.from_file(f, max_bytes=v)),
    "read_page:offset": ("optional", lambda v, f: ac.read_page(f, v)),
    "token_cache_clear:capacity": ("optional", lambda v, _: ac.token_cache_clear(capacity=v)),
    "ResultStore.recall:offset": ("positive", lambda v, f: stored(f).recall(STORED, v)),
    "ResultStore.recall:lines": ("positive", lambda v, f: stored(f).recall(STORED, 1, v)),
    "ResultStore.recall:char_offset": ("optional", lambda v, f: stored(f).recall(STORED, char_offset=v)),
    "ResultStore.recall:max_chars": ("positive", lambda v, f: stored(f).recall(STORED, max_chars=v)),
    "Recall.recall:offset": ("positive", lambda v, f: ac.Recall(stored(f)).recall(STORED, v)),
    "Recall.recall:lines": ("positive", lambda v, f: ac.Recall(stored(f)).recall(STORED, 1, v)),
    "Recall.recall:char_offset": ("optional", lambda v, f: ac.Recall(stored(f)).recall(STORED, char_offset=v)),
    "Recall.recall:max_chars": ("positive", lambda v, f: ac.Recall(stored(f)).recall(STORED, max_chars=v)),
    "Recall.page:offset": ("positive", lambda v, f: ac.Recall(stored(f)).page(STORED, v)),
    "Recall.page:lines": ("positive", lambda v, f: ac.Recall(stored(f)).page(STORED, 1, v)),
    "Recall.page:char_offset": ("optional", lambda v, f: ac.Recall(stored(f)).page(STORED, char_offset=v)),
    "Recall.page:max_chars": ("positive", lambda v, f: ac.Recall(stored(f)).page(STORED, max_chars=v)),
    "CompactionPolicy.with_overhead:tokens": ("count", lambda v, _: CompactionPolicy().with_overhead(v)),
    "Compactor.compact:overhead": ("count", lambda v, _: Compactor().compact(conv(), overhead=v)),
    "Compactor.maybe_compact:overhead": ("count", lambda v, _: Compactor().maybe_compact(conv(), overhead=v)),
    "Compactor:flush_max_output_tokens": ("positive", lambda v, _: Compactor(flush_max_output_tokens=v)),
    "MemoryIndex.render:max_lines": ("positive", lambda v, f: memory(f).index.render(max_lines=v)),
    "MemoryIndex.render:max_bytes": ("positive", lambda v, f: memory(f).index.render(max_bytes=v)),
    "MemoryIndex.search:limit": ("positive", lambda v, f: memory(f).index.search("x", limit=v)),
    "MemoryIndex.search:snippet_chars": ("positive", lambda v, f: memory(f).index.search("x", snippet_chars=v)),
    "MemoryStore.render_index:max_lines": ("positive", lambda v, f: memory(f).render_index(max_lines=v)),
    "MemoryStore.render_index:max_bytes": ("positive", lambda v, f: memory(f).render_index(max_bytes=v)),
    "MemoryStore.search:limit": ("positive", lambda v, f: memory(f).search("x", limit=v)),
    "MemoryStore:max_record_bytes": (
        "positive",
        lambda v, f: ac.MemoryStore(f.parent, root=f.parent / "m", max_record_bytes=v),
    ),
    "conversation_search:limit": ("positive", lambda v, f: conversation_search(log_file(f), "x", limit=v)),
    "conversation_search:snippet_chars": (
        "positive",
        lambda v, f: conversation_search(log_file(f), "x", snippet_chars=v),
    ),
    "conversation_search:snippets": ("positive", lambda v, f: conversation_search(log_file(f), "x", snippets=v)),
    "search_log:limit": ("positive", lambda v, f: search_log(log_file(f), "x", limit=v)),
    "search_log:snippet_chars": ("positive", lambda v, f: search_log(log_file(f), "x", snippet_chars=v)),
    "search_log:snippets": ("positive", lambda v, f: search_log(log_file(f), "x", snippets=v)),
    "search_log:max_bytes": ("positive", lambda v, f: search_log(log_file(f), "x", max_bytes=v)),
    "conversation_search:session": ("session", lambda v, f: conversation_search(log_file(f), "x", session=v)),
    "conversation_search:max_bytes": ("positive", lambda v, f: conversation_search(log_file(f), "x", max_bytes=v)),
    "search_messages:limit": ("positive", lambda v, _: search_messages(conv(), "x", limit=v)),
    "search_messages:snippet_chars": ("positive", lambda v, _: search_messages(conv(), "x", snippet_chars=v)),
    "search_messages:snippets": ("positive", lambda v, _: search_messages(conv(), "x", snippets=v)),
    "SessionLog:max_bytes": ("positive", lambda v, f: ac.SessionLog(f.parent / "bounded.jsonl", max_bytes=v)),
    "Conversation.handoff:start": ("count", lambda v, _: conv().handoff(v)),
    "Conversation.handoff:stop": ("optional", lambda v, _: conv().handoff(0, v)),
    "HandoffScan.__new__:start": ("count", lambda v, _: ac._core.HandoffScan(conv(), v)),
    "HandoffScan.handoff:stop": ("optional", lambda v, _: ac._core.HandoffScan(conv(), 0).handoff(v)),
    "HandoffScan.ledger_handoff:stop": ("optional", lambda v, _: ac._core.HandoffScan(conv(), 0).ledger_handoff(v)),
    "HandoffScan._facts:stop": ("optional", lambda v, _: ac._core.HandoffScan(conv(), 0)._facts(v)),
    "HandoffScan._facts_ahead:stop": ("optional", lambda v, _: ac._core.HandoffScan(conv(), 0)._facts_ahead(v)),
    "Conversation._summaries:start": ("count", lambda v, _: conv()._summaries(v)),
    "Conversation._summaries:stop": ("optional", lambda v, _: conv()._summaries(0, v)),
    # the Python half
    **{
        f"CompactionPolicy:{f.name}": ("count", policy_field(f.name))
        for f in dataclasses.fields(CompactionPolicy)
        if f.type == "int"
    },
    "CompactionPolicy:result_max_chars": ("optional", policy_field("result_max_chars")),
    **{
        f"{h.__name__}:{f.name}": ("count", harness_field(h, f.name))
        for h in (Alyx, ClaudeCode, Codex, OpenClaw)
        for f in dataclasses.fields(h)
        if f.type == "int"
    },
    "OpenClaw:soft_trim_chars": ("optional", harness_field(OpenClaw, "soft_trim_chars")),
    "OpenClaw:max_history_share": ("optional_share", harness_field(OpenClaw, "max_history_share")),
    "Letta:sliding_window": ("optional_share", harness_field(Letta, "sliding_window")),
    "Letta:memory_warning": ("optional_share", harness_field(Letta, "memory_warning")),
    "Compactor.compact:idle_seconds": ("seconds", lambda v, _: Compactor().compact(conv(), idle_seconds=v)),
    "Compactor.maybe_compact:idle_seconds": (
        "seconds",
        lambda v, _: Compactor("openclaw").maybe_compact(conv(), idle_seconds=v),
    ),
    "Alyx:result_max_tokens": ("optional_positive", harness_field(Alyx, "result_max_tokens")),
    "CompactionPolicy:trigger": ("scale", policy_field("trigger")),
    "CompactionPolicy:target": ("scale", policy_field("target")),
    "CompactionPolicy:remaining_turns": ("number", policy_field("remaining_turns")),
    "Budget.for_model:fraction": ("share", lambda v, _: ac.Budget.for_model("gpt-4.1", fraction=v)),
    "CompactionPolicy.for_budget:budget": ("positive", lambda v, _: CompactionPolicy().for_budget(v)),
    "CompactionPolicy.scaled:factor": ("scale", lambda v, _: CompactionPolicy().scaled(v)),
    "Compactor.compact:budget": ("budget", lambda v, _: Compactor().compact(conv(), budget=v)),
    "context_view:context_window": ("optional_positive", lambda v, _: ac.context_view(conv(), context_window=v)),
    "context_view:max_output_tokens": ("optional_positive", lambda v, _: ac.context_view(conv(), max_output_tokens=v)),
    "Compactor.compact:scale": ("scale", lambda v, _: Compactor().compact(conv(), scale=v)),
    "Compactor.maybe_compact:scale": ("scale", lambda v, _: Compactor().maybe_compact(conv(), scale=v)),
    "Compactor.recompile:budget": ("budget", lambda v, _: Compactor().recompile(conv(), v)),
    **{
        f"ToolResultPolicy:{p}": (kind, tool_policy_field(p))
        for p, kind in (
            ("context_window", "count"),
            ("max_chars", "optional"),
            ("persist_over_chars", "optional"),
            ("preview_chars", "count"),
            ("message_limit_chars", "optional"),
            ("head_share", "share"),
        )
    },
    **{
        f"BudgetPreset:{f.name}": (
            {"int": "count", "int | None": "optional", "float": "share"}[str(f.type)],
            preset_field(f.name),
        )
        for f in dataclasses.fields(ac.BudgetPreset)
        if f.type in ("int", "int | None", "float")
    },
    "BudgetPreset.result_policy:context_window": (
        "count",
        lambda v, _: BUDGET_PRESETS["claude-code"].result_policy(context_window=v),
    ),
    "Preset.result_policy:context_window": (
        "count",
        lambda v, _: ac.PRESETS["claude-code"].result_policy(context_window=v),
    ),
    "Calibration:prior": ("scale", lambda v, _: ac.Calibration(prior=v)),
    "Calibration:decay": ("scale", lambda v, _: ac.Calibration(decay=v)),
    "Calibration.observe:reported": ("count", lambda v, _: ac.Calibration().observe("m", conv(), v)),
    "FileReader:max_lines": ("positive", reader_field("max_lines")),
    "FileReader:max_bytes": ("positive", reader_field("max_bytes")),
    "FileReader:line_max_chars": ("positive", reader_field("line_max_chars")),
    "FileReader:byte_gate": ("optional", reader_field("byte_gate")),
    "FileReader:token_gate": ("optional", reader_field("token_gate")),
    "FileReader.read:offset": ("optional", lambda v, f: ac.FileReader().read(f, v)),
    "FileReader.read:lines": ("optional", lambda v, f: ac.FileReader().read(f, 1, v)),
    "FileReader.answer:offset": ("optional", lambda v, f: ac.FileReader().answer(f, v)),
    "FileReader.answer:lines": ("optional", lambda v, f: ac.FileReader().answer(f, 1, v)),
    "OpenFiles:context_window": ("count", lambda v, _: ac.OpenFiles(v)),
    "OpenFiles:max_open": ("optional_positive", lambda v, _: ac.OpenFiles(max_open=v)),
    "OpenFiles:per_file_chars": ("optional", lambda v, _: ac.OpenFiles(per_file_chars=v)),
    "fit_project_files:per_file_chars": ("count", lambda v, _: ac.fit_project_files({"A": "a"}, per_file_chars=v)),
    "fit_project_files:total_chars": ("count", lambda v, _: ac.fit_project_files({"A": "a"}, total_chars=v)),
    "fit_project_files:head_share": ("share", lambda v, _: ac.fit_project_files({"A": "a"}, head_share=v)),
    "LLMSummarizer:max_output_tokens": (
        "optional_positive",
        lambda v, _: ac.LLMSummarizer(chat_provider(), max_output_tokens=v),
    ),
    "LLMSummarizer:max_events": ("optional", lambda v, _: ac.LLMSummarizer(chat_provider(), max_events=v)),
    "Provider:context_window": ("optional_positive", lambda v, _: chat_provider_window(v)),
    "AnthropicProvider:context_window": (
        "optional_positive",
        lambda v, _: ac.AnthropicProvider("claude-test", api_key="k", base_url="http://127.0.0.1:9", context_window=v),
    ),
    "OpenAIChatProvider:context_window": ("optional_positive", lambda v, _: chat_provider_window(v)),
    "OpenAIResponsesProvider:context_window": (
        "optional_positive",
        lambda v, _: ac.OpenAIResponsesProvider(
            "gpt-test", api_key="k", base_url="http://127.0.0.1:9/v1", context_window=v
        ),
    ),
    "Provider.complete:max_output_tokens": (
        "positive",
        lambda v, _: chat_provider().complete(conv(), max_output_tokens=v),
    ),
    "Session:max_output_tokens": ("positive", lambda v, _: ac.Session(chat_provider(), max_output_tokens=v)),
    "Session.run:max_steps": ("positive", lambda v, _: ac.Session(chat_provider()).run("hi", max_steps=v)),
    "SessionLog.working_set:upto_compaction": ("optional", lambda v, f: session_log(f).working_set(upto_compaction=v)),
    "SessionLog.append:start": ("count", lambda v, f: session_log(f).append(conv(), v)),
}


def chat_provider_window(v: Any) -> Any:
    return ac.OpenAIChatProvider("gpt-test", api_key="k", base_url="http://127.0.0.1:9/v1", context_window=v)


#: What ``stored`` keeps: a result to recall with bad page arguments.
STORED_TEXT = "hello\n" * 10
STORED = ac.ResultStore.id_for(STORED_TEXT)


def stored(text_file: Path) -> ac.ResultStore:
    store = ac.ResultStore(text_file.parent / "store")
    store.put(STORED_TEXT)
    return store


def memory(text_file: Path) -> ac.MemoryStore:
    store = ac.MemoryStore(text_file.parent, root=text_file.parent / "memory")
    store.write("a-record", type="user", description="x marks it", body="x")
    return store


def log_file(text_file: Path) -> Path:
    path = text_file.parent / "searched.jsonl"
    if not path.exists():
        ac.SessionLog(path).append(conv())
    return path


def session_log(text_file: Path) -> ac.SessionLog:
    path = text_file.parent / "session.jsonl"
    path.unlink(missing_ok=True)
    return ac.SessionLog(path)


#: Records the library builds and hands back (results, events, requests to a summarizer): their
#: fields are filled by the library, not passed by a caller, so they are not walked.
NOT_ARGUMENTS = {"CompactionResult", "ContextView", "StageEvent", "SummaryRequest"}


def numeric_parameters() -> Iterator[str]:
    """``Qualified.name:parameter`` of every public numeric parameter."""
    numeric = {"int", "float"}

    def is_numeric(annotation: str) -> bool:
        return bool(numeric & {part.strip() for part in annotation.split("|")})

    stub = Path(ac.__file__).with_name("_core.pyi")
    for node in ast.parse(stub.read_text(encoding="utf-8")).body:
        functions = [("", node)] if isinstance(node, ast.FunctionDef) else []
        if isinstance(node, ast.ClassDef) and not node.name.startswith("_"):  # (internal classes: not public)
            functions = [(f"{node.name}.", f) for f in node.body if isinstance(f, ast.FunctionDef)]
        for owner, fn in functions:
            if fn.name.startswith("_") and fn.name != "__new__":
                continue
            args = fn.args.posonlyargs + fn.args.args + fn.args.kwonlyargs
            for a in args:
                if a.annotation is not None and is_numeric(ast.unparse(a.annotation)):
                    yield f"{owner}{fn.name}:{a.arg}"
    for name in ac.__all__:
        obj = getattr(ac, name)
        module = getattr(obj, "__module__", "")
        if module == "agentcontext._core" or name in NOT_ARGUMENTS:
            continue
        if inspect.isclass(obj) and issubclass(obj, BaseException):
            continue
        targets: list[tuple[str, Any]] = []
        if inspect.isfunction(obj):
            targets.append((name, obj))
        elif inspect.isclass(obj):
            targets.append((name, obj))
            for attr, member in vars(obj).items():
                member = member.__func__ if isinstance(member, staticmethod | classmethod) else member
                if not attr.startswith("_") and inspect.isfunction(member):
                    targets.append((f"{name}.{attr}", member))
        for qualified, fn in targets:
            for p in inspect.signature(fn).parameters.values():
                if isinstance(p.annotation, str) and is_numeric(p.annotation):
                    yield f"{qualified}:{p.name}"


def test_every_numeric_parameter_is_walked() -> None:
    found = set(numeric_parameters())
    assert "truncate:max_size" in found and "Compactor.compact:budget" in found  # the discovery works
    missing = sorted(found - set(CASES))
    assert not missing, f"numeric parameters the walk does not cover: {missing}"


WALK = [
    pytest.param(key, value, id=f"{key}={value!r}") for key, (kind, _) in sorted(CASES.items()) for value in BAD[kind]
]


@pytest.mark.parametrize(("key", "value"), WALK)
def test_bad_value_is_a_typed_error_naming_the_argument(key: str, value: Any, text_file: Path) -> None:
    _, call = CASES[key]
    parameter = key.split(":")[1]
    with pytest.raises(errors.AgentContextError) as info:
        call(value, text_file)
    assert parameter in str(info.value), f"{key}={value!r}: {type(info.value).__name__}: {info.value}"
    wrong_type = value is None or isinstance(value, str | bool)
    if wrong_type and not key.endswith(":budget"):
        assert isinstance(info.value, errors.ArgumentTypeError) and isinstance(info.value, TypeError)


# The recall and paging cases issue 12 names: recall ids of the wrong type or shape, and `in`.
ISSUE_CASES = [
    pytest.param("read_page:offset", -1, id="read_page-offset=-1"),
    pytest.param("ResultStore.recall:offset", -5, id="recall-offset=-5"),
    pytest.param("ResultStore.recall:lines", -5, id="recall-lines=-5"),
    pytest.param("ResultStore.recall:id", None, id="recall(None)"),
    pytest.param("ResultStore.recall:id", "r-" + "a" * 5000, id="recall-5000-char-id"),
    pytest.param("ResultStore.__contains__:id", "r-abc ", id="contains-r-abc-space"),
]


@pytest.mark.parametrize(("key", "value"), ISSUE_CASES)
def test_recall_and_paging_cases_of_the_issue(key: str, value: Any, tmp_path: Path, text_file: Path) -> None:
    store = ac.ResultStore(tmp_path / "store")
    stored = store.put("hello\n" * 10)
    if key == "read_page:offset":
        with pytest.raises(errors.AgentContextError, match="offset"):
            ac.read_page(text_file, value)
    elif key == "ResultStore.__contains__:id":
        assert (value in store) is False
    elif key.endswith(":id"):
        with pytest.raises(errors.AgentContextError):
            store.recall(value)
    else:
        parameter = key.split(":")[1]
        with pytest.raises(errors.AgentContextError, match=parameter):
            store.recall(stored, **{parameter: value})


# -- specific cases --------------------------------------------------------------------------


@pytest.mark.parametrize("value", [5, "not a list", {"role": "user", "content": "x"}, 2.5])
def test_messages_of_the_wrong_type(value: Any) -> None:
    with pytest.raises(errors.ArgumentTypeError, match=r"^messages must be a list of messages"):
        ac.Conversation(value)
    with pytest.raises(errors.ArgumentTypeError, match=r"^messages must be a list"):
        ac.trim_messages(value, 100)


@pytest.mark.parametrize(
    ("call", "name"),
    [
        (lambda: ac.count_tokens(None), "text"),  # type: ignore[arg-type]
        (lambda: ac.count_tokens("x", encoding=None), "encoding"),  # type: ignore[arg-type]
        (lambda: ac.truncate(b"bytes", 5), "text"),  # type: ignore[arg-type]
        (lambda: ac.truncate("abc", 5, unit=3), "unit"),  # type: ignore[arg-type]
        (lambda: ac.estimate_tokens("x", target=1), "target"),  # type: ignore[arg-type]
        (lambda: ac.convert(MESSAGES, to=None), "to"),  # type: ignore[call-overload]
        (lambda: ac.count_tokens_batch(["a", 3]), "texts[1]"),  # type: ignore[list-item]
        (lambda: conv().truncate_tool_results(10, per_tool={"read": -1}), "per_tool['read']"),
        (lambda: conv().truncate_tool_results(10, per_tool=[1]), "per_tool"),  # type: ignore[arg-type]
        (lambda: ac.ToolResultPolicy(per_tool={"read": "x"}), "per_tool['read']"),
        (lambda: Compactor().compact(MESSAGES), "conv"),  # type: ignore[arg-type]
        (lambda: ac.read_page(None), "path"),  # type: ignore[arg-type]
        (lambda: ac.read_page(3), "path"),  # type: ignore[arg-type]
        (lambda: ac.Conversation.from_file(None), "path"),  # type: ignore[arg-type]
    ],
)
def test_wrong_types_name_the_argument(call: Callable[[], Any], name: str) -> None:
    with pytest.raises(errors.OptionError) as info:
        call()
    assert str(info.value).startswith(name), str(info.value)


def test_indexing_with_bad_values() -> None:
    c = conv()
    assert c[-1] == MESSAGES[-1]
    for huge in (10**30, -(10**30)):
        with pytest.raises(errors.MessageIndexError, match=r"^message index -?10{30} out of range"):
            c[huge]
    for wrong in ("a", None, 1.0):
        with pytest.raises(errors.ArgumentTypeError, match=r"^index must be an integer"):
            c[wrong]  # type: ignore[index]


def test_split_zero_is_refused() -> None:
    with pytest.raises(errors.OptionError, match="parts must be a positive integer, got 0"):
        conv().split(0)


def test_budget_as_a_share_like_the_cli() -> None:
    c = conv()
    result = Compactor().compact(c, budget="25%")
    assert result.budget == max(1, int(c.tokens * 25 / 100))
    assert Compactor().compact(c, budget="1,000").budget == 1000
    for bad in (0, -1):
        with pytest.raises(errors.OptionError, match="budget must be a positive number"):
            Compactor().compact(c, budget=bad)


def test_plain_value_errors_are_option_errors() -> None:
    with pytest.raises(errors.OptionError, match=r"^head_share must be between 0 and 1"):
        ac.truncate("x" * 100, 10, head_share=2)
    with pytest.raises(errors.OptionError, match=r"^max_lines must be a positive integer"):
        ac.page_text("a", max_lines=0)
    with pytest.raises(errors.OptionError, match=r'^to="auto"'):
        ac.convert(MESSAGES, to="auto")  # type: ignore[call-overload]
    with pytest.raises(errors.OptionError, match=r"^parts is empty"):
        ac.Conversation.concat([])
    other = ac.Conversation(MESSAGES, encoding="cl100k_base")
    with pytest.raises(errors.OptionError, match=r"^parts\[1\] is openai with cl100k_base"):
        ac.Conversation.concat([conv(), other])


def test_trim_says_what_it_compared() -> None:
    with pytest.raises(errors.BudgetError) as info:
        ac.trim_messages(MESSAGES, 0)
    message = str(info.value)
    assert "truncation marker" not in message
    assert "the last round" in message and "the system messages and reserved output (0)" in message
    assert f"({info.value.needed} tokens needed)" in message


def test_messages_lead_with_the_reason(tmp_path: Path) -> None:
    with pytest.raises(errors.InvalidMessageError, match=r"^message 0: NaN is not a JSON number \(at content\)$"):
        ac.Conversation([{"role": "user", "content": float("nan")}])
    path = tmp_path / "role.json"
    path.write_text(json.dumps([{"role": "wizard", "content": "x"}]), encoding="utf-8")
    with pytest.raises(errors.UnknownFormatError) as info:
        importers.load(path)
    message = str(info.value)
    assert message.startswith(f'{path}: message 0: unknown role "wizard"'), message
    assert message.index("unknown role") < message.index("tried:")


def nested(depth: int) -> Any:
    value: Any = "leaf"
    for _ in range(depth):
        value = {"a": [value]}
    return value


def test_deep_python_objects() -> None:
    with pytest.raises(errors.InvalidMessageError) as info:
        ac.Conversation([{"role": "user", "content": "x", "meta": nested(100_000)}])
    message = str(info.value)
    assert message.startswith("message 0: nested deeper than 128 levels (at meta.a[0].a"), message
    assert len(message) < 200


@pytest.mark.parametrize("suffix", [".json", ".jsonl"])
def test_deep_files(tmp_path: Path, suffix: str) -> None:
    deep = "[" * 100_000 + "]" * 100_000
    body = '{"role": "user", "content": "x", "meta": ' + deep + "}"
    path = tmp_path / f"deep{suffix}"
    path.write_text(f"[{body}]" if suffix == ".json" else body + "\n", encoding="utf-8")
    with pytest.raises(errors.TranscriptError, match=r"line 1"):
        ac.Conversation.from_file(path)
    with pytest.raises(errors.TranscriptError, match=r"line 1: JSON nested 100,00[12] levels deep"):
        importers.load(path)


def test_huge_integers_are_refused_by_files_and_objects_alike(tmp_path: Path) -> None:
    with pytest.raises(errors.InvalidMessageError, match=r"integer 10{30} is out of the 64-bit range"):
        ac.Conversation([{"role": "user", "content": "x", "id": 10**30}])
    path = tmp_path / "big.json"
    path.write_text('[{"role": "user", "content": "x"},\n {"role": "user", "content": "y", "id": 1' + "0" * 30 + "}]")
    with pytest.raises(errors.TranscriptError, match=r"line 2: integer 10{30} is out of the 64-bit range") as info:
        ac.Conversation.from_file(path)
    assert info.value.line == 2
    # What fits in 64 bits, floats, and digits inside strings are read as before.
    ok = tmp_path / "ok.json"
    ok.write_text(
        '[{"role": "user", "content": "123456789012345678901234567890", "a": 18446744073709551615, '
        '"b": -9223372036854775808, "c": 1e30, "d": 1.0000000000000000000001}]'
    )
    (message,) = ac.Conversation.from_file(ok).to_openai()
    assert message["a"] == 2**64 - 1 and message["b"] == -(2**63) and message["c"] == 1e30


CREDENTIAL_VARIABLES = ("ANTHROPIC_API_KEY", "ANTHROPIC_AUTH_TOKEN", "OPENAI_API_KEY")


@pytest.mark.parametrize(
    ("make", "variable"),
    [
        (lambda url: ac.AnthropicProvider("claude-test", base_url=url, context_window=50_000), "ANTHROPIC_API_KEY"),
        (lambda url: ac.OpenAIChatProvider("gpt-test", base_url=url + "/v1", context_window=50_000), "OPENAI_API_KEY"),
        (
            lambda url: ac.OpenAIResponsesProvider("gpt-test", base_url=url + "/v1", context_window=50_000),
            "OPENAI_API_KEY",
        ),
    ],
    ids=["anthropic", "openai", "responses"],
)
def test_providers_without_credentials_fail_early_and_alike(
    make: Callable[[str], Any], variable: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    pytest.importorskip("anthropic")
    pytest.importorskip("openai")
    for name in CREDENTIAL_VARIABLES:
        monkeypatch.delenv(name, raising=False)
    with LLMServer() as server:
        with pytest.raises(errors.MissingCredentialsError, match=variable) as info:
            make(server.url)
        assert info.value.variable == variable
        assert isinstance(info.value, errors.OptionError)
        assert not server.requests
        monkeypatch.setenv(variable, "from-the-environment")
        provider = make(server.url)
        provider.close()


# -- the command line ------------------------------------------------------------------------


def run_cli(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    return subprocess.run(
        [sys.executable, "-m", "agentcontext", *args], capture_output=True, text=True, check=False, cwd=cwd, env=env
    )


def cli_cases(tmp_path: Path) -> dict[str, list[str]]:
    (tmp_path / "ok.json").write_text(json.dumps(MESSAGES), encoding="utf-8")
    deep = '[{"role": "user", "content": "x", "m": ' + "[" * 100_000 + "]" * 100_000 + "}]"
    (tmp_path / "deep.json").write_text(deep, encoding="utf-8")
    (tmp_path / "big.json").write_text('[{"role": "user", "content": "x", "n": 1' + "0" * 30 + "}]")
    return {
        "output in a missing folder": ["compact", "ok.json", "--budget", "50%", "-o", "/nonexistent/dir/x"],
        "output is a directory": ["compact", "ok.json", "--budget", "50%", "-o", str(tmp_path)],
        "output is /proc/version": ["compact", "ok.json", "--budget", "50%", "-o", "/proc/version"],
        "eval --csv into a directory": ["eval", "ok.json", "--budget", "50%", "--workers", "1", "--csv", str(tmp_path)],
        "deep json": ["inspect", "deep.json"],
        "huge integer": ["inspect", "big.json"],
        "negative budget": ["compact", "ok.json", "--budget", "-5"],
    }


CLI_CASES = [
    "output in a missing folder",
    "output is a directory",
    "output is /proc/version",
    "eval --csv into a directory",
    "deep json",
    "huge integer",
    "negative budget",
]


@pytest.mark.parametrize("case", CLI_CASES)
def test_cli_bad_input_is_one_line_and_exit_2(case: str, tmp_path: Path) -> None:
    if case == "output is /proc/version" and not Path("/proc/version").exists():
        pytest.skip("no /proc/version here")
    args = cli_cases(tmp_path)[case]
    proc = run_cli(*args, cwd=tmp_path)
    assert "Traceback" not in proc.stderr, proc.stderr[-2000:]
    assert proc.returncode == 2, (proc.returncode, proc.stderr)
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("agentcontext: error: "), proc.stderr
    if case.startswith("output"):
        assert not proc.stdout.strip(), "no report is printed when the output cannot be written"


def test_finite_helpers_accept_good_values() -> None:
    # The checks refuse only what is wrong: bounds are inclusive where the docs say so.
    assert ac.truncate("abc", 10**6, head_share=1).text == "abc"
    assert ac.truncate("abc", 3, head_share=0).text == "abc"
    assert conv().split(1) == [(0, 4)]
    assert CompactionPolicy(trigger=100_000, target=0.5).trigger == 100_000
    assert ac.Calibration(decay=1, prior=1).decay == 1
    assert not math.isnan(ac.ToolResultPolicy(head_share=0.25).head_share)
    assert ac.page_text("a\nb", 0).start_line == 1


@pytest.mark.parametrize(
    "call",
    [
        lambda t: ac.count_tokens(t),
        lambda t: ac.count_tokens(t, encoding="cl100k_base"),
        lambda t: ac.estimate_tokens(t),
        lambda t: ac.truncate(t, 10),
        lambda t: ac.important_tail(t),
    ],
    ids=["count_tokens", "count_tokens_cl100k", "estimate_tokens", "truncate", "important_tail"],
)
def test_a_lone_surrogate_is_a_typed_error_naming_the_text(call: Callable[[str], Any]) -> None:
    # It cannot be UTF-8; it was a bare UnicodeEncodeError.
    with pytest.raises(ac.errors.OptionError, match="text is not valid Unicode: it holds a lone surrogate"):
        call("a\ud800b")


def _log(tmp: Path) -> str:
    (tmp / "log.jsonl").write_text("")
    return str(tmp / "log.jsonl")


@pytest.mark.parametrize(
    ("call", "argument"),
    [
        (lambda s, tmp: ac.json_path(s, "$"), "text"),
        (lambda s, tmp: ac.json_path('{"a": 1}', f"$.{s}"), "path"),
        (lambda s, tmp: ac.truncate("x" * 100, 10, recall_id=s), "recall_id"),
        (lambda s, tmp: ac.truncate("x" * 100, 10, path=s), "path"),
        (lambda s, tmp: ac.Conversation([]).stats(encoding=s), "encoding"),
        (lambda s, tmp: ac.Conversation([]).clear_tool_results(exclude_tools=["ok", s]), "exclude_tools[1]"),
        (lambda s, tmp: ac.Conversation([]).clearable_tokens(exclude_tools=[s]), "exclude_tools[0]"),
        (lambda s, tmp: ac.Conversation([]).dedup_reads([s]), "read_only_tools[0]"),
        (lambda s, tmp: ac.MemoryIndex(tmp).get(s), "name"),
        (lambda s, tmp: ac.MemoryIndex(tmp).search(s), "query"),
        (lambda s, tmp: search_log(_log(tmp), s), "query"),
        (lambda s, tmp: check_memory_record(s, "x"), "file"),
        (lambda s, tmp: check_memory_record("a.md", s), "text"),
    ],
    ids=[
        "json_path_text",
        "json_path_path",
        "truncate_recall_id",
        "truncate_path",
        "stats_encoding",
        "clear_tool_results",
        "clearable_tokens",
        "dedup_reads",
        "memory_index_get",
        "memory_index_search",
        "search_log",
        "check_memory_record_file",
        "check_memory_record_text",
    ],
)
def test_a_lone_surrogate_in_any_text_argument_is_a_typed_error(
    call: Callable[[str, Path], Any], argument: str, tmp_path: Path
) -> None:
    # These took the str as pyo3 converts it: a bare UnicodeEncodeError, outside AgentContextError.
    with pytest.raises(ac.errors.OptionError) as info:
        call("a\ud800b", tmp_path)
    assert str(info.value).startswith(f"{argument} is not valid Unicode: it holds a lone surrogate"), info.value


def test_a_text_argument_of_the_wrong_type_is_an_argument_type_error() -> None:
    with pytest.raises(ac.errors.ArgumentTypeError, match="path must be a string, got int 3"):
        ac.json_path("{}", 3)  # type: ignore[arg-type]
    with pytest.raises(ac.errors.ArgumentTypeError, match="exclude_tools must be a list of strings, got str 'bash'"):
        ac.Conversation([]).clearable_tokens(exclude_tools="bash")  # type: ignore[arg-type]
    with pytest.raises(ac.errors.ArgumentTypeError, match=r"exclude_tools\[0\] must be a string, got int 1"):
        ac.Conversation([]).clearable_tokens(exclude_tools=[1])  # type: ignore[list-item]
    # What was accepted still is.
    assert ac.Conversation([]).clearable_tokens(exclude_tools=("a", "b")) == 0
    assert ac.Conversation([]).stats(encoding=None)["tokens"] == 0
    assert ac.json_path('{"a": [1, 2]}', "$.a[1]") == "2"


@pytest.mark.parametrize(
    ("call", "argument"),
    [
        (lambda p: ac.SessionLog(p), "path"),
        (lambda p: importers.load(p), "path"),
        (lambda p: ac.ResultStore(p), "directory"),
        (lambda p: ac.MemoryStore(directory=p), "directory"),
        (lambda p: ac.MemoryStore(p), "project_root"),
        (lambda p: ac.MemoryStore(Path("/tmp"), root=p), "root"),
        (lambda p: SnapshotStore(p), "directory"),
        (lambda p: ac.MemoryIndex(p), "directory"),
        (lambda p: ac.read_page(p), "path"),
        (lambda p: ac.Conversation.from_file(p), "path"),
    ],
    ids=[
        "SessionLog",
        "importers.load",
        "ResultStore",
        "MemoryStore_directory",
        "MemoryStore_project_root",
        "MemoryStore_root",
        "SnapshotStore",
        "MemoryIndex",
        "read_page",
        "from_file",
    ],
)
@pytest.mark.parametrize("as_path", [False, True], ids=["str", "Path"])
def test_a_path_holding_a_lone_surrogate_is_a_typed_error(
    call: Callable[[Any], Any], argument: str, as_path: bool, tmp_path: Path
) -> None:
    # Every os call on such a name raised a bare UnicodeEncodeError; the core said of a Path that it
    # "must be a str or an os.PathLike".
    name = str(tmp_path / "a\ud800b")
    with pytest.raises(ac.errors.OptionError, match=f"^{argument} is not a valid file name: it holds a lone surrogate"):
        call(Path(name) if as_path else name)
    assert os.listdir(tmp_path) == []  # nothing was created


def test_compaction_system_and_instructions_holding_a_lone_surrogate_are_option_errors() -> None:
    # They were accepted, and reached the summarizer's request (which an SDK cannot encode).
    conv = ac.Conversation([{"role": "user", "content": "hi"}])
    compactor = Compactor("pi")
    for kw in ({"system": "rules \ud800"}, {"instructions": "focus \udcff"}):
        name = next(iter(kw))
        with pytest.raises(errors.OptionError, match=f"{name} is not valid Unicode text"):
            compactor.compact(conv, **kw)
        with pytest.raises(errors.OptionError, match=f"{name} is not valid Unicode text"):
            compactor.compact(conv, manual=True, **kw)
    with pytest.raises(errors.OptionError, match="system is not valid Unicode text"):
        compactor.maybe_compact(conv, system="\ud800")
