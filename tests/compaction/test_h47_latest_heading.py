"""The offline summary heads its latest request "verbatim" only when it carries it whole: a request
cut to head + marker + tail is headed as cut, and stays so when a later summary or a shrink carries
it again."""

from __future__ import annotations

import agentcontext as ac
from agentcontext.compaction.summarize import OfflineSummarizer, SummaryRequest, shrink_summary
from agentcontext.compaction.summary_text import LATEST, LATEST_CUT, latest_cut, split_latest

LONG = "\n".join(f"Step {k}: rename the helper in module_{k}.py and update its callers." for k in range(300))


def _summary(request: str, cap: int, *, previous: str | None = None) -> str:
    conv = ac.Conversation(
        [
            {"role": "user", "content": request},
            {"role": "assistant", "content": "On it."},
            {"role": "user", "content": "ok"},
        ]
    )
    # The span holds the request only when it is given (a later summary with no request since:
    # the span is the assistant's answer).
    start = 0 if request else 1
    return OfflineSummarizer().summarize(SummaryRequest(conv, start, 2, previous, cap, original=conv))


def test_a_request_cut_to_head_and_tail_is_headed_as_cut() -> None:
    summary = _summary(LONG, 400)
    assert summary.startswith(f"## {LATEST_CUT}\n"), summary[:80]
    assert LATEST_CUT == "Latest request (cut: head and tail)"
    assert latest_cut(summary)
    kept, _ = split_latest(summary)
    assert kept is not None and kept.startswith("Step 0:") and "Step 299:" in kept and "Step 150:" not in kept


def test_a_request_kept_whole_is_headed_verbatim() -> None:
    summary = _summary("Fix the failing test in tests/test_app.py.", 400)
    assert summary.startswith(f"## {LATEST}\nFix the failing test in tests/test_app.py.\n")
    assert LATEST == "Latest request (verbatim)"
    assert not latest_cut(summary)


def test_a_cut_request_carried_again_stays_headed_as_cut() -> None:
    cut = _summary(LONG, 400)
    kept, _ = split_latest(cut)
    # A later summary with no request since carries the previous one's, whole in a larger cap.
    later = _summary("", 4_000, previous=cut)
    assert later.startswith(f"## {LATEST_CUT}\n{kept}"), later[:120]
    # Shrunk: fitted again section by section, the request (whole in its room) still headed as cut.
    files = "\n\n## Files read\n" + "\n".join(f"- f{k}.py" for k in range(200))
    shrunk = shrink_summary(cut + files, 350, request_room=10_000)
    assert shrunk.startswith(f"## {LATEST_CUT}\n"), shrunk[:80]
