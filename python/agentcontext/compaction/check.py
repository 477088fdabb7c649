"""Check before commit (#27): a summary is checked against the probe facts of the span it
replaces, by code that shares nothing with the summarizer — the facts come from
:mod:`agentcontext.probes` (``extract``, ``found_in``), the measuring stick of compaction,
never from the handoff extraction the offline summarizer writes from.

Checked kinds (:data:`CHECKED_KINDS`): the requests (the latest one, when it leaves, and the
opening of every real user message), user constraints (when the probes define that kind), paths
(in user text, tool inputs and assistant text) and exception names (in tool results). Only what
leaves is checked: a fact the raw recent messages kept beside the summary hold too need not be
in the summary.

A summary missing facts is repaired (:meth:`SpanCheck.repair`): the missing ones are appended as
one short section, :data:`SECTION`, within the summary's cap — the summary's own text made smaller
(:func:`~agentcontext.compaction.summarize.shrink_summary`) for at most :data:`REPAIR_SHARE` of the
cap — and those that do not fit are named by count, with how to get them back (the recall id in the
summary's header, the ``recall`` and ``conversation_search`` tools). An LLM summarizer asks its
model once more with the missing list first (:class:`~agentcontext.compaction.llm.LLMSummarizer`).

Bounded cost: the facts are those of the span's newest :data:`CHECK_TOKENS` tokens and of its
:data:`CHECK_ASKS` newest real user messages before them (the event counts the messages not
scanned; a summary's cap could not hold the facts of far more), and a fact found in the first
:data:`KEPT_TOKENS` tokens of what stays raw is not demanded. They are extracted once per span from a
reduced view of its messages (:func:`reduced_view`): tool results that cannot name an exception and the words of tool inputs and
assistant text that cannot be a path are left out (probe paths hold a slash or an extension dot;
probe exceptions end in ``Error``/``Exception`` or are a letter and four digits), user text is kept
whole. The probes of the view are the probes of the span, of the checked kinds (a test compares
them on the shared corpus).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from agentcontext._core import count_tokens, count_tokens_batch
from agentcontext.compaction.summarize import shrink_summary
from agentcontext.compaction.summary_text import CHECKED, counted
from agentcontext.probes import KINDS, OPENING, Probe, extract, fold, found_in, is_user_request, working_set_text

if TYPE_CHECKING:
    from agentcontext._core import Conversation
    from agentcontext.types import Encoding

__all__ = [
    "CHECKED_KINDS",
    "CHECK_TOKENS",
    "RECALL_TOOL",
    "REPAIR_SHARE",
    "SEARCH_TOOL",
    "SECTION",
    "SpanCheck",
    "reduced_view",
]

#: The probe kinds a summary is checked for, in the order missing ones are appended (a kind the
#: probes do not define is left out).
CHECKED_KINDS: tuple[str, ...] = tuple(
    k for k in ("latest_ask", "constraint", "user_message", "exception", "user_path", "call_path") if k in KINDS
)
#: The section a repair appends (one of the offline summary's sections, so a later compaction
#: merges it like the others).
SECTION = CHECKED
#: The newest tokens of a span whose every fact is checked (every user message is, however old):
#: extraction runs in Python, and a summary's cap could not hold the facts of far more anyway.
CHECK_TOKENS = 8_000
#: The first tokens of what stays raw whose facts need not be in the summary (the fill grows the
#: raw part back further; a fact kept farther away is still demanded, which only costs room).
KEPT_TOKENS = 4_000
#: The newest real user messages of the span older than its window whose facts are checked.
CHECK_ASKS = 100
#: At most this share of the summary's cap is taken from its own text for the missing facts.
REPAIR_SHARE = 0.25
#: The tools that give back what left the working set: the originals by recall id, and a search
#: over a session's log (:class:`~agentcontext.Recall`, :class:`~agentcontext.memory.ConversationSearch`).
RECALL_TOOL = "recall"
SEARCH_TOOL = "conversation_search"

#: Where an exception name may be: the words that hold one of these.
_EXCEPTION_HINT = re.compile(r"Error|Exception|[A-Z]\d{4}")
#: Tokens of the section's heading, and of the line that counts the facts not listed.
_SECTION_TOKENS = 12
_POINTER_TOKENS = 40
_POINTER = re.compile(r"^- \(\d[\d,]* more facts? of the replaced history")


def _exception_words(text: str) -> str:
    """The whitespace-separated words of ``text`` that may hold an exception name, joined by
    spaces (a name never spans whitespace, and the space before a word looks like the whitespace
    that was there)."""
    words: list[str] = []
    end = -1
    for m in _EXCEPTION_HINT.finditer(text):
        if m.start() < end:
            continue  # in the word already taken
        start = m.start()
        while start > 0 and not text[start - 1].isspace():
            start -= 1
        end = m.end()
        while end < len(text) and not text[end].isspace():
            end += 1
        words.append(text[start:end])
    return " ".join(words)


def _pathish(text: str) -> str:
    """The whitespace-separated words of ``text`` that hold a slash or a dot, joined by spaces:
    the same paths (as :func:`_exception_words`)."""
    return " ".join(w for w in text.split() if "/" in w or "." in w)


def _reduce_value(value: Any) -> Any:
    if isinstance(value, str):
        return _pathish(value)
    if isinstance(value, Mapping):
        return {k: _reduce_value(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_reduce_value(v) for v in value]
    return value


def _reduce_result(value: Any) -> Any:
    if isinstance(value, str):
        return _exception_words(value)
    if isinstance(value, list):
        return [_reduce_result(v) for v in value]
    if isinstance(value, Mapping):
        return {k: _reduce_result(v) for k, v in value.items()}
    return value


def _reduce_block(block: Any, role: str) -> Any:
    if not isinstance(block, Mapping):
        return block
    kind = block.get("type")
    if kind == "tool_result":
        return {**block, "content": _reduce_result(block.get("content"))}
    if kind in ("tool_use", "server_tool_use"):
        return {**block, "input": _reduce_value(block.get("input"))}
    if role != "user" and kind == "text" and isinstance(block.get("text"), str):
        return {**block, "text": _pathish(block["text"])}
    if kind == "thinking" and isinstance(block.get("thinking"), str):
        return {**block, "thinking": _pathish(block["thinking"])}
    return block


def _reduce_message(message: Mapping[str, Any]) -> dict[str, Any]:
    role = str(message.get("role"))
    out = dict(message)
    content = message.get("content")
    if role == "tool":
        out["content"] = _reduce_result(content)
    elif isinstance(content, str) and role != "user" and role != "system":
        out["content"] = _pathish(content)
    elif isinstance(content, list):
        out["content"] = [_reduce_block(b, role) for b in content]
    calls = message.get("tool_calls")
    if calls:
        out["tool_calls"] = [
            {**c, **{k: _reduce_value(c[k]) for k in ("arguments", "input") if k in c}} if isinstance(c, Mapping) else c
            for c in calls
        ]
    return out


def reduced_view(messages: Iterable[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """``messages`` (the library's format) with only what can yield a probe of the checked kinds:
    user text whole, tool results that may name an exception, and the words of tool inputs and
    assistant text that hold a slash or a dot (see the module docs)."""
    return [_reduce_message(m) for m in messages]


def _shown(probe: Probe) -> str:
    """A fact as a summary must hold it: a long latest request by its head and tail."""
    text = probe.text
    if probe.kind == "latest_ask" and len(text) > 2 * OPENING + 8:
        return f"{text[:OPENING]} [...] {text[-OPENING:]}"
    return text


def _line(probe: Probe) -> str:
    """How a missing fact is written into the section (``found_in`` then finds it)."""
    text = probe.text
    if probe.kind == "latest_ask":
        return f"- latest request: {_shown(probe)}"
    label = {"user_message": "user: ", "constraint": "constraint: "}.get(str(probe.kind), "")
    return f"- {label}{text}"


@dataclass
class SpanCheck:
    """The facts that leave with a span (:meth:`of`) and what a summary of it misses."""

    #: The checked probe facts of the span that the kept part does not hold, in repair order.
    facts: list[Probe]
    #: How many facts of the checked kinds the span holds (before those kept elsewhere are set aside).
    extracted: int = 0
    #: Messages of the span older than the window whose facts were not extracted (the newest
    #: :data:`CHECK_ASKS` user messages aside).
    unscanned: int = 0
    #: The span ``(start, stop)`` the facts are of.
    span: tuple[int, int] = (0, 0)

    @classmethod
    def of(cls, conv: Conversation, start: int, stop: int, *, window: int | None = None) -> SpanCheck:
        """The facts that leave when a summary replaces messages ``start:stop`` of ``conv`` and the
        messages from ``stop`` on stay: those of the span's newest messages up to ``window`` tokens
        (default :data:`CHECK_TOKENS`)
        and of its :data:`CHECK_ASKS` newest real user messages before them, not also found in
        the first :data:`KEPT_TOKENS` tokens of what stays; the span's latest request is demanded
        whole only when no real user request stays."""
        window = CHECK_TOKENS if window is None else window
        totals = conv.message_tokens()
        lo = _window_start(totals, start, stop, window)
        starts = [g for g, _ in conv.groups()]
        # The newest CHECK_ASKS group openings of the span before the window (each read once).
        asks = [conv[g] for g in [g for g in starts if start <= g < lo][-CHECK_ASKS:]]
        facts = extract(reduced_view([*asks, *conv.slice(lo, stop).to_jsonl()]), kinds=CHECKED_KINDS)
        hi = _window_stop(totals, stop, min(window, KEPT_TOKENS))
        kept = working_set_text(conv.slice(stop, hi).to_jsonl()) if hi > stop else ""
        asks_later = any(is_user_request(conv[g]) for g in starts if g >= stop)
        left = [
            p for p in facts
            if not (p.kind == "latest_ask" and asks_later) and not (kept and found_in(p, kept))
        ]  # fmt: skip
        order = {k: n for n, k in enumerate(CHECKED_KINDS)}
        # Newest first within a kind: a cap that forces a choice keeps the latest facts.
        left.sort(key=lambda p: (order[p.kind], -p.index))
        return cls(left, extracted=len(facts), unscanned=lo - start - len(asks), span=(start, stop))

    def missing(self, text: str) -> list[Probe]:
        """The facts ``text`` (a summary) does not hold, as :func:`found_in` reads it."""
        haystack = fold(text)
        return [p for p in self.facts if not found_in(p, haystack)]

    def missing_texts(self, text: str) -> list[str]:
        """:meth:`missing`, as the texts a model is asked to include (requests by their opening)."""
        return [_shown(p) for p in self.missing(text)]

    def repair(
        self,
        text: str,
        cap: int,
        *,
        encoding: Encoding = "o200k_base",
        stored: bool = True,
        counts: dict[str, int] | None = None,
        shrink: Callable[[str, int], str] | None = None,
    ) -> tuple[str, int, int, int]:
        """``text`` with the facts it misses appended as :data:`SECTION`, within ``cap`` tokens:
        the summary, how many facts it missed, how many were appended and how many are still
        missing (named by count, with the tools that give them back: ``stored`` says whether the
        originals are under a recall id). ``counts``: the tokens in ``encoding`` of texts counted
        already — the lines and the text of the offline summary's fit
        (:data:`~agentcontext.compaction.summarize.LINE_TOKENS`): making room fits the summary
        again without counting them again. ``shrink``: how the summary is made smaller (its
        harness's :meth:`~agentcontext.compaction.harness.Harness.shrink_summary`; default
        :func:`~agentcontext.compaction.summarize.shrink_summary`)."""
        missing = self.missing(text)
        if not missing:
            return text, 0, 0, 0
        known: dict[str, int] = {} if counts is None else counts

        def fit(summary: str, max_tokens: int) -> str:
            if shrink is not None:
                return shrink(summary, max_tokens)
            return shrink_summary(summary, max_tokens, encoding=encoding, counts=known)

        before = len(missing)
        body = _without_pointer(text)
        lines = [_line(p) for p in missing]
        costs = count_tokens_batch(lines, encoding=encoding)
        have = counted(body, encoding, known)
        need = sum(costs) + len(costs) + _SECTION_TOKENS
        shrank = False
        if have + need > cap:
            room = min(need, int(cap * REPAIR_SHARE))
            shrunk = fit(body, max(32, cap - room))
            if shrunk != body:
                # Making room may have cut facts the summary held: those are missing too.
                gone = set(missing)
                haystack = fold(shrunk)
                missing = [p for p in self.facts if p in gone or not found_in(p, haystack)]
                lines = [_line(p) for p in missing]
                costs = count_tokens_batch(lines, encoding=encoding)
                body, have, shrank = shrunk, counted(shrunk, encoding, known), True
        header = "" if body.rstrip().endswith(f"## {SECTION}") or f"\n## {SECTION}\n" in body else f"\n\n## {SECTION}"
        left = cap - have - count_tokens(header, encoding=encoding) - 2
        if sum(costs) + len(costs) > left:
            left -= _POINTER_TOKENS  # not all fit: room for the line that counts the rest
        chosen: list[str] = []
        for line, c in zip(lines, costs, strict=True):
            if c + 1 > left:
                break
            chosen.append(line)
            left -= c + 1
        appended, rest = len(chosen), len(lines) - len(chosen)
        if rest:
            where = (
                f"the {RECALL_TOOL} tool reads the originals by the id in the header, {SEARCH_TOOL} searches them"
                if stored
                else f"{SEARCH_TOOL} searches them in a session's log"
            )
            chosen.append(
                f"- ({rest:,} more fact{'s' if rest != 1 else ''} of the replaced history not listed: {where}.)"
            )
        out = body.rstrip() + header + "\n" + "\n".join(chosen)
        if counted(out, encoding, known) > cap:  # merges at line starts: cut what was appended
            out = fit(out, cap)
            rest = len(self.missing(out))
        elif rest:
            # Facts not listed may still be there (a path inside a longer one): count those missing.
            haystack = fold(out)
            rest = sum(1 for p in missing[appended:] if not found_in(p, haystack))
        if shrank and rest >= before and len(self.missing(out)) >= before:
            # Too small a cap: making room lost as much as it gained. The summary as written.
            return text, before, 0, before
        return out, before, appended, rest


def _window_start(totals: list[int], start: int, stop: int, window: int) -> int:
    """The first of the newest messages of ``start:stop`` that together take at most ``window``
    tokens (at least the last one)."""
    lo, used = stop, 0
    while lo > start and (used + totals[lo - 1] <= window or lo == stop):
        lo -= 1
        used += totals[lo]
    return lo


def _window_stop(totals: list[int], stop: int, window: int) -> int:
    hi, used = stop, 0
    while hi < len(totals) and (used + totals[hi] <= window or hi == stop):
        used += totals[hi]
        hi += 1
    return hi


def _without_pointer(text: str) -> str:
    """``text`` without the count lines an earlier repair wrote (they are written anew)."""
    if "more fact" not in text:
        return text
    return "\n".join(line for line in text.split("\n") if not _POINTER.match(line))
