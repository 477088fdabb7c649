"""The ``recall`` tool: resolves the ids written into markers and placeholders and pages the
original text back."""

from __future__ import annotations

import json
import re
from collections import deque
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal, Protocol

from agentcontext import _checks
from agentcontext._core import Conversation, json_path, page_chars
from agentcontext.budgets.ids import RECALL_ID, _check_id, _shown
from agentcontext.budgets.tools import recall_tool
from agentcontext.errors import AgentContextError, OptionError, RecallError

if TYPE_CHECKING:
    from agentcontext.sessions.log import SessionLog

__all__ = ["Recall", "RecallPage", "recall_names", "result_text"]


class Store(Protocol):
    """What :class:`Recall` reads from a store of full results (:class:`~agentcontext.budgets.ResultStore`)."""

    def get(self, recall_id: str, /) -> str: ...
    def alias(self, name: str, /) -> str | None: ...
    def pieces(self, recall_id: str, /) -> Iterator[str]: ...


@dataclass(frozen=True)
class RecallPage:
    """One page of a recalled text. ``text`` is exactly ``full[start:end]``; ``hint`` says how to
    continue when more follows (None on the last page)."""

    text: str
    start: int
    end: int
    total_chars: int
    start_line: int
    end_line: int
    total_lines: int
    hint: str | None

    @property
    def answer(self) -> str:
        """The page as the tool answers it: the text, then the hint on a line of its own."""
        if self.hint is None:
            return self.text
        return f"{self.text}{'' if self.text.endswith(chr(10)) else chr(10)}\n{self.hint}"


