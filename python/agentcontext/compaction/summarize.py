"""Summaries of older history: the protocol every summarizer follows, and the embedded offline
summarizer (no API key, deterministic), the default and the fallback when an LLM one fails."""

from __future__ import annotations

import re
from bisect import bisect_right
from dataclasses import dataclass, field
from functools import cached_property
from itertools import accumulate
from typing import Any, Protocol, runtime_checkable

from agentcontext._core import (
    _SUMMARY_SHARES,
    _SUMMARY_SIZES,
    Conversation,
    _fit_summary,
    _HandoffFacts,
    count_tokens,
    truncate,
)
from agentcontext.compaction.summary_text import (
    _SECTIONS,
    CARRIED,
    CHECKED,
    HANDOFF_PROMPT,
    LATEST,
    LATEST_CUT,
    SUMMARY_MARKER,
    USERS,
    _merge,
    _parse_sections,
    latest_cut,
    previous_summary_of,
    split_latest,
    strip_scratchpad,
    summary_message,
)
from agentcontext.compaction.summary_text import one_line as _one_line
from agentcontext.errors import ArgumentTypeError, OptionError
from agentcontext.types import Encoding, Handoff

__all__ = [
    "HANDOFF_PROMPT",
    "SUMMARY_MARKER",
    "OfflineSummarizer",
    "Summarizer",
    "SummaryRequest",
    "previous_summary_of",
    "shrink_summary",
    "strip_scratchpad",
    "summary_message",
]


@dataclass(frozen=True)
class SummaryRequest:
    """What a summarizer gets: the older history only (never the recent messages kept raw) —
    messages ``start:stop`` of ``source``, as :attr:`older`."""

    source: Conversation
    start: int
    stop: int
    #: A previous summary found in the older history, to be updated rather than nested.
    previous_summary: str | None
    #: The summary must fit this many tokens (and be smaller than what it replaces).
    max_tokens: int
    #: The handoff request to append as the last user message (tools disabled).
    prompt: str = HANDOFF_PROMPT
    encoding: Encoding = "o200k_base"
    #: Free-form hints (e.g. the staged part number).
    context: dict[str, Any] = field(default_factory=dict)
    #: The original conversation the range comes from, before tool results were cleared or cut
    #: (for summarizers with no window to respect, like the offline one, which extracts evidence
    #: from it).
    original: Conversation | None = None
    #: Extra focus given by the user for this summary (``/compact focus on ...``); a model is told
    #: to follow it, the offline summarizer extracts the same facts whatever it says.
    instructions: str | None = None
    #: The latest request is kept whole (verbatim) when it takes at most this many tokens — a
    #: quarter of the working set's budget, given by the ladder — even beyond its share of
    #: ``max_tokens`` (0: its share only). Summarizers that extract (the offline one) follow it.
    request_room: int = 0
    #: Where the latest request's original text is stored, for the marker of a request cut to
    #: head + tail (None: the marker says the original is not stored).
    request_recall_id: str | None = None
    #: The agent's system prompt and tools as its requests carry them (None: not known), for a
    #: summarizer that sends the agent's own cached prefix (:class:`~agentcontext.LLMSummarizer`).
    system: str | None = None
    tools: list[dict[str, Any]] | None = None

    @cached_property
    def older(self) -> Conversation:
        """The older history as a conversation of its own."""
        return self.source.slice(self.start, self.stop)

    @cached_property
    def tokens(self) -> int:
        """Tokens of the older history."""
        return sum(self.source.message_tokens()[self.start : self.stop])


@runtime_checkable
class Summarizer(Protocol):
    """Anything that turns older history into a handoff summary. Raise, or return an empty
    string, to signal failure; the compactor then falls back as its policy says."""

    def summarize(self, request: SummaryRequest) -> str: ...


# ---------------------------------------------------------------------------------------------
# The offline summarizer.

