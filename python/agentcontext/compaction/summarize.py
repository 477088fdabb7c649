"""Summaries of older history: the protocol every summarizer follows, and the embedded offline
summarizer (no API key, deterministic), the default and the fallback when an LLM one fails."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any, Protocol, runtime_checkable

from agentcontext._core import Conversation, count_tokens, truncate
from agentcontext.compaction.summary_text import (
    _SECTIONS,
    CARRIED,
    CHECKED,
    HANDOFF_PROMPT,
    LATEST,
    SUMMARY_MARKER,
    USERS,
    _merge,
    _parse_sections,
    _render,
    counted,
    previous_summary_of,
    split_latest,
    strip_scratchpad,
    summary_message,
)
from agentcontext.compaction.summary_text import head_tail as _head_tail
from agentcontext.compaction.summary_text import one_line as _one_line
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
LATEST_SHARE = 1 / 3
#: The latest request gets at least this many tokens of the cap (all of a smaller cap), so that
#: its head and tail both say something.
LATEST_MIN_TOKENS = 128
USERS_SHARE = 0.35
CARRIED_SHARE = 0.2
#: The share of the cap the files modified and read take before the other facts (what a small
#: budget loses first otherwise: the artifact trail).
FILES_SHARE = 0.15
#: ... and at least this many tokens (two short files and their heading) in a smaller cap, at
#: most a third of it.
FILES_MIN_TOKENS = 24
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
USER_LINE_CHARS = 1_200
USER_LINE_MIN_CHARS = 90
#: An earlier user message with no room left for its head and tail keeps its opening, this many
#: characters, before any other summary content (every request the user made, named).
USER_OPENING_CHARS = 80
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
_REQUEST_SLACK = 16


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
        made = request.context.get("handoff")  # the ladder's extraction of this span, when it has one
        if made is not None and made[:2] == (request.start, request.stop) and request.original is not None:
            h = made[2]
        else:
            h = (request.original or request.source).handoff(request.start, request.stop)
        previous = _parse_sections(previous_summary_of(request.previous_summary)) if request.previous_summary else {}
        carried: list[str] = []
        # The latest request of the newest summary of this library, verbatim.
        earlier = split_latest(previous_summary_of(request.previous_summary or ""))[0]
        for text in h["previous_summaries"]:
            if text.startswith(SUMMARY_MARKER):
                for name, lines in _parse_sections(previous_summary_of(text)).items():
                    previous[name] = _merge(previous.get(name, []), lines)
                earlier = split_latest(previous_summary_of(text))[0] or earlier
            else:
                carried.append(text)
        previous.pop(LATEST, None)
        requests = [f"- {text}" for _, text in h["user_requests"][1:]]
        latest = h["user_requests"][0][1] if h["user_requests"] else None
        if latest and earlier:
            # The previous summary's latest request is now an earlier one.
            requests.append(f"- {' '.join(earlier.split())}")
        elif latest is None and earlier:
            # No request since: the previous summary's latest request is still the latest.
            latest = earlier
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
            held=request.context.get("held"), counts=request.context.get(LINE_TOKENS),
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
    cut to head (70%) + marker + tail. Unchanged when it fits. ``counts``: the tokens of lines
    counted already in ``encoding`` (see :data:`LINE_TOKENS`), grown by this fit."""
    tokens = counts.get(summary) if counts is not None else None
    if tokens is None:
        tokens = count_tokens(summary, encoding=encoding)
    if tokens <= max_tokens:
        return summary
    if not summary.startswith("## ") or not any(summary.startswith(f"## {n}\n") for n in _SECTIONS):
        return truncate(
            summary, max_tokens, unit="tokens", strategy="head_tail", head_share=0.7, encoding=encoding
        ).text
    latest, rest = split_latest(summary)
    sections = {name: lines for name, lines in _parse_sections(rest).items() if name in _SECTIONS}
    for name in _SECTIONS[1:]:
        sections.setdefault(name, [])
    return _fit(latest, sections, max_tokens, encoding, request_room=request_room, counts=counts)


#: Characters a token holds at most in prose and paths: sections of more characters than this
#: many per token of the cap surely do not fit it.
_CHARS_PER_TOKEN = 6
#: Tokens of a section's heading ("## Name" and the blank line before it).
_HEADER_TOKENS = 6
#: The key of :attr:`SummaryRequest.context` under which the ladder gives the offline summarizer a
#: dict of line tokens (text -> tokens in the request's encoding) that its fit fills; the check's
#: repair (:meth:`~agentcontext.compaction.check.SpanCheck.repair`) fits the summary again with
#: it, so the lines the first fit counted are not counted a second time.
LINE_TOKENS = "line_tokens"


