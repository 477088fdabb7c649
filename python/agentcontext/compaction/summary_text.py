"""The text of a summary message: the prompt that asks a model for one, the marker that opens it,
the message itself, the summary inside it, and a model's handoff without its scratchpad (re-exported by
:mod:`agentcontext.compaction.summarize`); a summary's texts counted once (:func:`counted`: the
offline summary's fit and the check's repair share one memo); the offline summary's sections,
read and written."""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import TYPE_CHECKING

from agentcontext._core import _SUMMARY_LATEST_CUT, _SUMMARY_SECTIONS, count_tokens

if TYPE_CHECKING:
    from agentcontext.types import Encoding

__all__ = [
    "HANDOFF_PROMPT",
    "SUMMARY_MARKER",
    "join_summaries",
    "previous_summary_of",
    "strip_scratchpad",
    "summary_message",
]

#: The request appended (as the last user message) to the older history sent to an LLM
#: summarizer, with tools disabled.
HANDOFF_PROMPT = """\
You are handing this task over to another instance of yourself, which will continue it with no
access to the conversation above except what you write now. Do not continue the task and do not
call tools. First think in <analysis> tags about what the next model needs; that part is
discarded. Then write the handoff inside <summary> tags, with these sections:

1. Current state: what is done and what is in progress right now.
2. User requests and constraints: every instruction and preference of the user, verbatim where
   possible, the latest request first.
3. Key evidence: results of commands and tests, with the exact command and outcome.
4. Decisions: what was decided and why.
5. Files: files read and files modified, with what changed.
6. Errors: errors met, their root cause, and how they were resolved (or that they are not).
7. Identifiers: exact paths, test names, function names, ids and values the work depends on.
8. Open work: what remains, as a list.
9. Next step: the one next action.

If a previous summary is given, update it with what happened since: keep what is still true,
replace what changed, and do not nest the old summary inside the new one. Be complete but
concise; the summary replaces the history it describes."""

#: The first words of every summary message this library writes into a conversation; a later
#: compaction recognizes it and updates the summary instead of nesting it.
SUMMARY_MARKER = "[agentcontext: earlier conversation compacted"


def strip_scratchpad(text: str) -> str:
    """A model's handoff without its analysis scratchpad. Only output shaped like the handoff
    request asks for is touched — text that opens with an ``<analysis>`` or ``<summary>`` tag —
    and from it the last ``<summary>`` block the model wrote is taken (else the text without its
    ``<analysis>`` block). Any other text comes back as it is (trimmed): a ``<summary>`` tag
    quoted inside it, as Claude Code's task notifications carry, is content, not the handoff."""
    stripped = text.strip()
    if not stripped.startswith(("<analysis>", "<summary>")):
        return stripped
    without = re.sub(r"^<analysis>.*?(?:</analysis>|$)", "", stripped, count=1, flags=re.DOTALL).strip()
    blocks = re.findall(r"<summary>(.*?)</summary>", without, re.DOTALL)
    if blocks:
        return str(blocks[-1]).strip()
    if without.startswith("<summary>"):  # cut off before its closing tag
        return without[len("<summary>") :].strip()
    return without


def summary_message(summary: str, *, messages: int, tokens: int, recall_id: str | None = None) -> dict[str, str]:
    """The boundary marker and the summary as one user message (the same shape in every format).
    The marker names ``recall_id`` when the originals are stored under it, and otherwise says
    they are not stored."""
    where = (
        f"recall id {recall_id} gives the originals (the recall tool reads them; conversation_search "
        "searches the session's history)"
        if recall_id
        else "the originals are not stored"
    )
    header = f"{SUMMARY_MARKER}: {messages:,} earlier messages ({tokens:,} tokens) are summarized below; {where}.]"
    return {"role": "user", "content": f"{header}\n\n{summary}"}


def previous_summary_of(text: str) -> str:
    """The summary inside a summary message written by :func:`summary_message`."""
    if text.startswith(SUMMARY_MARKER):
        return text.split("\n\n", 1)[1] if "\n\n" in text else ""
    return text


def join_summaries(parts: Sequence[str]) -> str:
    """Partial summaries of consecutive parts, as one text for a merge step."""
    return "\n\n".join(f"### Part {i + 1} of {len(parts)}\n{p}" for i, p in enumerate(parts))


def counted(text: str, encoding: Encoding, counts: dict[str, int]) -> int:
    """The tokens of ``text`` in ``encoding``, counted once: held in ``counts`` (text -> tokens,
    shared by the fits of one summary and the check's repair of it,
    :data:`~agentcontext.compaction.summarize.LINE_TOKENS`)."""
    c = counts.get(text)
    if c is None:
        c = counts[text] = count_tokens(text, encoding=encoding)
    return c