#: Shares of the summary cap: the latest request (head and tail when long), every earlier user
#: message (latest first, each head and tail when long), and earlier summaries written by other
#: harnesses, carried forward. What is left goes to the other sections, one line from each in
#: turn, most recent first.
LATEST_SHARE: float = _SUMMARY_SHARES["LATEST_SHARE"]
#: The latest request gets at least this many tokens of the cap (all of a smaller cap), so that
#: its head and tail both say something.
LATEST_MIN_TOKENS: int = _SUMMARY_SIZES["LATEST_MIN_TOKENS"]
USERS_SHARE: float = _SUMMARY_SHARES["USERS_SHARE"]
CARRIED_SHARE: float = _SUMMARY_SHARES["CARRIED_SHARE"]
#: The share of the cap the files modified and read take before the other facts (what a small
#: budget loses first otherwise: the artifact trail).
FILES_SHARE: float = _SUMMARY_SHARES["FILES_SHARE"]
#: ... and at least this many tokens (two short files and their heading) in a smaller cap, at
#: most a third of it.
FILES_MIN_TOKENS: int = _SUMMARY_SIZES["FILES_MIN_TOKENS"]
FILES_MODIFIED = "Files modified"
FILES_READ = "Files read"
#: Sections of bare facts (a path, an identifier per line): a fact the summary already names
#: verbatim elsewhere is not listed again.
_NAMED_ONCE = frozenset({"Files read", "Paths named", "Identifiers"})
#: Sections of bare facts not listed when the task ledger beside the summary names them.
_HELD_ONCE = _NAMED_ONCE | {"Files modified"}
_WORD_BREAK = re.compile(r"[\s\"'`()\[\]{}<>,;]+")
#: A user message in the list is cut to this many characters (head and tail), and to fewer, down
#: to USER_LINE_MIN_CHARS, when its share of the cap has less room left.
USER_LINE_CHARS: int = _SUMMARY_SIZES["USER_LINE_CHARS"]
USER_LINE_MIN_CHARS: int = _SUMMARY_SIZES["USER_LINE_MIN_CHARS"]
#: An earlier user message with no room left for its head and tail keeps its opening, this many
#: characters, before any other summary content (every request the user made, named).
USER_OPENING_CHARS: int = _SUMMARY_SIZES["USER_OPENING_CHARS"]
#: The most tokens such an opening line takes (the ladder makes room for them).
OPENING_TOKENS = 24
#: An earlier user message that constrains or corrects the work ("never ...", "don't touch ...",
#: "use X not Y"): kept beyond the share of the user messages while the cap has room.
_CONSTRAINT = re.compile(
    r"\b(?:never|always|do not|don'?t|must not|mustn'?t|should not|shouldn'?t|avoid|instead of|"
    r"rather than|not allowed|no longer|stop)\b|\buse \S+(?: \S+)? not\b"
)
#: Words one of which every match of :data:`_CONSTRAINT` holds (a quick test before it).
_CONSTRAINT_WORDS = ("never", "always", "not", "n't", "avoid", "instead", "rather", "no longer", "stop")
#: Whether a text holds one of :data:`_CONSTRAINT_WORDS` (one search instead of one per word).
_CONSTRAINT_WORD = re.compile("|".join(re.escape(w) for w in _CONSTRAINT_WORDS))
#: Tokens a request kept whole leaves at least for the rest of the summary.
_REQUEST_SLACK: int = _SUMMARY_SIZES["REQUEST_SLACK"]