class _Fitter:
    """One fit of the offline summary's sections within a cap: the lines chosen per section, the
    lines rendered so far (only when considered: most never are once the cap is met; a line is
    counted only when it could be taken), and what the summary says so far (a fact it already
    names verbatim takes no second line)."""

    def __init__(self, sections: dict[str, list[str]], enc: Encoding, counts: dict[str, int] | None = None) -> None:
        self.sections, self.enc = sections, enc
        #: Tokens of each line text counted (shared with a later fit of the same summary).
        self.counts: dict[str, int] = {} if counts is None else counts
        self.chosen: dict[str, list[str]] = {name: [] for name in _SECTIONS}
        self.rendered: dict[str, dict[int, str]] = {name: {} for name in _SECTIONS}
        #: What the summary says so far: the texts, and (when :meth:`says` looks) all but the
        #: :attr:`unsaid` ones on lines of one string.
        self.texts: list[str] = []
        self.said = ""
        self.unsaid: list[str] = []
        self.held: set[str] = set()
        #: Where the last :meth:`take` stopped (the first line it did not take).
        self.stopped = 0
        #: The position in its section of every line chosen, and where each section goes on.
        self.keys: dict[str, list[int]] = {name: [] for name in _SECTIONS}
        self.next: dict[str, int] = {}

    def line(self, name: str, k: int) -> tuple[str, int]:
        """Line ``k`` of section ``name`` as the summary writes it, and its tokens (the newline
        included)."""
        text = self.line_text(name, k)
        return text, self.count(text) + 1  # +1: the newline

    def line_text(self, name: str, k: int) -> str:
        """Line ``k`` of ``name`` as the summary writes it, not counted (a line skipped as
        redundant or taken already costs no count)."""
        done = self.rendered[name]
        if (text := done.get(k)) is None:
            text = done[k] = _head_tail(self.sections[name][k], USER_LINE_CHARS if name in (USERS, CARRIED) else 600)
        return text

    def count(self, text: str) -> int:
        """Tokens of a line (or a rendered summary), once per fit or the fits sharing :attr:`counts`."""
        return counted(text, self.enc, self.counts)

    def say(self, text: str) -> None:
        self.texts.append(text)
        self.unsaid.append(text)

    def says(self, fact: str) -> bool:
        """Whether what the summary says so far names ``fact`` as a word of it (between
        :data:`_WORD_BREAK` s, as it is or less its trailing ".:;!?"): found where it occurs
        rather than by splitting everything said into words."""
        if not fact:
            return any("" in _words(text) for text in self.texts)
        if _WORD_BREAK.search(fact):
            return False  # no word holds a break
        if self.unsaid:
            # A line break breaks words: none runs from one text into the next.
            self.said = "\n".join([self.said, *self.unsaid])
            self.unsaid.clear()
        said, n = self.said, len(self.said)
        # A fact that ends in ".:!?" is only a word as it is, not one less its trailing ".:;!?".
        stripped = not fact.endswith((".", ":", "!", "?"))
        i = said.find(fact)
        while i >= 0:
            if i == 0 or _WORD_BREAK.match(said, i - 1):
                j = i + len(fact)
                while stripped and j < n and said[j] in ".:!?":
                    j += 1
                if j == n or _WORD_BREAK.match(said, j):
                    return True
            i = said.find(fact, i + 1)
        return False

    def hold(self, text: str) -> None:
        """Words the working set holds beside the summary (:data:`_HELD_ONCE` lines naming one are
        left out)."""
        words = _WORD_BREAK.split(text)
        self.held.update(words)
        self.held.update([word.rstrip(".:;!?") for word in words])

    def redundant(self, name: str, text: str) -> bool:
        if not text.startswith("- "):
            return False
        return (name in _NAMED_ONCE and self.says(text[2:])) or (name in _HELD_ONCE and text[2:] in self.held)

    def take(self, name: str, limit: int) -> int:
        """Lines of ``name`` in order while they fit ``limit`` tokens; the tokens taken. A user
        message or carried summary too long for the room left is cut shorter (head and tail,
        at least :data:`USER_LINE_MIN_CHARS`) rather than left out."""
        chosen, header = self.chosen, _HEADER_TOKENS
        spent = 0
        self.stopped = len(self.sections.get(name, []))
        for k in range(len(self.sections.get(name, []))):
            text, c = self.line(name, k)
            extra = c + (header if not chosen[name] else 0)
            if spent + extra > limit and name in (USERS, CARRIED):
                left = limit - spent - (header if not chosen[name] else 0)
                chars = left * 3
                if chars < USER_LINE_MIN_CHARS:
                    self.stopped = k
                    break
                text = _head_tail(self.sections[name][k], chars)
                c = self.count(text) + 1
                extra = c + (header if not chosen[name] else 0)
            if spent + extra > limit:
                self.stopped = k
                break
            chosen[name].append(text)
            self.keys[name].append(k)
            self.say(text)
            spent += extra
        self.next[name] = self.stopped
        return spent

    def take_constraints(self, limit: int) -> int:
        """After :meth:`take` of the user messages stopped at its share: the older short ones
        (at most :data:`USER_LINE_CHARS`) that constrain or correct the work
        (:data:`_CONSTRAINT`), whole, newest first, while they fit ``limit`` tokens; the tokens
        taken."""
        spent = 0
        lines = self.sections.get(USERS, [])
        for k in range(self.stopped, len(lines)):
            low = lines[k].lower()
            if len(low) > USER_LINE_CHARS or not _CONSTRAINT_WORD.search(low) or not _CONSTRAINT.search(low):
                continue  # a long message is a request, not a constraint; it had its share
            text, c = self.line(USERS, k)
            extra = c + (_HEADER_TOKENS if not self.chosen[USERS] else 0)
            if spent + extra <= limit:
                self.chosen[USERS].append(text)
                self.keys[USERS].append(k)
                self.say(text)
                spent += extra
        return spent

    def take_openings(self, limit: int) -> int:
        """After :meth:`take` and :meth:`take_constraints`: the opening (:data:`USER_OPENING_CHARS`)
        of every earlier user message not taken, newest first, while they fit ``limit`` tokens;
        the tokens taken."""
        spent = 0
        taken = set(self.keys[USERS])
        for k, raw in enumerate(self.sections.get(USERS, [])):
            if k in taken:
                continue
            text = f"- {_one_line(raw.removeprefix('- '), USER_OPENING_CHARS)}"
            extra = self.count(text) + 1 + (_HEADER_TOKENS if not self.chosen[USERS] else 0)
            if spent + extra > limit:
                break
            self.chosen[USERS].append(text)
            self.keys[USERS].append(k)
            self.say(text)
            spent += extra
        return spent

    def take_files(self, limit: int, *, dry: bool = False) -> int:
        """The artifact trail before the other facts: the files modified, then the files read,
        newest first, each named once (none the ledger names), while they fit ``limit`` tokens;
        the tokens taken. The other sections' turns go on after the last file taken. ``dry``:
        the tokens it would take, none taken."""
        spent = 0
        for name in (FILES_MODIFIED, FILES_READ):
            lines, header = self.sections.get(name, []), _HEADER_TOKENS if not self.chosen[name] else 0
            for k in range(len(lines)):
                if self.redundant(name, self.line_text(name, k)):
                    continue
                text, c = self.line(name, k)
                if spent + c + header > limit:
                    if not dry:
                        self.next[name] = k
                    return spent
                spent, header = spent + c + header, 0
                if not dry:
                    self.chosen[name].append(text)
                    self.keys[name].append(k)
                    self.say(text)
            if not dry:
                self.next[name] = len(lines)
        return spent

    def take_in_turns(self, rest: list[str], used: int, cap: int) -> int:
        """One line from each of the sections ``rest`` in turn, while anything fits ``cap``
        (``used`` taken already); the tokens used then."""
        chosen, sections = self.chosen, self.sections
        position = {name: self.next.get(name, len(chosen[name])) for name in rest}
        taken = {name: set(self.keys[name]) for name in rest}
        # The sections with lines left (a pass that takes nothing from any of them ends the turns).
        live = [name for name in rest if position[name] < len(sections.get(name, []))]
        while live and used < cap:
            for name in live:
                if used >= cap:
                    break
                k = position[name]
                if k in taken[name] or self.redundant(name, self.line_text(name, k)):
                    position[name] = k + 1
                    continue
                text, c = self.line(name, k)
                extra = c + (_HEADER_TOKENS if not chosen[name] else 0)
                if used + extra <= cap:
                    chosen[name].append(text)
                    self.keys[name].append(k)
                    self.say(text)
                    used += extra
                    position[name] = k + 1
                else:
                    position[name] = len(sections[name])  # this section is done
            live = [name for name in live if position[name] < len(sections[name])]
        return used


