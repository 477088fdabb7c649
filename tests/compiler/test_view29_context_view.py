"""The /context view (issue 29, item 2): a compiled request, a session, a request body or a history
broken down by source — every system-prompt section, tool definitions, reminders, pinned messages,
the summary and the ledger, the history by role and by tool — with the window around it; the
request's parts add up to its exact count, the one the budget uses, and every part's inner parts
to it."""

from __future__ import annotations

from typing import Any

import pytest

import agentcontext as ac
from agentcontext.compaction.ledger import LEDGER_MARKER
from agentcontext.compaction.summary_text import summary_message
from agentcontext.compiler import Registry, ToolSpec, WorkingSet, compile_request
from agentcontext.errors import ArgumentTypeError, OptionError
from agentcontext.measure.context_view import ContextPart, ContextView, context_view, framed, split_sections
from agentcontext.sessions.fit import outside_tokens
from agentcontext.sessions.loop import Session
from tests import support
from tests.llm_server import LLMServer

ENVIRONMENT = "# Environment\n\n- working directory: /srv/app\n- git branch: main\n"


def working_set() -> WorkingSet:
    registry = Registry(
        [
            ToolSpec("read_file", "Read a file of the project.", read_only=True),
            ToolSpec("bash", "Run a shell command.\nReturns stdout and stderr."),
        ]
    )
    return WorkingSet(registry=registry, environment=ENVIRONMENT)


def history(seed: int = 3, *, fmt: str = "openai") -> ac.Conversation:
    """A session without its system message, with a summary and a task ledger after the first
    user message and one pinned message."""
    messages = support.synthetic_session(70, seed=seed)[1:]
    summary = summary_message("## Current state\n- half done", messages=40, tokens=9_000)
    ledger = {
        "role": "user",
        "content": f"{LEDGER_MARKER}: kept by code across compactions, not by the summarizer]\n- files: a.py",
    }
    messages[1:1] = [summary, ledger]
    conv = ac.Conversation(messages, format="openai")
    if fmt != "openai":
        conv = ac.Conversation(conv.to_format(fmt), format=fmt)
    conv.pin(0)
    return conv


def request_parts_add_up(view: ContextView) -> None:
    assert sum(p.tokens for p in view.request_parts) == view.request_tokens
    for part in view.parts:
        if part.parts:
            assert sum(q.tokens for q in part.parts) == part.tokens, part.name
    if not view.over:
        assert sum(p.tokens for p in view.parts) == view.context_window


@pytest.mark.parametrize(("fmt", "encoding"), [("openai", "o200k_base"), ("anthropic", "cl100k_base")])
def test_a_compiled_request_adds_up_to_its_exact_count(fmt: str, encoding: str) -> None:
    conv = ac.Conversation(history(fmt=fmt).to_format(fmt), format=fmt, encoding=encoding)  # type: ignore[arg-type]
    conv.pin(0)
    compiled = compile_request(conv, working_set(), reminders=["Run the tests before you answer."])
    view = context_view(compiled, conv)
    assert view.request_tokens == compiled.tokens["input_total"]
    request_parts_add_up(view)
    by_name = {p.name: p for p in view.parts}
    assert [p.name for p in view.parts if p.kind == "section"] == ["base instructions", "tool catalog", "environment"]
    assert by_name["tool definitions"].tokens == compiled.tokens["tools"]
    assert [q.name for q in by_name["tool definitions"].parts] == ["read_file", "bash"]
    assert by_name["reminders (this request only)"].tokens == compiled.tokens["reminders"]
    totals = conv.message_tokens()
    assert by_name["pinned messages"].tokens == totals[0]
    assert by_name["summary"].tokens == totals[1] and by_name["task ledger"].tokens == totals[2]
    assert {q.name for q in by_name["history: assistant"].parts} >= {"calls: read_file", "calls: bash"}
    assert "results: read_file" in {q.name for q in by_name["history: tool"].parts}
    assert view.encoding == encoding
    shares = {p.kind: p.share for p in view.parts}
    assert shares["free"] == pytest.approx(view.free_tokens / view.context_window)


def test_sections_are_framed_where_a_token_spans_the_join() -> None:
    # The base instructions end in blanks the newline that joins the next section merges with:
    # the sections counted alone add up to more than the prompt. Framing gives the exact count.
    conv = history()
    ws = working_set()
    ws.base = "Be brief.\n\n\n   "
    compiled = compile_request(conv, ws)
    texts = [s.text for s in compiled.sections]
    alone = sum(ac.count_tokens(t) for t in texts) + len(texts) - 1
    assert alone != compiled.tokens["system"]
    view = context_view(compiled, conv)
    sections = [p for p in view.parts if p.kind == "section"]
    assert sum(p.tokens for p in sections) == compiled.tokens["system"]
    assert all(abs(p.tokens - s.tokens) <= 2 for p, s in zip(sections, compiled.sections, strict=True))
    request_parts_add_up(view)


def test_framing_telescopes_to_the_count_of_the_whole() -> None:
    texts = ["alpha beta\n", "\n# Tools\n- x", "", "  gamma", "💡 delta\n\n"]
    for joiner, opening, closing in (("\n", "", ""), (", ", "[", "]"), ("", "", "")):
        whole = opening + joiner.join(texts) + closing
        # Tokens span the boundaries: counted apart, the pieces would not add up.
        assert sum(ac.count_tokens(t) for t in texts) != ac.count_tokens(joiner.join(texts))
        assert sum(framed(texts, joiner, "o200k_base", opening=opening, closing=closing)) == ac.count_tokens(whole)