class OfflineSummarizer:
    """A structured handoff built from the older history by extraction, with no model
    (deterministic). Sections: the latest request verbatim (head and tail when long), every
    earlier user message (latest first; long ones head and tail), the current state, summaries that
    other harnesses wrote earlier (Claude Code, pi, Codex), carried forward, files modified and
    read, every other path named, commands with their last outcome, errors with where they came
    from and whether they were resolved, tests with their last status, identifiers (test ids,
    error types, URLs, branches, commit hashes), decisions, open work and the next step.

    A previous summary of this library is merged section by section, not nested. The summary
    fits ``max_tokens``: the latest request is whole when it takes at most the request's
    ``request_room`` (a quarter of the budget, which the ladder makes room for), else it gets
    up to :data:`LATEST_SHARE` of it, but at least :data:`LATEST_MIN_TOKENS` (all of a smaller
    cap), cut to head + tail with a marker naming ``request_recall_id``; the earlier user
    messages up to :data:`USERS_SHARE`, then their older constraints and corrections ("never
    ...", "use X not Y") whole while the cap has room, carried summaries up to :data:`CARRIED_SHARE`, and
    the rest is shared by the other sections one line from each in turn, most recent first, so
    that when the cap forces a choice every section keeps its latest facts."""

    #: Extraction has no context window: older history is never split into stages for it.
    window_bound = False

    def summarize(self, request: SummaryRequest) -> str:
        # The ladder's extraction of this span, when it has one, kept in the core: its tests and
        # decisions (thousands of lines in a long history) go to the fit without leaving it.
        made = request.context.get("handoff")
        facts: _HandoffFacts | None = None
        if (
            made is not None
            and made[:2] == (request.start, request.stop)
            and request.original is not None
            and isinstance(made[2], _HandoffFacts)
        ):
            facts = made[2]
            h = facts.handoff(texts=False)
        else:
            h = (request.original or request.source).handoff(request.start, request.stop)
        previous = _parse_sections(previous_summary_of(request.previous_summary)) if request.previous_summary else {}
        carried: list[str] = []
        # The latest request of the newest summary of this library (as carried), and whether cut.
        earlier_text = previous_summary_of(request.previous_summary or "")
        earlier, earlier_cut = split_latest(earlier_text)[0], latest_cut(earlier_text)
        for text in h["previous_summaries"]:
            if text.startswith(SUMMARY_MARKER):
                for name, lines in _parse_sections(previous_summary_of(text)).items():
                    previous[name] = _merge(previous.get(name, []), lines)
                found = split_latest(previous_summary_of(text))[0]
                if found:
                    earlier, earlier_cut = found, latest_cut(previous_summary_of(text))
            else:
                carried.append(text)
        previous.pop(LATEST, None)
        requests = [f"- {text}" for _, text in h["user_requests"][1:]]
        latest = h["user_requests"][0][1] if h["user_requests"] else None
        cut = False
        if latest and earlier:
            # The previous summary's latest request is now an earlier one.
            requests.append(f"- {' '.join(earlier.split())}")
        elif latest is None and earlier:
            # No request since: the previous summary's latest request is still the latest.
            latest, cut = earlier, earlier_cut
        state = []
        modified, read = _trail(h)
        ok = sum(1 for c in h["commands"] if c["ok"])
        state.append(
            f"- {h['messages']:,} messages and {h['tool_calls']:,} tool calls summarized; "
            f"{len(modified)} files modified; {ok} of {len(h['commands'])} distinct commands last succeeded."
        )
        unresolved = [e for e in h["errors"] if not e["resolved"]]
        if unresolved:
            state.append(f"- Unresolved: {_one_line(unresolved[-1]['text'], 200)}")
        shown = {*read, *modified}
        idents = [*h["identifiers"], *h["references"]]
        sections: dict[str, list[str]] = {
            "Current state": state,
            USERS: requests,
            CARRIED: [f"- {t}" for t in reversed(carried)],
            "Files modified": [f"- {p}" for p in reversed(modified)],
            "Files read": [f"- {p}" for p in reversed(read)],
            "Paths named": [f"- {p}" for p in reversed(h["paths"]) if p not in shown],
            "Commands and their last outcome": [
                f"- `{c['command']}` → {c['outcome']}{'' if c['ok'] else ' (failed)'}" for c in reversed(h["commands"])
            ],
            "Errors": [
                f"- {e['text']}{' — resolved later' if e['resolved'] else ' — not resolved'}"
                for e in reversed(h["errors"])
            ],
            "Tests (last status)": [f"- {name}: {status}" for name, status in reversed(h["tests"])],
            "Identifiers": [f"- {i}" for i in reversed(idents)],
            "Decisions": [f"- {d}" for d in reversed(h["decisions"])],
            "Open work": [f"- {t}" for t in reversed(h["todos"])],
            "Next step": [f"- {_one_line(h['last_assistant'], 400)}"] if h["last_assistant"] else [],
            CHECKED: [],  # only what the check appended to a previous summary (merged below)
        }
        for name in _SECTIONS[1:]:
            sections[name] = _merge(sections[name], previous.get(name, []))
        return _fit(
            latest, sections, request.max_tokens, request.encoding,
            request_room=request.request_room, recall_id=request.request_recall_id,
            held=request.context.get("held"), counts=request.context.get(LINE_TOKENS), facts=facts,
            latest_cut=cut,
        )  # fmt: skip