class Recall:
    """The ``recall`` tool: resolves every id the library writes into a marker or placeholder,
    and pages the original back.

    - ``r-...`` ids: results stored in ``store`` by :class:`ToolResultPolicy` (persisted or cut
      results) and the originals of summarized or dropped spans stored by a
      :class:`~agentcontext.Compactor` that has a store (as JSON Lines, one message a line);
    - tool call ids (``[cleared: ...; recall id call_abc]``, ``recall(id="call_abc")``): the
      result as it was before it was cleared or cut, from ``store`` (stored by the compactor
      under the call id), else from ``originals`` (the caller's own messages, e.g. those given to
      :func:`~agentcontext.trim_messages` or ``Conversation.clear_tool_results``), else from
      the session ``log`` (read again first when it does not hold the id: another writer may
      have appended it). When calls reuse an id (``call_0`` on every turn), the k-th call
      with it (k >= 2) is recalled as ``<id>#k``, the first by the id, as placeholders name them
      (:func:`recall_names`); when a call has two results, the last is the one recalled; a
      placeholder naming the call, or a cut copy of its result written after it (the Agents
      SDK's compacting session appends such copies), is not taken for the result.
    - a call id followed by ``#arguments`` (``[cleared: arguments of write(...), 917 tokens;
      recall id call_abc#arguments]``): the call's arguments as they were before
      ``clear_tool_inputs`` cleared them, from the same sources in the same order (stored by the
      compactor under that name), as the call's JSON text: an OpenAI Chat call's ``arguments``
      string as it was sent, an object input (Anthropic ``input``) as compact JSON, a free-form
      input (Responses ``custom_tool_call``) as ``{"input": text}``. No provider's call id holds a
      ``#`` and a store id none either; an id ending in ``#arguments`` that names no call's
      arguments is looked up as it is.

    Pages are by lines (``offset``, ``lines``; the tool's arguments ``offset`` and ``limit``) and never longer than ``max_chars`` characters: a
    longer line (a one-line JSON result) is paged by character, the hint naming ``char_offset``.
    ``path`` first selects a value inside a JSON result (``$.items[3].name``; see
    :func:`agentcontext.json_path`).
    """

    def __init__(
        self,
        store: Store | None = None,
        *,
        log: SessionLog | None = None,
        originals: Conversation | Iterable[Mapping[str, Any]] | None = None,
    ) -> None:
        self.store = store
        self.log = log
        if originals is not None and not isinstance(originals, Conversation):
            originals = Conversation(list(originals))
        self.originals = originals
        self._indexed: dict[str, tuple[int, dict[str, str | None], dict[str, str | None]]] = {}

    def tool(self, style: Literal["openai", "anthropic"] = "openai") -> dict[str, Any]:
        """The tool definition (see :func:`recall_tool`)."""
        return recall_tool(style)

    def _results(self, source: str, part: str = "result") -> dict[str, str | None] | None:
        """Recall id (:func:`recall_names`) → the text of its call's last result (``part="result"``)
        or arguments (``"arguments"``) that is not a placeholder, in the original messages
        (``source="originals"``) or the session log (``"log"``); None for a name two calls would
        have; rebuilt when the source has grown (a log only grows)."""
        log = self.log
        if source == "originals":
            if self.originals is None:
                return None
            size = len(self.originals)
        elif log is None:
            return None
        else:
            size = len(log.messages)
        cached = self._indexed.get(source)
        if cached is None or cached[0] != size:
            out: dict[str, str | None] = {}
            arguments: dict[str, str | None] = {}
            conv = self.originals if source == "originals" else log.originals() if log is not None else None
            if conv is not None:
                messages = conv.to_jsonl()
                names = _names(enumerate(messages))
                for i, m in enumerate(messages):
                    call_id = m.get("tool_call_id")
                    if m.get("role") == "tool" and isinstance(call_id, str):
                        name, unique = names[i, "result", call_id, 1]
                        text = result_text(m.get("content"))
                        earlier = out.get(name)
                        if not unique:
                            out[name] = None  # two calls would be named so: it names neither
                        elif not _placeholder_of(text, name) and (earlier is None or not _cut_from(text, earlier)):
                            out[name] = text
                    seen: dict[str, int] = {}
                    for call in m.get("tool_calls") or ():
                        args, call_id = call.get("arguments"), call.get("id")
                        if isinstance(call_id, str):
                            n = seen[call_id] = seen.get(call_id, 0) + 1
                            if isinstance(args, str) and not _cleared_arguments(args):
                                name, unique = names[i, "arguments", call_id, n]
                                arguments[name] = args if unique else None
            cached = self._indexed[source] = (size, out, arguments)
        return cached[2] if part == "arguments" else cached[1]

    def original(self, recall_id: str) -> str:
        """The full text behind ``recall_id``.

        Raises:
            OptionError: ``recall_id`` is not a string.
            RecallError: nothing is stored under it (the message says where it was looked for), or the
                store's file of it was changed on disk.
        """
        recall_id = _check_id(recall_id, "id")
        store = self.store
        if store is not None:
            stored = _in_store(store, recall_id)
            if stored is not None:
                return store.get(stored)
        call_id = recall_id.removesuffix(ARGUMENTS)
        # The arguments of call `call_id`, else (no call's arguments named) what the id itself names.
        lookups = [(call_id, "arguments"), (recall_id, "result")] if call_id != recall_id else [(recall_id, "result")]
        for key, part in lookups:
            for source in ("originals", "log"):
                index = self._results(source, part) or {}
                if key not in index and source == "log" and self.log is not None and self.log.refresh():
                    # Another writer of the same log may have appended it since this object last read.
                    index = self._results(source, part) or {}
                if key in index:
                    text = index[key]
                    if text is None:
                        raise RecallError(
                            f"recall id {_shown(recall_id)} names more than one call (a call id used again and a "
                            f"call whose id is that name): nothing is recalled by it",
                            recall_id,
                        )
                    return text
        looked = [
            name
            for name, have in (
                ("the store", store),
                ("the original messages", self.originals),
                ("the session log", self.log),
            )
            if have is not None
        ]
        where = ", ".join(looked) if looked else "nothing (no store, session log or original messages given)"
        what = "arguments or result" if call_id != recall_id else "result"
        raise RecallError(f"no stored {what} with recall id {_shown(recall_id)} (looked in {where})", recall_id)

    def page(
        self,
        recall_id: str,
        offset: int = 1,
        lines: int = 500,
        *,
        char_offset: int | None = None,
        max_chars: int = 20_000,
        path: str | None = None,
    ) -> RecallPage:
        """One page of what ``recall_id`` names (of the value at ``path`` in it, for JSON)."""
        offset = _checks.count("offset", offset, minimum=1)
        lines = _checks.count("lines", lines, minimum=1)
        max_chars = _checks.count("max_chars", max_chars, minimum=1)
        if char_offset is not None:
            char_offset = _checks.count("char_offset", char_offset)
        if path is None:
            stored = self._stored(_check_id(recall_id, "id"))
            if stored is not None:
                # Read from the store's file as it is paged: memory holds the page, not the result.
                return _page(stored, offset, lines, char_offset, max_chars)
        text = self.original(recall_id)
        if path is not None:
            if not isinstance(path, str):
                raise OptionError(f"path must be a string, not {type(path).__name__}")
            text = json_path(text, path)
        return _page(text, offset, lines, char_offset, max_chars)

    def _stored(self, recall_id: str) -> Iterator[str] | None:
        """The pieces of the result the store holds under ``recall_id`` (an id or an alias), or
        None when it holds none."""
        store = self.store
        if store is None:
            return None
        stored = _in_store(store, recall_id)
        return None if stored is None else store.pieces(stored)

    def recall(
        self,
        recall_id: str,
        offset: int = 1,
        lines: int = 500,
        *,
        char_offset: int | None = None,
        max_chars: int = 20_000,
        path: str | None = None,
    ) -> str:
        """The tool's answer: :meth:`page` with its continuation hint."""
        return self.page(recall_id, offset, lines, char_offset=char_offset, max_chars=max_chars, path=path).answer

    def __call__(self, arguments: Mapping[str, Any]) -> str:
        """The executor for a tool call's parsed arguments (``id``, ``offset``, ``limit``,
        ``char_offset``, ``path``). A bad argument or an unknown id is answered with the error's
        message, which tells the model what to do."""
        if not isinstance(arguments, Mapping):
            return f"Error: the recall tool takes an object of arguments, not {type(arguments).__name__}"
        unknown = sorted(set(arguments) - {"id", "offset", "limit", "char_offset", "path"})
        if unknown:
            return (
                f"Error: unknown argument {unknown[0]!r} (the recall tool takes id, offset, limit, char_offset, path)"
            )
        try:
            # The tool's argument is `limit` (lines): checked here, in `page`'s order, so that the
            # answer to a bad value names the argument the model passed.
            offset = _checks.count("offset", arguments.get("offset", 1), minimum=1)
            lines = _checks.count("limit", arguments.get("limit", 500), minimum=1)
            return self.recall(
                arguments.get("id"),  # type: ignore[arg-type]  # checked in `original`
                offset,
                lines,
                char_offset=arguments.get("char_offset"),
                path=arguments.get("path"),
            )
        except AgentContextError as exc:
            return f"Error: {exc}"


