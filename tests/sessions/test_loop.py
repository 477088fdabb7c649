"""The agent loop cannot overflow: every tool result enters through the session's
ToolResultPolicy, and the compaction trigger and the pre-send check count the system prompt, the
tool definitions and the reserved output. Through the real SDK clients against the loopback
server in ``tests/llm_server.py``; sizes the server received are counted on the server side."""

from __future__ import annotations

import json
from typing import Any

import pytest

import agentcontext as ac
from agentcontext.budgets import ResultStore, ToolResultPolicy, recall_tool
from agentcontext.compaction import CompactionPolicy
from agentcontext.errors import ContextOverflowError, OptionError
from agentcontext.sessions.log import SessionLog
from agentcontext.sessions.loop import Session
from tests import support
from tests.llm_server import LLMServer, Recorded, Reply

pytest.importorskip("anthropic", reason="the anthropic SDK is a test extra: pip install -e '.[test]'")
pytest.importorskip("openai", reason="the openai SDK is a test extra: pip install -e '.[test]'")

KINDS = ["anthropic", "openai", "responses"]
PROMPT_FIELDS = ("system", "messages", "tools", "input", "instructions")


def make(kind: str, server: LLMServer, window: int) -> Any:
    return support.provider(kind, server, context_window=window)


def tool_outputs(request: Recorded) -> list[str]:
    """The tool-result texts of a request as the server received it, in order."""
    body = request.body
    out: list[str] = []
    if request.endpoint == "anthropic":
        for message in body["messages"]:
            if isinstance(message["content"], list):
                for block in message["content"]:
                    if block.get("type") == "tool_result":
                        content = block["content"]
                        out.append(content if isinstance(content, str) else "".join(b["text"] for b in content))
    elif request.endpoint == "chat":
        out = [m["content"] for m in body["messages"] if m["role"] == "tool"]
    else:
        out = [item["output"] for item in body["input"] if item.get("type") == "function_call_output"]
    return out


def received_tokens(request: Recorded) -> int:
    """The prompt fields of the received body as compact JSON, counted with o200k, plus the
    output the request reserves: what the window must hold."""
    body = request.body
    prompt = {k: body[k] for k in PROMPT_FIELDS if k in body}
    text = json.dumps(prompt, separators=(",", ":"), ensure_ascii=False)
    reserved = next(body[k] for k in ("max_tokens", "max_completion_tokens", "max_output_tokens") if k in body)
    return ac.count_tokens(text) + int(reserved)