def _trail(h: Handoff) -> tuple[list[str], list[str]]:
    """The files modified and the files only read, oldest first: the handoff's file tools' and
    the artifact trail's (which also sees shell commands: ``cat > x.py``, ``sed -i``, ``rm``)."""
    changed = [a["path"] for a in h["artifacts"] if any(op != "read" for op in a["ops"])]
    modified = list(dict.fromkeys([*h["files_modified"], *changed]))
    done = set(modified)
    read = [p for p in dict.fromkeys([*h["files_read"], *(a["path"] for a in h["artifacts"])]) if p not in done]
    return modified, read


def shrink_summary(
    summary: str,
    max_tokens: int,
    *,
    encoding: Encoding = "o200k_base",
    request_room: int = 0,
    counts: dict[str, int] | None = None,
) -> str:
    """``summary`` within ``max_tokens``, for a ladder that must make an accepted summary smaller
    (the room beside the last round). A summary in the offline summarizer's sections is fitted
    again section by section — the latest request first (head and tail, see
    :class:`OfflineSummarizer`), then the other sections' most recent lines — so the request
    survives (whole when it takes at most ``request_room`` tokens and fits); any other text is
    cut to head (70%) + marker + tail. Unchanged when it fits. ``counts``: the tokens of texts
    counted already in ``encoding`` (see :data:`LINE_TOKENS`), given the summary this fit returns."""
    tokens = counts.get(summary) if counts is not None else None
    if tokens is None:
        tokens = count_tokens(summary, encoding=encoding)
    if tokens <= max_tokens:
        return summary
    if not summary.startswith("## ") or not any(summary.startswith(f"## {n}\n") for n in (*_SECTIONS, LATEST_CUT)):
        return truncate(
            summary, max_tokens, unit="tokens", strategy="head_tail", head_share=0.7, encoding=encoding
        ).text
    latest, rest = split_latest(summary)
    sections = {name: lines for name, lines in _parse_sections(rest).items() if name in _SECTIONS}
    for name in _SECTIONS[1:]:
        sections.setdefault(name, [])
    return _fit(
        latest, sections, max_tokens, encoding, request_room=request_room, counts=counts,
        latest_cut=latest_cut(summary),
    )  # fmt: skip


#: Characters a token holds at most in prose and paths: sections of more characters than this
#: many per token of the cap surely do not fit it (the core's fit holds the same constants).
_CHARS_PER_TOKEN = 6
#: Tokens of a section's heading ("## Name" and the blank line before it).
_HEADER_TOKENS = 6
#: The key of :attr:`SummaryRequest.context` under which the ladder gives the offline summarizer a
#: dict of texts counted (text -> tokens in the request's encoding) that its fit fills with the
#: summary it returns; the acceptance and the check's repair
#: (:meth:`~agentcontext.compaction.check.SpanCheck.repair`) read the summary's count from it
#: rather than counting it again.
LINE_TOKENS = "line_tokens"