def _in_store(store: Store, recall_id: str) -> str | None:
    """The store's id of what ``recall_id`` names: itself when it has a store id's form, else the
    id its alias (a tool call id) resolves to; None when the store has neither. A call id in a
    store id's form (``r-`` and 20 hex digits) is looked up as an alias when no text is stored
    under it; a text stored under it is what it names, so a call id cannot take over the id of a
    stored text."""
    if RECALL_ID.fullmatch(recall_id):
        holds = getattr(store, "__contains__", None)
        if holds is None or holds(recall_id):
            return recall_id
        return store.alias(recall_id) or recall_id  # neither: the store's own error names it
    return store.alias(recall_id)


#: A call's result or arguments in :func:`recall_names`: (message index, ``"result"`` or
#: ``"arguments"``, call id, n), n counting the calls (results) of that id at that index from 1.
NameKey = tuple[int, str, str, int]


def recall_names(messages: Iterable[tuple[int, Mapping[str, Any]]]) -> dict[NameKey, str | None]:
    """The recall id that placeholders and markers name for each call's result and arguments,
    as the core names them (``RecallIds`` in src/compact/clear/plan.rs): ``messages`` are the
    library's own message dicts (:meth:`Conversation.to_jsonl`) with their message index, in
    order; the key is (message index, ``"result"`` or ``"arguments"``, call id, n: the place of
    the call, or result, among those of its id at that index, from 1: a message that makes two
    calls of one id names each one's arguments apart). The name is the
    call id, unless the id is reused: the k-th call with it (k >= 2) is ``<id>#k`` (some servers
    number calls ``call_0``, ``call_1``, ... afresh on every turn), and a result is named as the
    call it answers: the latest call of its id before it, or, when one message makes several
    calls of the id, the first of them still waiting (they are answered in order). A name two calls would have (a second ``a`` and a call
    whose id is ``a#2``), or one a placeholder or cut marker of another call shows already (a
    longer conversation gave it, and its front has been summarized or dropped since), is None:
    no new placeholder names it. A conversation that grows keeps the name of every call it had."""
    return {key: name if unique else None for key, (name, unique) in _names(messages).items()}