def big_result(chars: int = 150_000) -> str:
    lines = [f"line {i:06d}: building module m{i % 97}.rs ok" for i in range(chars // 35 + 1)]
    text = "HEAD: cargo build --release\n" + "\n".join(lines)
    tail = "\nerror[E0308]: mismatched types at src/lib.rs:42\nTAIL: exit status 101"
    return text[: chars - len(tail)] + tail


# -- tool results enter budgeted ---------------------------------------------------------------


@pytest.mark.parametrize("kind", KINDS)
def test_huge_tool_result_enters_budgeted_and_recalls(kind: str, tmp_path: Any) -> None:
    big = big_result()
    assert len(big) == 150_000
    rid = ResultStore.id_for(big)
    with LLMServer() as server:
        provider = make(kind, server, 200_000)
        style = "anthropic" if kind == "anthropic" else "openai"
        session = Session(provider, functions={"build": lambda args: big}, tools=[recall_tool(style)])
        server.enqueue(
            Reply("", tool_calls=[{"name": "build", "arguments": {}}]),
            Reply("", tool_calls=[{"name": "recall", "arguments": {"id": rid, "offset": 1, "limit": 3}}]),
            Reply("done"),
        )
        assert session.run("Build it.").text == "done"
        received = tool_outputs(server.requests[1])
    assert len(received) == 1
    text = received[0]
    policy = session.result_policy
    assert policy is not None
    # Over persist_over_chars: stored in full, a preview with its size and recall id enters.
    assert len(text) <= policy.preview_chars <= policy.max_chars_for("build")
    assert text.startswith(f"[Full result stored: 150,000 chars, {big.count(chr(10)) + 1:,} lines; recall id {rid}]")
    # The preview is head + marker + tail of the original.
    preview = text.split("\n", 1)[1]
    head, marker, tail = preview.partition(f'full text: recall(id="{rid}")')
    assert marker and head.startswith("HEAD: cargo build --release\nline 000000")
    assert tail.endswith("TAIL: exit status 101") and len(tail) > 40
    assert big.startswith(head[: head.rindex("\n")])
    assert big.endswith(tail[tail.index("\n") + 1 :])
    # The id the marker names is stored and gives the original back, through the store and
    # through the recall tool call the session answered.
    assert session.result_store.get(rid) == big
    assert session.results[0].action == "persisted" and session.results[0].recall_id == rid
    recalled = tool_outputs(server.requests[2])[1]
    assert recalled.startswith("\n".join(big.split("\n")[:3]))


def test_cut_result_is_head_marker_tail_within_budget(tmp_path: Any) -> None:
    big = big_result()
    policy = ToolResultPolicy(context_window=200_000, persist_over_chars=None)
    with LLMServer() as server:
        provider = make("openai", server, 200_000)
        log = SessionLog(tmp_path / "s.jsonl", format="openai")
        session = Session(provider, functions={"build": lambda args: big}, result_policy=policy, log=log)
        server.enqueue(Reply("", tool_calls=[{"name": "build", "arguments": {}}]), Reply("done"))
        session.run("Build it.")
        (text,) = tool_outputs(server.requests[1])
    assert len(text) <= policy.max_chars_for("build") == 16_000
    assert text.startswith("HEAD: cargo build --release\n") and text.endswith("TAIL: exit status 101")
    rid = ResultStore.id_for(big)
    assert f'recall(id="{rid}")' in text
    # No store in the policy and a session log: the results live beside the log, with the
    # originals of compactions (one store for every id the session's markers name).
    assert session.result_store.directory == tmp_path / "s.jsonl.recall"
    assert session.compactor.store is session.result_store
    assert ResultStore(tmp_path / "s.jsonl.recall").get(rid) == big
    # What the log holds is what the model saw.
    assert SessionLog(tmp_path / "s.jsonl").originals().to_openai()[-2]["content"] == text


def test_no_store_is_made_while_nothing_is_cut() -> None:
    with LLMServer() as server:
        provider = make("openai", server, 200_000)
        session = Session(provider, functions={"ls": lambda args: "a.py\nb.py"})
        server.enqueue(Reply("", tool_calls=[{"name": "ls", "arguments": {}}]), Reply("done"))
        session.run("List.")
        assert tool_outputs(server.requests[1]) == ["a.py\nb.py"]
    assert session._store is None
    assert session.results[0].action == "kept"
    # A recall of an id nothing stored is refused, and the model is told so.
    answer = session.functions["recall"]({"id": "r-0123456789abcdef0123"})
    assert answer.startswith("Error: no stored result with recall id 'r-0123456789abcdef0123'")


def test_per_tool_override_and_opt_out(tmp_path: Any) -> None:
    grep_out = "\n".join(f"src/m{i}.py:{i}: match" for i in range(400))
    ls_out = "\n".join(f"file{i}.py" for i in range(400))
    dump_out = big_result(55_000)
    store = ResultStore(tmp_path / "store")
    policy = ToolResultPolicy(
        context_window=200_000, max_chars=8_000, per_tool={"grep": 1_000, "dump": 60_000}, store=store
    )
    assert len(grep_out) > 1_000 and len(ls_out) < 8_000
    calls = [{"name": n, "arguments": {}} for n in ("grep", "ls", "dump")]
    functions = {"grep": lambda a: grep_out, "ls": lambda a: ls_out, "dump": lambda a: dump_out}
    with LLMServer() as server:
        provider = make("openai", server, 200_000)
        session = Session(provider, functions=functions, result_policy=policy)
        server.enqueue(Reply("", tool_calls=calls), Reply("done"))
        session.run("Look around.")
        grep_seen, ls_seen, dump_seen = tool_outputs(server.requests[1])
    # grep's own budget, smaller than the default, is applied; ls fits the default and is kept.
    assert len(grep_seen) <= 1_000 and grep_seen.startswith("src/m0.py:0: match")
    assert f'recall(id="{ResultStore.id_for(grep_out)}")' in grep_seen
    assert store.get(ResultStore.id_for(grep_out)) == grep_out
    assert ls_seen == ls_out
    # dump's budget is over persist_over_chars (50,000): its 55,000 chars enter whole, not as a preview.
    assert dump_seen == dump_out
    assert [r.action for r in session.results] == ["truncated", "kept", "kept"]

    # Opt out: results enter unchanged, nothing is stored, and there is no recall tool.
    big = big_result()
    with LLMServer() as server:
        provider = make("openai", server, 1_000_000)
        session = Session(provider, functions={"build": lambda args: big}, result_policy=False)
        server.enqueue(Reply("", tool_calls=[{"name": "build", "arguments": {}}]), Reply("done"))
        session.run("Build it.")
        assert tool_outputs(server.requests[1]) == [big]
    assert session.result_policy is None and session.results == [] and "recall" not in session.functions
    with pytest.raises(OptionError, match="result_policy"):
        Session(provider, result_policy="on")  # type: ignore[arg-type]


# -- the trigger and the pre-send check count everything the request carries -------------------

WINDOW = 128_000
RESERVED = 8_192


def system_prompt(tokens: int) -> str:
    unit = "The build cache keys every artifact by the hash of its inputs and its toolchain. "
    per = ac.count_tokens(unit)
    text = unit * (tokens // per)
    return text + " ok" * (tokens - ac.count_tokens(text))


def history(tokens: int) -> ac.Conversation:
    """The shortest prefix of a tool-heavy Chat session that ends in a user ask and holds at least
    ``tokens`` tokens (the session's own system prompt left out: the big one is the session's)."""
    msgs = support.synthetic_session(tokens // 50, seed=5)[1:]
    for end in range(1, len(msgs) + 1):
        if msgs[end - 1]["role"] == "user":
            conv = ac.Conversation(msgs[:end])
            if conv.tokens >= tokens:
                return conv
    raise AssertionError("the synthetic session is too short")


@pytest.mark.parametrize("kind", KINDS)
def test_system_prompt_and_reserved_output_trigger_compaction(kind: str) -> None:
    system = system_prompt(100_000)
    conv = history(20_000)
    assert 99_000 <= ac.count_tokens(system) <= 100_000 and 20_000 <= conv.tokens <= 21_000
    tools = [recall_tool("anthropic" if kind == "anthropic" else "openai")]
    with LLMServer(context_window=WINDOW) as server:
        provider = make(kind, server, WINDOW)
        policy = CompactionPolicy(context_window=WINDOW, reserved_output=RESERVED)
        session = Session(
            provider,
            conversation=conv,
            system=system,
            tools=tools,
            max_output_tokens=RESERVED,
            compactor=ac.Compactor(policy),
        )
        server.enqueue(Reply("done"))
        assert session.send().text == "done"
        (request,) = server.requests
    # The history alone is far under the trigger (85% of 128K); with the system prompt, the tool
    # definitions and the reserved output the request was over the window, so it was compacted.
    assert session.compactions, "the trigger counted the system prompt and reserved output"
    sent = received_tokens(request)
    assert sent <= WINDOW, f"the server received {sent:,} tokens with the reserved output, over {WINDOW:,}"
    assert request.body.get("system", request.body.get("instructions")) == system or kind == "openai"
    assert session.conversation.validate() == []


def test_request_that_cannot_fit_is_not_sent() -> None:
    with LLMServer(context_window=WINDOW) as server:
        provider = make("openai", server, WINDOW)
        # The system prompt and the reserved output leave no room for any history.
        session = Session(provider, system=system_prompt(125_000), max_output_tokens=RESERVED)
        with pytest.raises(ContextOverflowError, match="leave no room for history") as info:
            session.send("Hello.")
        assert info.value.limit == WINDOW and info.value.tokens is not None and info.value.tokens > 120_000
        # One round larger than the room left is never split: refused before sending as well.
        session = Session(provider, system=system_prompt(100_000), max_output_tokens=RESERVED)
        ask = "Please review this design. " * 4_000
        assert ac.count_tokens(ask) > 20_000
        with pytest.raises(ContextOverflowError, match="cannot be recompiled"):
            session.send(ask)
        # The history is left as it was.
        assert session.conversation.to_jsonl()[-1]["content"] == ask
        assert server.requests == []


def test_pending_tool_results_count_before_the_next_call() -> None:
    # Results enter unbudgeted here, so only the trigger and the pre-send check stand between a
    # 35K-token result on top of a 100K-token system prompt and an over-window request.
    system = system_prompt(100_000)
    big = "\n".join(f"{i:05d} checked src/module_{i}.py: 3 warnings, 0 errors" for i in range(8_000))
    assert ac.count_tokens(big) > 30_000
    with LLMServer(context_window=WINDOW) as server:
        provider = make("openai", server, WINDOW)
        session = Session(
            provider, system=system, functions={"lint": lambda a: big}, max_output_tokens=RESERVED, result_policy=False
        )
        server.enqueue(Reply("", tool_calls=[{"name": "lint", "arguments": {}}]), Reply("done"))
        assert session.run("Lint the tree.").text == "done"
        assert len(server.requests) == 2
        sent = [received_tokens(r) for r in server.requests]
    assert session.compactions
    assert max(sent) <= WINDOW, sent
    assert session.conversation.validate() == []


def test_per_tool_budget_overrides_the_persist_threshold(tmp_path: Any) -> None:
    # A tool given its own budget gets it, also over persist_over_chars (was: a 2,000-char preview).
    text = big_result(55_000)
    policy = ToolResultPolicy(per_tool={"dump": 60_000, "grep": 20_000}, store=ResultStore(tmp_path))
    assert policy.apply(text, "dump").text == text
    for cut in (policy.apply(text, "grep"), policy.apply_message([("grep", text)])[0]):
        assert cut.action == "truncated" and 19_000 < len(cut.text) <= 20_000
        assert cut.text.endswith("TAIL: exit status 101") and cut.recall_id == ResultStore.id_for(text)
    # Tools without their own budget are still persisted over the threshold.
    assert policy.apply(text, "ls").action == "persisted"


def test_result_that_is_not_unicode_is_a_typed_error() -> None:
    # Budgeting must not turn the typed refusal Conversation gives into a raw UnicodeEncodeError.
    with LLMServer() as server:
        provider = make("openai", server, 200_000)
        session = Session(provider, functions={"t": lambda a: "ok\ud800" * 30_000})
        server.enqueue(Reply("", tool_calls=[{"name": "t", "arguments": {}}]))
        with pytest.raises(ac.InvalidMessageError, match="lone surrogate"):
            session.run("Go.")
