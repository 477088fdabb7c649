"""The LLM summary request's cached-prefix share on the shared corpus (issue 29, item 4).

    PYTHONPATH=python:. AGENTCONTEXT_SHARED=/work/shared python benches/summary_cache.py [PATHS...] [--min-tokens N]

For every transcript (default: ``$AGENTCONTEXT_SHARED/data/transcripts/normalized``) of at least
``--min-tokens`` tokens, over the loopback server (``tests/llm_server.py``) with the real OpenAI
SDK: the agent's request (the transcript, with tool definitions for the tools it calls) is sent,
then the transcript is compacted to 25% under the default preset with an
:class:`~agentcontext.LLMSummarizer`; the share of the first summary request's tokens that equal
the agent's request's prefix (``tests/compaction/test_view29_summary_cache.prefix_share``: tools,
tool choice, then message by message) is printed per transcript, with the mean, median and the
share of transcripts at 90% or more.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import agentcontext as ac
from agentcontext.compaction import Compactor
from tests import support
from tests.compaction.test_view29_summary_cache import is_summary, prefix_share
from tests.llm_server import LLMServer, Recorded, Reply


def _reply(request: Recorded) -> Reply:
    return Reply("<summary>## Current state\n- working</summary>") if is_summary(request) else Reply("ok")


def share_of(server: LLMServer, path: str, min_tokens: int) -> float | None:
    """The summary request's prefix share for one transcript (None: skipped)."""
    try:
        conv = ac.importers.load(path)
    except ac.AgentContextError:
        return None
    conv = ac.Conversation(conv.to_openai(), format="openai")
    if conv.validate():
        conv = conv.repair()[0]
    if conv.tokens < min_tokens:
        return None
    tools: list[dict[str, Any]] | None = [
        {"type": "function", "function": {"name": n, "description": f"The {n} tool.", "parameters": {"type": "object"}}}
        for n in sorted(conv.tokens_by_tool())
    ] or None
    start = len(server.requests)
    support.provider("openai", server, context_window=2_000_000).complete(conv, tools=tools, max_output_tokens=500)
    summarizer = ac.LLMSummarizer(support.provider("openai", server, context_window=2_000_000), retry_missing=False)
    Compactor("openharness", summarizer=summarizer).compact(conv, budget="25%", tools=tools)
    sent = server.requests[start:]
    summary = next((r for r in sent if is_summary(r)), None)
    return None if summary is None else prefix_share(sent[0], summary)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    default = Path(os.environ.get("AGENTCONTEXT_SHARED", "/work/shared")) / "data/transcripts/normalized"
    parser.add_argument("paths", nargs="*", default=[str(default)])
    parser.add_argument("--min-tokens", type=int, default=4_000)
    args = parser.parse_args()
    files = sorted(str(f) for p in args.paths for f in (Path(p).rglob("*.jsonl") if Path(p).is_dir() else [Path(p)]))
    shares: list[float] = []
    with LLMServer() as server:
        server.default = _reply
        for path in files:
            share = share_of(server, path, args.min_tokens)
            if share is not None:
                shares.append(share)
                print(f"{share:.3f}  {path}")
    if not shares:
        print("no transcript was measured")
        return 1
    at_least = sum(s >= 0.9 for s in shares) / len(shares)
    print(
        f"{len(shares)} transcripts: mean {statistics.mean(shares):.3f}, median {statistics.median(shares):.3f}, "
        f"min {min(shares):.3f}; {at_least:.0%} at 90% or more"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