def _names(messages: Iterable[tuple[int, Mapping[str, Any]]]) -> dict[NameKey, tuple[str, bool]]:
    """:func:`recall_names`, each with the name it would have when it is None there (and False):
    the entry of that name, not of the call id (the first ``a`` keeps its name when a second
    ``a`` and a call ``a#2`` both claim ``a#2``)."""
    count: dict[str, int] = {}
    latest: dict[str, int] = {}
    # Per id, the message of its latest calls and those of them still waiting: a result answers
    # the first, as the core pairs them (``Pairing`` in src/compact/structure.rs).
    waiting: dict[str, tuple[int, deque[int]]] = {}
    calls: list[tuple[str, list[str], bool]] = []  # name, the ids its texts show, answered
    named: list[tuple[NameKey, int | str]] = []
    seen: dict[tuple[int, str, str], int] = {}

    def numbered(i: int, part: str, call_id: str) -> NameKey:
        n = seen[i, part, call_id] = seen.get((i, part, call_id), 0) + 1
        return (i, part, call_id, n)

    for i, m in messages:
        for call in m.get("tool_calls") or ():
            call_id = call.get("id")
            if isinstance(call_id, str):
                k = count[call_id] = count.get(call_id, 0) + 1
                args = call.get("arguments")
                in_args = _shown_recall_id(args) if isinstance(args, str) and _cleared_arguments(args) else None
                latest[call_id] = len(calls)
                same = waiting.get(call_id)
                if same is not None and same[0] == i:
                    same[1].append(len(calls))
                else:
                    waiting[call_id] = (i, deque([len(calls)]))
                calls.append((call_id if k == 1 else f"{call_id}#{k}", [in_args] if in_args else [], False))
                named.append((numbered(i, "arguments", call_id), latest[call_id]))
        call_id = m.get("tool_call_id")
        if m.get("role") == "tool" and isinstance(call_id, str):
            open_calls = waiting[call_id][1] if call_id in waiting else None
            ci = open_calls.popleft() if open_calls else latest.get(call_id)
            named.append((numbered(i, "result", call_id), call_id if ci is None else ci))
            content = m.get("content")
            if ci is not None and not calls[ci][2]:
                name, texts, _ = calls[ci]
                if isinstance(content, str) and (
                    content.startswith(("[cleared: result of ", "[superseded: ")) or _CUT in content
                ):
                    found = _shown_recall_id(content)
                    texts = [*texts, found] if found else texts
                calls[ci] = (name, texts, True)
    if len(count) == len(calls):  # no id reused: every name is its call id
        return {key: (at if isinstance(at, str) else calls[at][0], True) for key, at in named}
    claims: dict[str, int] = {}
    for name, texts, _ in calls:
        claims[name] = claims.get(name, 0) + 1
        for s in texts:
            if s != name:
                claims[s] = claims.get(s, 0) + 1
    out: dict[NameKey, tuple[str, bool]] = {}
    for key, at in named:
        name = at if isinstance(at, str) else calls[at][0]
        out[key] = (name, claims.get(name, 0) <= 1)
    return out


#: How a cut marker names its recall id.
_CUT = '; full text: recall(id="'


