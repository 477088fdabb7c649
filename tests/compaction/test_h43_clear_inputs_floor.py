"""The clear rung with ``clear_tool_inputs``: whether clearing can reach the target is judged with
the old calls' arguments cleared too. It was judged by the results alone, so a history of large
writes answered "ok" deferred the clearing and was summarized, when clearing their arguments
reached the target by itself."""

from __future__ import annotations

import dataclasses

import agentcontext as ac
from agentcontext.compaction import PRESETS, Compactor

TEXT = "word " * 400


def writes(n: int) -> list[dict[str, object]]:
    """A request, then ``n`` rounds of a write with a long text, each answered "ok"."""
    messages: list[dict[str, object]] = [{"role": "user", "content": "Write the files."}]
    for i in range(n):
        arguments = f'{{"path": "f{i}.py", "text": "{TEXT}"}}'
        messages.append(
            {
                "role": "assistant",
                "content": None,
                "tool_calls": [
                    {"id": f"c{i}", "type": "function", "function": {"name": "write", "arguments": arguments}}
                ],
            }
        )
        messages.append({"role": "tool", "tool_call_id": f"c{i}", "content": "ok"})
    messages.append({"role": "assistant", "content": "done"})
    return messages


def test_clearing_arguments_that_reach_the_target_is_not_deferred() -> None:
    conv = ac.Conversation(writes(20), encoding="approximate")
    policy = dataclasses.replace(PRESETS["openharness"].compaction, encoding="approximate", clear_tool_inputs=True)
    result = Compactor(policy).compact(conv, budget=conv.tokens // 2)
    assert [s.stage for s in result.stages] == ["clear"]
    assert result.summary is None
    assert result.fits and result.tokens_after <= conv.tokens // 2
    # The latest calls keep their arguments (recent_tools), the older ones are cleared.
    out = result.conversation.to_openai()
    calls = [m["tool_calls"][0]["function"]["arguments"] for m in out if m.get("tool_calls")]
    assert TEXT in calls[-1]
    assert "cleared" in calls[0] and TEXT not in calls[0]


def test_a_floor_over_the_target_still_defers_and_names_the_arguments() -> None:
    # Clearing every result and argument cannot reach a target this small: deferred, as before,
    # the event saying what it counted.
    conv = ac.Conversation(writes(20), encoding="approximate")
    policy = dataclasses.replace(PRESETS["openharness"].compaction, encoding="approximate", clear_tool_inputs=True)
    result = Compactor(policy).compact(conv, budget=conv.tokens // 20)
    clear = next(s for s in result.stages if s.stage == "clear")
    assert "old result and argument" in str(clear.detail.get("deferred"))
    assert result.summary is not None


def test_a_call_whose_arguments_were_cleared_has_no_provenance() -> None:
    # provenance[i] names the original message output i is, unchanged: a call whose arguments the
    # clearing replaced is not (an adapter mapping the output back sent the original object, its
    # arguments whole, for it).
    messages = writes(20)
    conv = ac.Conversation(messages, encoding="approximate")
    policy = dataclasses.replace(PRESETS["openharness"].compaction, encoding="approximate", clear_tool_inputs=True)
    result = Compactor(policy).compact(conv, budget=conv.tokens // 2)
    out = result.conversation.to_openai()
    assert any(q is None for q in result.provenance)
    for m, q in zip(out, result.provenance, strict=True):
        if q is not None:
            assert m == messages[q]
    assert result.origins is not None
    assert all(m["role"] == messages[q]["role"] for m, q in zip(out, result.origins, strict=True) if q is not None)