#: Characters beyond a cut that :func:`one_line` and :func:`head_tail` fold first (a long text's
#: head and tail on one line are the line's head and tail: it is not folded whole).
_FOLD_SLACK = 64


def one_line(text: str, limit: int) -> str:
    """``text`` on one line, cut to ``limit`` characters (the last an ellipsis)."""
    if limit >= 1 and len(text) > 2 * limit + _FOLD_SLACK:
        head = " ".join(text[: 2 * limit + _FOLD_SLACK].split())
        if len(head) > limit:
            return head[: limit - 1] + "…"
    line = " ".join(text.split())
    return line if len(line) <= limit else line[: limit - 1] + "…"


def head_tail(text: str, chars: int) -> str:
    """``text`` on one line, cut to head and tail when longer than ``chars``."""
    head = chars * 2 // 3
    tail = chars - head - 5
    if tail >= 1 and len(text) > 2 * chars + _FOLD_SLACK:
        first = " ".join(text[: chars + _FOLD_SLACK].split())
        last = " ".join(text[-(chars + _FOLD_SLACK) :].split())
        if len(first) > chars and len(last) >= tail:
            return f"{first[:head]} [...] {last[-tail:]}"
    line = " ".join(text.split())
    if len(line) <= chars:
        return line
    return f"{line[:head]} [...] {line[-tail:]}"


# ---------------------------------------------------------------------------------------------
# The offline summary's sections.

#: The sections in the order the summary writes them: the core's fit writes them (its list,
#: ``SECTIONS`` in ``src/compact/summary/fit.rs``, is the one list).
_SECTIONS: tuple[str, ...] = _SUMMARY_SECTIONS
LATEST = _SECTIONS[0]  # "Latest request (verbatim)"
#: The latest request's heading when the summary carries it cut to head + marker + tail.
LATEST_CUT: str = _SUMMARY_LATEST_CUT  # "Latest request (cut: head and tail)"
USERS = _SECTIONS[1]  # "User requests and constraints (latest first)"
CARRIED = _SECTIONS[3]  # "Earlier summaries (carried forward)"
#: The section the check before commit appends facts a summary missed to
#: (:mod:`agentcontext.compaction.check`); merged forward like the others.
CHECKED = _SECTIONS[-1]  # "Also in the replaced history (checked)"


def _parse_sections(summary: str) -> dict[str, list[str]]:
    """Lines per section of a summary written by :class:`OfflineSummarizer`. Only its own section
    names open a section: a "## " line of the user's markdown (in the latest request) is content.
    A latest request headed :data:`LATEST_CUT` is read as :data:`LATEST`'s lines."""
    out: dict[str, list[str]] = {}
    current: str | None = None
    for line in summary.splitlines():
        if line.startswith("## ") and (line[3:].strip() in _SECTIONS or line[3:].strip() == LATEST_CUT):
            current = LATEST if line[3:].strip() == LATEST_CUT else line[3:].strip()
            out.setdefault(current, [])
        elif current is not None and line.strip():
            out[current].append(line)
    return out


def _merge(new: list[str], old: list[str]) -> list[str]:
    """New lines first, then old lines not repeated."""
    return list(dict.fromkeys([*new, *old]))


def split_latest(summary: str) -> tuple[str | None, str]:
    """The latest request of a summary written by :class:`OfflineSummarizer` (as it carries it,
    verbatim or cut: everything up to the next section it writes, a "## " line of the user's own
    markdown included) and the rest of the summary; ``(None, summary)`` when it opens with no such
    section. :func:`latest_cut` tells whether the request is cut."""
    heading = LATEST_CUT if latest_cut(summary) else LATEST
    if not summary.startswith(f"## {heading}\n"):
        return None, summary
    rest = summary[len(heading) + 4 :]
    ends = [e for n in _SECTIONS[1:] if (e := rest.find(f"\n\n## {n}\n")) >= 0]
    end = min(ends, default=len(rest))
    return rest[:end].strip() or None, rest[end:]


def latest_cut(summary: str) -> bool:
    """Whether a summary written by :class:`OfflineSummarizer` carries its latest request cut to
    head + marker + tail (headed :data:`LATEST_CUT`)."""
    return summary.startswith(f"## {LATEST_CUT}\n")


def _render(sections: dict[str, list[str]], latest_cut: bool = False) -> str:
    """The sections as the offline summary writes them; the latest request's headed
    :data:`LATEST_CUT` when it is ``latest_cut``."""
    parts = [
        f"## {LATEST_CUT if name == LATEST and latest_cut else name}\n" + "\n".join(sections[name])
        for name in _SECTIONS
        if sections.get(name)
    ]
    return "\n\n".join(parts) if parts else "## Current state\n- Nothing to summarize."