def _shown_recall_id(text: str) -> str | None:
    """The recall id a text the core writes shows (``shown_recall_id`` in
    src/compact/clear/plan.rs): a cut marker's, a cleared result's, cleared arguments' (without
    ``#arguments``)."""
    at = text.find(_CUT)
    if at >= 0:
        rest = text[at + len(_CUT) :]
        end = rest.find('")')
        return rest[:end] if end >= 0 else None
    at = text.rfind(" tokens; recall id ")
    if at < 0:
        return None
    rest = text[at + len(" tokens; recall id ") :]
    end = rest.find("]")
    return rest[:end].removesuffix("#arguments") if end >= 0 else None


#: What follows a call id in the recall id of its cleared arguments (``call_abc#arguments``).
ARGUMENTS = "#arguments"


def _cleared_arguments(text: str) -> bool:
    """Whether ``text``, a call's arguments, is what ``clear_tool_inputs`` writes in their place:
    ``{"cleared": "[cleared: arguments of ..."}`` (however spaced), or that text itself (a
    free-form input)."""
    if text.startswith("[cleared: arguments of "):
        return True
    if len(text) > 1024 or "[cleared: arguments of " not in text:
        return False
    try:
        value = json.loads(text)
    except ValueError:
        return False
    return (
        isinstance(value, dict)
        and len(value) == 1
        and isinstance(value.get("cleared"), str)
        and value["cleared"].startswith("[cleared: arguments of ")
    )


def _placeholder_of(text: str, call_id: str) -> bool:
    """Whether ``text`` is what clearing or dedup writes in place of the result of ``call_id``:
    one line (the call's description never breaks one), opening as a placeholder and closing as
    one, a cleared result's naming this call's id. A result that only opens like one (a tool
    printing a transcript) is the result itself."""
    if "\n" in text.replace(f"recall id {call_id}]", ""):
        return False
    if text.startswith("[cleared: result of "):
        return text.endswith((f" tokens; recall id {call_id}]", " tokens; not stored]"))
    return text.startswith("[superseded: ") and text.endswith("; its latest result is the current one]")


#: A truncation marker (``[... 23 lines, 1794 chars omitted; ... ...]``), its omitted chars.
_MARKER = re.compile(r"\[\.\.\. [\d,]+ lines, ([\d,]+) chars(?:, [\d,]+ tokens)? omitted[^\n]*? \.\.\.\]")


def _cut_from(text: str, earlier: str) -> bool:
    """Whether ``text`` is ``earlier`` cut to head + marker + tail (a copy a compaction wrote
    beside the original, as the Agents SDK's compacting session does): its head and tail are
    the ends of ``earlier`` and the marker's omitted chars make up the rest."""
    for found in _MARKER.finditer(text):
        omitted = int(found.group(1).replace(",", ""))
        tail = text[found.end() :]
        tail = tail.removeprefix("\n")
        head = text[: found.start()]
        for h in {head, head.removesuffix("\n")}:
            if len(h) + omitted + len(tail) == len(earlier) and earlier.startswith(h) and earlier.endswith(tail):
                return True
    return False


#: The types of the content parts that hold a text, in every format a result is read in.
_TEXT_PARTS = frozenset(("text", "input_text", "output_text"))


def result_text(content: object) -> str:
    """A tool result's content as the text a recall gives back: a string as is; a list of text
    parts only as their texts joined by newlines (the text a cut of such a result is made from,
    whose lines its marker counts, and the text the core counts); anything else (an empty list,
    parts with an image) as JSON."""
    if isinstance(content, str):
        return content
    if isinstance(content, list) and content:
        texts = [
            p["text"]
            for p in content
            if isinstance(p, dict) and p.get("type") in _TEXT_PARTS and isinstance(p.get("text"), str)
        ]
        if len(texts) == len(content):
            return "\n".join(texts)
    return json.dumps(content, ensure_ascii=False)


def _page(pieces: str | Iterable[str], offset: int, lines: int, char_offset: int | None, max_chars: int) -> RecallPage:
    """The page of the text made of ``pieces`` (consumed once, in order; only the page is held),
    from the core's pager."""
    return RecallPage(*page_chars(pieces, offset, lines, char_offset=char_offset, max_chars=max_chars))
