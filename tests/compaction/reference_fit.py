"""The offline summary's fit as Python wrote it before it moved into the core
(``agentcontext._core._fit_summary``): the reference the core's fit is compared with, to the byte."""

# ruff: noqa
# mypy: ignore-errors
from __future__ import annotations

from agentcontext._core import _HandoffFacts, count_tokens, truncate
from agentcontext.compaction.summarize import (
    _CHARS_PER_TOKEN,
    _CONSTRAINT,
    _CONSTRAINT_WORD,
    _HEADER_TOKENS,
    _HELD_ONCE,
    _NAMED_ONCE,
    _REQUEST_SLACK,
    _WORD_BREAK,
    CARRIED_SHARE,
    FILES_MIN_TOKENS,
    FILES_MODIFIED,
    FILES_READ,
    FILES_SHARE,
    LATEST_MIN_TOKENS,
    LATEST_SHARE,
    USER_LINE_CHARS,
    USER_LINE_MIN_CHARS,
    USER_OPENING_CHARS,
    USERS_SHARE,
)
from agentcontext.compaction.summary_text import _SECTIONS, CARRIED, LATEST, USERS, _merge, _render, counted
from agentcontext.compaction.summary_text import head_tail as _head_tail
from agentcontext.compaction.summary_text import one_line as _one_line

Encoding = str


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


def _latest_kept(
    latest: str, cap: int, enc: Encoding, request_room: int, recall_id: str | None, files: int = 0
) -> tuple[str, bool]:
    """The latest request as the summary carries it, and whether it is cut: whole when it takes at most
    ``request_room`` tokens and fits the cap (leaving :data:`_REQUEST_SLACK`), else head + marker
    + tail within its share of the cap (a third, at least :data:`LATEST_MIN_TOKENS`; a cap that
    small is the request's but for the ``files`` tokens the files touched take: their names say
    more than the middle of a request cut anyway), the marker naming ``recall_id`` (or saying it
    is not stored, in a room of at least twice :data:`LATEST_MIN_TOKENS`)."""
    tokens = count_tokens(latest, encoding=enc)
    if tokens <= request_room and tokens + _REQUEST_SLACK <= cap:
        return latest, False
    room = max(int(cap * LATEST_SHARE), min(LATEST_MIN_TOKENS, cap - files))
    latest = "\n".join(line for line in latest.splitlines() if line.strip())  # cut: blank lines say nothing
    # In a smaller room the head and tail say more than "not stored" (the header says it too).
    cut = truncate(
        latest, room, unit="tokens", strategy="head_tail", encoding=enc,
        recall_id=recall_id, not_stored=recall_id is None and room >= 2 * LATEST_MIN_TOKENS,
    )  # fmt: skip
    return cut.text, cut.truncated


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
    """The summary within ``cap`` tokens (see :class:`OfflineSummarizer` for the shares);
    ``held``: what the working set holds beside the summary (the task ledger), whose paths and
    identifiers take no line when the sections are over the cap (with room, a summary names
    them too); ``counts``: line tokens counted already (:data:`LINE_TOKENS`); ``facts``: the
    handoff in the core whose tests and decisions come before those sections' lines (written
    here in Python, as the summarizer wrote them before the core did)."""
    if facts is not None:
        h = facts.handoff()
        sections = {
            **sections,
            "Tests (last status)": _merge(
                [f"- {name}: {status}" for name, status in reversed(h["tests"])],
                sections.get("Tests (last status)", []),
            ),
            "Decisions": _merge([f"- {d}" for d in reversed(h["decisions"])], sections.get("Decisions", [])),
        }
    fit = _Fitter(sections, enc, counts)
    if held and sum(sum(map(len, lines)) for lines in sections.values()) > cap * _CHARS_PER_TOKEN:
        fit.hold(held)
    chosen = fit.chosen
    if latest:
        # Verbatim, its blank lines included (one entry: the section is the request).
        files = fit.take_files(_files_room(cap), dry=True)
        kept, cut = _latest_kept(latest, cap, enc, request_room, recall_id, files)
        chosen[LATEST] = [kept.strip()]
        # Cut here, or by the summary it comes from: not verbatim.
        latest_cut = latest_cut or cut
    used = fit.count(_render(chosen, latest_cut))
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
    text = _render(chosen, latest_cut)
    over = fit.count(text) > cap
    # Per-line counts miss a few merges at line starts: the last lines taken give way first.
    for name in reversed(_SECTIONS[2:]):
        while over and chosen[name]:
            chosen[name].pop()
            text = _render(chosen, latest_cut)
            over = fit.count(text) > cap
    if over:
        # Per-line counts miss a few merges at line starts: cut the text itself, with a marker.
        return truncate(text, cap, unit="tokens", strategy="head_tail", head_share=0.8, encoding=enc).text
    return text


def _files_room(cap: int) -> int:
    """The tokens the files touched take of a summary's ``cap`` before the other facts."""
    return max(int(cap * FILES_SHARE), min(FILES_MIN_TOKENS, cap // 3))