def _words(text: str) -> set[str]:
    """The words of ``text`` between :data:`_WORD_BREAK` s, and each less its trailing ".:;!?"."""
    words = _WORD_BREAK.split(text)
    # A word that does not end in one of these is its own stripped form: in the set already.
    return {*words, *[word.rstrip(".:;!?") for word in words if word.endswith((".", ":", ";", "!", "?"))]}


def _latest_kept(latest: str, cap: int, enc: Encoding, request_room: int, recall_id: str | None, files: int = 0) -> str:
    """The latest request as the summary carries it: whole when it takes at most
    ``request_room`` tokens and fits the cap (leaving :data:`_REQUEST_SLACK`), else head + marker
    + tail within its share of the cap (a third, at least :data:`LATEST_MIN_TOKENS`; a cap that
    small is the request's but for the ``files`` tokens the files touched take: their names say
    more than the middle of a request cut anyway), the marker naming ``recall_id`` (or saying it
    is not stored, in a room of at least twice :data:`LATEST_MIN_TOKENS`)."""
    tokens = count_tokens(latest, encoding=enc)
    if tokens <= request_room and tokens + _REQUEST_SLACK <= cap:
        return latest
    room = max(int(cap * LATEST_SHARE), min(LATEST_MIN_TOKENS, cap - files))
    latest = "\n".join(line for line in latest.splitlines() if line.strip())  # cut: blank lines say nothing
    # In a smaller room the head and tail say more than "not stored" (the header says it too).
    return truncate(
        latest, room, unit="tokens", strategy="head_tail", encoding=enc,
        recall_id=recall_id, not_stored=recall_id is None and room >= 2 * LATEST_MIN_TOKENS,
    ).text  # fmt: skip


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
) -> str:
    """The summary within ``cap`` tokens (see :class:`OfflineSummarizer` for the shares);
    ``held``: what the working set holds beside the summary (the task ledger), whose paths and
    identifiers take no line when the sections are over the cap (with room, a summary names
    them too); ``counts``: line tokens counted already (:data:`LINE_TOKENS`)."""
    fit = _Fitter(sections, enc, counts)
    if held and sum(sum(map(len, lines)) for lines in sections.values()) > cap * _CHARS_PER_TOKEN:
        fit.hold(held)
    chosen = fit.chosen
    if latest:
        # Verbatim, its blank lines included (one entry: the section is the request).
        files = fit.take_files(_files_room(cap), dry=True)
        chosen[LATEST] = [_latest_kept(latest, cap, enc, request_room, recall_id, files).strip()]
    used = fit.count(_render(chosen))
    for kept_line in chosen[LATEST]:
        fit.say(kept_line)
    # Every user message (and what earlier harnesses summarized) before the rest: the latest
    # first within their share, then the older constraints and corrections while the cap has room.
    used += fit.take(USERS, max(0, min(int(cap * USERS_SHARE), cap - used)))
    used += fit.take_constraints(max(0, cap - used))
    used += fit.take_openings(max(0, cap - used))
    used += fit.take(CARRIED, max(0, min(int(cap * CARRIED_SHARE), cap - used)))
    used += fit.take("Current state", max(0, cap - used))
    # The artifact trail within its share (before the next step: in a small cap the files the
    # agent touched are what a later turn cannot find again), then the rest in turns.
    used += fit.take_files(max(0, min(_files_room(cap), cap - used)))
    used += fit.take("Next step", max(0, cap - used))
    # The rest in turns: one line from each section, most recent first, while anything fits.
    rest = [n for n in _SECTIONS[1:] if n not in ("Current state", "Next step", CARRIED)]
    fit.take_in_turns(rest, used, cap)
    # The older constraints were taken before later lines of their section: newest first again.
    chosen[USERS] = [t for _, t in sorted(zip(fit.keys[USERS], chosen[USERS], strict=True))]
    text = _render(chosen)
    over = fit.count(text) > cap
    # Per-line counts miss a few merges at line starts: the last lines taken give way first.
    for name in reversed(_SECTIONS[2:]):
        while over and chosen[name]:
            chosen[name].pop()
            text = _render(chosen)
            over = fit.count(text) > cap
    if over:
        # Per-line counts miss a few merges at line starts: cut the text itself, with a marker.
        return truncate(text, cap, unit="tokens", strategy="head_tail", head_share=0.8, encoding=enc).text
    return text


def _files_room(cap: int) -> int:
    """The tokens the files touched take of a summary's ``cap`` before the other facts."""
    return max(int(cap * FILES_SHARE), min(FILES_MIN_TOKENS, cap // 3))
