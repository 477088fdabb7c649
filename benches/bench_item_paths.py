"""The adapters' paths against the Chat path, on the same content, in an agent loop.

One session (the synthetic coding-agent session of ``tests/support.py``) as OpenAI Chat dicts,
as LiteLLM's mix (dicts, and pydantic message objects for the assistant's replies), and as the
Responses items the OpenAI Agents SDK writes (assistant messages with an ``output_text`` part,
ids and status). Each workload is an agent loop: the list grows by one Chat message (the items
it stands for, on the Responses path) per call from half the session to its end, and each call
fits the whole list into a quarter of the session's tokens, as an agent's adapter does before
every model call. Rounds alternate the
workloads (rotating their order, one process); the table gives each one's median over the
rounds and its ratio to the Chat path (``agentcontext.trim_messages`` on the Chat dicts)::

    PYTHONPATH=python python benches/bench_item_paths.py --rounds 9

Run it with another build's package first on the path (``PYTHONPATH=/path/to/old/python``) to
compare builds: the workloads use only public functions.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent


def sessions(size: int) -> tuple[list[dict[str, Any]], list[Any], list[dict[str, Any]], list[int]]:
    """The session as Chat dicts, as LiteLLM's mix, as the Agents SDK's Responses items, and
    where each Chat message's items end (an assistant message with calls is several items)."""
    from pydantic import BaseModel

    import agentcontext as ac

    sys.path.insert(0, str(ROOT / "tests"))
    import support

    class Message(BaseModel):
        role: str
        content: str | None = None
        tool_calls: list[dict[str, Any]] | None = None

    chat = support.synthetic_session(size)
    mixed: list[Any] = [Message(**m) if m["role"] == "assistant" else m for m in chat]
    items: list[dict[str, Any]] = []
    for n, r in enumerate(ac.Conversation(chat).to_format("responses")):
        if r.get("role") == "assistant" and isinstance(r.get("content"), str):
            part = {"type": "output_text", "text": r["content"], "annotations": [], "logprobs": []}
            items.append(
                {"id": f"msg_{n}", "type": "message", "role": "assistant", "status": "completed", "content": [part]}
            )
        elif r.get("type") == "function_call":
            items.append({**r, "id": f"fc_{n}", "status": "completed"})
        else:
            items.append(r)
    ends: list[int] = []
    for m in chat:
        ends.append((ends[-1] if ends else 0) + len(ac.Conversation([m]).to_format("responses")))
    assert ends[-1] == len(items)
    return chat, mixed, items, ends


def loop(fit: Callable[[list[Any]], Any], objects: list[Any], ends: list[int]) -> Callable[[], None]:
    """An agent loop: ``fit`` over the list up to each of ``ends`` (one call per Chat message)."""

    def run() -> None:
        for n in ends:
            fit(objects[:n])

    return run


def workloads(size: int) -> dict[str, Callable[[], None]]:
    import agentcontext as ac
    from agentcontext.integrations import litellm
    from agentcontext.integrations.openai_agents import fit_items

    chat, mixed, items, item_ends = sessions(size)
    budget = ac.Conversation(chat).tokens // 4
    # The second half of the session, one call per message (the same content on every path).
    half = len(chat) // 2
    chat_ends = list(range(half + 1, len(chat) + 1))
    item_ends = item_ends[half:]
    return {
        "chat: trim_messages (Chat dicts)": loop(lambda m: ac.trim_messages(m, budget), chat, chat_ends),
        "litellm: fit_messages (dicts)": loop(lambda m: litellm.fit_messages(m, budget), chat, chat_ends),
        "litellm: fit_messages (dicts + objects)": loop(lambda m: litellm.fit_messages(m, budget), mixed, chat_ends),
        "agents sdk: fit_items (Responses items)": loop(lambda m: fit_items(m, budget), items, item_ends),
        "responses: trim_messages (parsed path)": loop(
            lambda m: ac.trim_messages(m, budget, format="responses"), items, item_ends
        ),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--size", type=int, default=600, help="messages of the synthetic session")
    args = parser.parse_args()
    calls = workloads(args.size)
    for run in calls.values():
        run()  # warm: token counts memoized, conversions held, as in a running agent
    names = list(calls)
    times: dict[str, list[float]] = {name: [] for name in names}
    for r in range(args.rounds):
        for k in range(len(names)):
            name = names[(r + k) % len(names)]
            t = time.process_time()
            calls[name]()
            times[name].append(time.process_time() - t)
    ref = statistics.median(times[names[0]])
    steps = args.size - args.size // 2
    print(f"agent loop over {args.size} messages (~{steps} calls), median CPU ms over {args.rounds} alternating rounds")
    print(f"{'workload':<44}{'ms':>10}{'ms/call':>10}{'/chat':>8}")
    for name in names:
        med = statistics.median(times[name])
        print(f"{name:<44}{med * 1e3:>10.1f}{med * 1e3 / steps:>10.3f}{med / ref:>8.2f}")


if __name__ == "__main__":
    main()