def _constraints(lines: list[str]) -> list[bool]:
    """Which user message lines constrain or correct the work (:data:`_CONSTRAINT`): the short
    ones (at most :data:`USER_LINE_CHARS`, lower-cased) that match it; a long one is a request.
    The lines holding one of :data:`_CONSTRAINT_WORDS` are found by one search per word over them
    all (joined by line breaks, which no word holds), then matched one by one."""
    lows = [line.lower() if len(line) <= USER_LINE_CHARS else "" for line in lines]  # lower() never shortens
    starts = list(accumulate((len(low) + 1 for low in lows), initial=0))
    joined = "\n".join(lows)
    found: set[int] = set()
    for word in _CONSTRAINT_WORDS:
        i = joined.find(word)
        while i >= 0:
            k = bisect_right(starts, i) - 1
            found.add(k)
            i = joined.find(word, starts[k + 1])  # the next line on
    out = [False] * len(lines)
    for k in found:
        out[k] = len(lows[k]) <= USER_LINE_CHARS and _CONSTRAINT.search(lows[k]) is not None
    return out


#: A cap the core takes for any larger one (no text has this many tokens): past 63 bits an int
#: does not cross into the core.
_NO_CAP = 2**62


def _fit(
    latest: str | None,
    sections: dict[str, list[str]],
    cap: int,
    enc: Encoding,
    *,
    request_room: int = 0,
    recall_id: str | None = None,
    held: str | None = None,
    counts: dict[str, int] | None = None,
    facts: _HandoffFacts | None = None,
    latest_cut: bool = False,
) -> str:
    """The summary within ``cap`` tokens (see :class:`OfflineSummarizer` for the shares), fitted
    by the core (``_core._fit_summary``): the latest request first (whole when it takes at most
    ``request_room`` tokens and fits, else head + marker + tail naming ``recall_id`` within its
    share; headed :data:`~agentcontext.compaction.summary_text.LATEST_CUT` when cut, or when
    ``latest_cut`` says it was cut already), the user messages within their share, then their older constraints and corrections
    (whole, newest first) and the openings (:data:`USER_OPENING_CHARS`) of the others while the
    cap has room, carried summaries, the current state, the files touched within their share
    (:data:`FILES_SHARE`), the next step, then the other sections one line from each in turn;
    a bare fact the summary already names takes no line, nor, when the sections are over the cap,
    one that ``held`` (the task ledger beside the summary) names. Per-line counts miss a few merges
    at line starts: the last lines taken give way, and the text is cut (head and tail) when still
    over. ``counts`` (:data:`LINE_TOKENS`) receives the tokens of the summary returned. ``facts``:
    the handoff (in the core) whose tests and decisions, written there, come before the lines of
    those sections in ``sections`` (the previous summary's)."""
    if cap < 0:
        # The core fits no negative cap: refused by the cuts that refused it (the latest request's
        # in its room, a third of the cap, then the text's).
        if latest:
            kept = "\n".join(line for line in latest.splitlines() if line.strip())
            truncate(
                kept, int(cap * LATEST_SHARE), unit="tokens", strategy="head_tail", encoding=enc, recall_id=recall_id
            )
        truncate("", cap, unit="tokens", encoding=enc)
    for name, value in (("cap", cap), ("request_room", request_room)):
        if isinstance(value, bool) or not isinstance(value, int):
            raise ArgumentTypeError(f"the summary's {name} must be an int of tokens, not {type(value).__name__}")
    users = sections.get(USERS, [])
    try:
        text, tokens = _fit_summary(
            latest, [sections.get(name, []) for name in _SECTIONS], min(cap, _NO_CAP), encoding=enc,
            request_room=min(request_room, _NO_CAP), recall_id=recall_id, held=held,
            constraints=_constraints(users), facts=facts, latest_cut=latest_cut,
        )  # fmt: skip
    except UnicodeEncodeError as exc:
        raise OptionError(f"a text of the summary is not valid Unicode ({exc.reason})") from exc
    if tokens is None:
        # Still over with the first sections only: cut the text itself, with a marker.
        return truncate(text, cap, unit="tokens", strategy="head_tail", head_share=0.8, encoding=enc).text
    if counts is not None:
        counts[text] = tokens
    return text
