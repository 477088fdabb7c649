"""Compaction quality curves (issue 13), printed as tables.

    python benches/bench_compaction.py [curve|fill|all]

``curve``: a growing session compacted every 50 messages under a fixed budget — the summary's
size, the output's size and the fill after each compaction (the summary must stay bounded).
``fill``: output tokens / budget on every shared transcript at 10, 25 and 50% of its tokens.
"""

from __future__ import annotations

import statistics
import sys
from dataclasses import replace
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import agentcontext as ac
from agentcontext.compaction import PRESETS, Compactor, summary_cap
from tests import support


def curve(messages: int = 3000, every: int = 50, budget: int = 20_000) -> None:
    session = support.synthetic_session(messages, seed=5)
    compactor = Compactor(replace(PRESETS["openharness"].compaction, clear_tool_results=False))
    print(
        f"\n[curve] compact every {every} messages, budget {budget:,}, summary cap {summary_cap(compactor.policy, budget):,}"
    )
    print(f"{'messages':>9} {'input':>8} {'output':>8} {'fill':>6} {'summary':>8}")
    conv = ac.Conversation(session[:every], format="openai")
    for at in range(every, len(session), every):
        conv.extend(session[at : at + every])
        if conv.tokens <= budget or conv.validate():
            continue
        result = compactor.compact(conv, budget=budget)
        summary = ac.count_tokens(result.summary) if result.summary else 0
        print(f"{at + every:>9} {conv.tokens:>8,} {result.tokens_after:>8,} {result.fill or 0:>6.2f} {summary:>8,}")
        conv = result.conversation


def fill() -> None:
    print("\n[fill] output tokens / budget, openharness, offline summarizer (transcripts over the budget)")
    rows: dict[int, list[float]] = {10: [], 25: [], 50: []}
    for path in sorted(support.normalized_files()):
        conv = ac.Conversation.from_file(path)
        cells = []
        for share, fills in rows.items():
            budget = max(1, conv.tokens * share // 100)
            result = Compactor("openharness").compact(conv, budget=budget)
            mark = "" if result.fits else "!"
            cells.append(f"{result.fill or 0:.2f}{mark}")
            if conv.tokens > budget and result.fits:
                fills.append(result.fill or 0.0)
        print(
            f"{path.parent.name + '/' + path.stem[:34]:<48} {conv.tokens:>8,}  " + "  ".join(f"{c:>6}" for c in cells)
        )
    print("  (! = does not fit: the system messages and a head and tail of the last round exceed the budget)")
    for share, fills in rows.items():
        low = sum(f < 0.8 for f in fills)
        print(
            f"  {share}%: mean {statistics.mean(fills):.3f}, median {statistics.median(fills):.3f}, "
            f"min {min(fills):.3f}, under 0.8: {low} of {len(fills)}"
        )


def main() -> None:
    which = sys.argv[1] if len(sys.argv) > 1 else "all"
    if which in ("curve", "all"):
        curve()
    if which in ("fill", "all"):
        fill()


if __name__ == "__main__":
    main()