def test_a_prompt_is_cut_back_into_its_sections_only_at_their_headings() -> None:
    compiled = compile_request([], working_set(), format="jsonl")
    named = split_sections(compiled.system)
    assert [n for n, _ in named] == ["base instructions", "tool catalog", "environment"]
    assert "\n".join(t for _, t in named) == compiled.system
    assert [t for _, t in named] == [s.text for s in compiled.sections]
    # A heading inside a line does not cut, nor one before a later section's cut.
    assert split_sections("Say # Tools here.\n# Goal\nx\n# Tools\ny") == [
        ("base instructions", "Say # Tools here.\n# Goal\nx"),
        ("tool catalog", "# Tools\ny"),
    ]
    assert split_sections("no headings") == [("system prompt", "no headings")]


def test_the_window_around_the_request_follows_the_policy() -> None:
    conv = history()
    compiled = compile_request(conv, working_set(), max_output_tokens=8_000)
    view = context_view(compiled, conv, policy="openharness", context_window=100_000)
    room = {p.kind: p.tokens for p in view.parts if not p.in_request}
    assert room["reserved_output"] == 8_000 and room["safety_margin"] == 2_000
    outside = compiled.tokens["system"] + compiled.tokens["tools"]
    # The trigger (85% of what the window leaves the history) in tokens of the whole request.
    assert view.trigger_tokens == outside + int(0.85 * (100_000 - outside))
    assert room["free"] == view.trigger_tokens - view.request_tokens
    assert room["autocompact_buffer"] == 100_000 - 8_000 - 2_000 - view.trigger_tokens
    request_parts_add_up(view)
    # A trigger past the room the window leaves is the room: no buffer.
    tight = context_view(compiled, conv, policy="openharness", context_window=60_000)
    assert tight.trigger_tokens == 60_000 - 8_000 - 2_000
    assert {p.kind: p.tokens for p in tight.parts}["autocompact_buffer"] == 0
    # Over the room: no free space nor buffer, and by how much.
    small = context_view(compiled, conv, context_window=conv.tokens, max_output_tokens=1_000)
    assert small.over == small.request_tokens - (conv.tokens - 1_000 - 2_000)
    assert {p.kind: p.tokens for p in small.parts}["free"] == 0
    assert sum(p.tokens for p in small.request_parts) == small.request_tokens


def test_a_request_body_counts_its_system_prompt_tools_and_messages() -> None:
    conv = history(fmt="anthropic")
    compiled = compile_request(conv, working_set(), style="anthropic")
    body: dict[str, Any] = {
        "model": "claude-test",
        "max_tokens": 3_000,
        "system": compiled.system,
        "tools": compiled.tools,
        "messages": conv.to_anthropic_params(request=True)["messages"],
    }
    view = context_view(body, context_window=100_000)
    assert view.request_tokens == compiled.tokens["input_total"]
    assert [p.name for p in view.parts if p.kind == "section"] == ["base instructions", "tool catalog", "environment"]
    assert view.reserved_output == 3_000 and view.source == "body"
    request_parts_add_up(view)
    # A model the window table does not know keeps the policy's window, and says so.
    unknown = context_view(body)
    assert unknown.context_window == 200_000 and "not in the window table" in unknown.notes[0]
    # The system prompt as a message of the history: cut into its sections inside the message.
    chat = {"messages": [{"role": "system", "content": compiled.system}, *history().to_openai()], "tools": []}
    message = next(p for p in context_view(chat).parts if p.kind == "system")
    assert [q.name for q in message.parts][-1] == "message framing"
    assert sum(q.tokens for q in message.parts) == message.tokens


def test_a_session_view_counts_what_the_session_counts(server: LLMServer) -> None:
    provider = support.provider("openai", server, context_window=40_000)
    tools = [{"type": "function", "function": {"name": "read_file", "description": "Read.", "parameters": {}}}]
    session = Session(provider, system="You are terse.", tools=tools, conversation=history().to_openai())
    view = context_view(session)
    assert view.request_tokens == session.conversation.tokens + outside_tokens(session)
    assert view.context_window == 40_000 and view.source == "session"
    request_parts_add_up(view)


def test_the_html_view_is_escaped_and_its_rows_add_up() -> None:
    body = {
        "messages": [{"role": "user", "content": "hi"}],
        "tools": [{"name": "<script>x</script>", "description": "d", "input_schema": {"type": "object"}}],
    }
    view = context_view(body)
    html = view._repr_html_()
    assert "<script>" not in html and "&lt;script&gt;" in html
    import re

    top = [int(t) for t in re.findall(r'data-depth="0" data-tokens="(\d+)"', html)]
    assert sum(top) == view.context_window
    assert f'data-request-tokens="{view.request_tokens}"' in html
    assert "request total" in view.format()


def test_bad_arguments_are_refused() -> None:
    conv = history()
    compiled = compile_request(conv, working_set())
    with pytest.raises(OptionError, match="conversation it was compiled over"):
        context_view(compiled)
    with pytest.raises(OptionError, match="not the history the request was compiled over"):
        context_view(compiled, conv.slice(0, 5))
    with pytest.raises(OptionError, match="context_window"):
        context_view(conv, context_window=0)
    with pytest.raises(ArgumentTypeError):
        context_view(42)
    with pytest.raises(ArgumentTypeError):
        context_view(conv, policy=3.5)
    assert isinstance(context_view(conv).parts[0], ContextPart)
