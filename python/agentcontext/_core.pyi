"""The compiled core of agentcontext. Import from ``agentcontext``, not from here.

Sizes name their unit (``max_chars``, ``max_lines``, ``max_bytes``, ``max_tokens``, ``lines``) or
take it from one ``unit=`` argument (``truncate``'s ``max_size``).

Every count (``max_size``, ``max_tokens``, ``recent_messages``, ...) is checked where it enters: a
negative value, one over the 64-bit range, or a value of the wrong type (``None``, a string, a
float) is an :class:`~agentcontext.errors.OptionError` (:class:`~agentcontext.errors.ArgumentTypeError`
for a wrong type) whose message starts with the argument's name; ``split(parts)``, ``max_lines``,
``max_bytes`` and ``line_max_chars`` must be at least 1, shares (``head_share``) within [0, 1].
"""

from collections.abc import Iterable
from os import PathLike
from pathlib import Path
from typing import Any, Literal, final, overload

from agentcontext.types import (
    AnthropicRequest,
    Change,
    ClearReport,
    DedupedRead,
    Encoding,
    Format,
    FormatOrAuto,
    Handoff,
    JsonDict,
    MemoryHit,
    MemoryRecord,
    MemoryRecordWithBody,
    Message,
    RefreshStats,
    SearchResult,
    Stats,
    Suffix,
    Target,
    TokenCacheInfo,
    ToolTotals,
    TruncatedResult,
    TruncateStrategy,
    Unit,
    Violation,
)

__all__ = [
    "MAX_IMAGE_TOKENS",
    "MEMORY_MAX_RECORD_BYTES",
    "MESSAGE_OVERHEAD",
    "TOOL_BLOCK_OVERHEAD",
    "_SUMMARY_LATEST_CUT",
    "_SUMMARY_SECTIONS",
    "_SUMMARY_SHARES",
    "_SUMMARY_SIZES",
    "Conversation",
    "HandoffScan",
    "MemoryIndex",
    "Page",
    "Truncation",
    "_Fields",
    "_HandoffFacts",
    "_Held",
    "_Prints",
    "_Trimmer",
    "__version__",
    "_any_field",
    "_chat_tokens",
    "_equal_shares",
    "_fit_summary",
    "_fork_prepare",
    "_fork_release",
    "_give_way",
    "_heuristic_features",
    "_plain_dicts",
    "check_memory_record",
    "convert",
    "count_tokens",
    "count_tokens_batch",
    "detect_format",
    "estimate_tokens",
    "important_tail",
    "json_path",
    "json_preview",
    "page_chars",
    "page_text",
    "read_page",
    "repair",
    "search_log",
    "search_messages",
    "token_cache_clear",
    "token_cache_info",
    "trim_messages",
    "truncate",
    "validate",
]

__version__: str

#: Tokens every message costs beyond its content: the role and the delimiters around it.
MESSAGE_OVERHEAD: int
#: Tokens a tool call or tool result costs beyond its name, arguments or content.
TOOL_BLOCK_OVERHEAD: int
#: What an image costs when its size is unknown (an URL) or over the limits: the most an image can cost.
MAX_IMAGE_TOKENS: int
#: The largest memory record file (bytes) the index reads and the store writes.
MEMORY_MAX_RECORD_BYTES: int
#: Internal. The offline summary's sections, in the order its fit (``_fit_summary``) writes them.
_SUMMARY_SECTIONS: tuple[str, ...]
#: Internal. The latest request's heading when the offline summary carries it cut to head + tail.
_SUMMARY_LATEST_CUT: str
#: Internal. The shares of the cap the offline summary's fit gives its parts (``LATEST_SHARE``,
#: ``USERS_SHARE``, ``CARRIED_SHARE``, ``FILES_SHARE``); Python's names read them from here.
_SUMMARY_SHARES: dict[str, float]
#: Internal. The fit's sizes in tokens or characters (``LATEST_MIN_TOKENS``, ``FILES_MIN_TOKENS``,
#: ``USER_LINE_CHARS``, ``USER_LINE_MIN_CHARS``, ``USER_OPENING_CHARS``, ``REQUEST_SLACK``).
_SUMMARY_SIZES: dict[str, int]

@final
class Conversation:
    """A conversation owned by the Rust core: parsed messages and their cached token counts.

    Messages cross into Rust once: ``append`` and ``extend`` parse and count only the new ones,
    and totals per role and per tool are kept up to date, so a growing conversation costs
    O(new messages) per call. Safe to use from many threads.

    ``format`` names the format of the messages given here and later to ``append``/``extend``
    (``"auto"`` detects it from the messages, falling back to ``"openai"``). ``system`` is the
    Anthropic ``system`` parameter and implies ``format="anthropic"``.

    Messages the library did not change come back from ``to_<format>`` equal, as dicts, to what
    went in, unknown fields included (``cache_control``, provider ids, metadata). Converting to
    another format keeps every tool pairing, every piece of text and every unknown field, on the
    message, block, call or result it was on (the fields that spell the source format's own
    structure, ``type``, ``function``, ``image_url``, stay behind); blocks only one provider
    understands (signed thinking, server tool blocks) are written only to their own format.

    A tool result is counted as what the provider receives. Its content is a string or a list of
    parts: a Chat tool message's ``content``, an Anthropic ``tool_result``'s ``content``, a
    Responses ``function_call_output``'s or ``custom_tool_call_output``'s ``output`` that is
    anything else is refused. A Responses built-in tool's structured output (a
    ``computer_call_output`` screenshot object) is kept as it came, counted as its JSON text, and
    never cleared (no text can stand in its place).

    The public surface is what a user needs: building and growing (``append``, ``extend``,
    ``from_file``, ``concat``, ``slice``), counting (``tokens``, ``message_tokens``,
    ``tokens_by_role``, ``tokens_by_tool``, ``stats``), writing (``to_<format>``, ``to_format``,
    ``to_anthropic_params``), protocol surgery (``validate``, ``repair``, ``groups``, ``rounds``,
    ``protected``, ``pin``, ``clear_tool_results``, ``clearable_tokens``, ``dedup_reads``,
    ``truncate_tool_results``, ``tool_results_over``, ``recent_suffix``, ``split``, ``preamble``)
    and ``handoff``. Methods with a leading underscore (``_raw_start_*``, ``_cut_points``,
    ``_export_each``, ``_latest_request``, ``_summaries``) are internals of the compaction ladder
    and may change without notice.

    Raises:
        InvalidMessageError: a message does not have its format's shape (``index`` names it),
            such as a function output that is neither a string nor a list of parts.
        OptionError: an unknown ``format`` or ``encoding`` name.
        ArgumentTypeError: ``messages`` is not a list or iterable of messages (an
            :class:`OptionError` that is also a ``TypeError``).
    """

    def __new__(
        cls,
        messages: Iterable[Message] | None = None,
        /,
        *,
        format: FormatOrAuto = "auto",
        encoding: Encoding = "o200k_base",
        system: str | Iterable[Message] | None = None,
    ) -> Conversation: ...
    @staticmethod
    def from_file(
        path: str | PathLike[str],
        /,
        *,
        format: FormatOrAuto = "auto",
        encoding: Encoding = "o200k_base",
        max_bytes: int = 1073741824,
    ) -> Conversation:
        """Read a transcript file: a JSON array of messages, a request body (``{"system",
        "messages"}`` or ``{"input"}``), or JSON Lines with one message per line.

        Only a regular file is read (a symlink to one is followed); a FIFO, device or socket is
        refused before any byte is read. A file over ``max_bytes`` (default 1 GiB) is refused
        without being read.

        Raises:
            TranscriptError: the file is not valid JSON or a message is malformed (``line`` or
                ``index`` says where).
            TranscriptReadError: the file cannot be read: missing, a directory, not a regular
                file, over ``max_bytes``, no permission.
        """

    def append(self, message: Message, /) -> None:
        """Append one message in the conversation's format.

        A Responses item the model produced joins the assistant turn before it, as when the
        whole list is read at once."""

    def extend(self, messages: Iterable[Message], /) -> None:
        """Append messages in the conversation's format; on error nothing is appended."""

    @property
    def format(self) -> Format: ...
    @property
    def encoding(self) -> Encoding: ...
    @property
    def tokens(self) -> int:
        """Total tokens, message overheads included (cached)."""

    @property
    def tool_calls(self) -> int:
        """Number of tool calls."""

    def __len__(self) -> int: ...
    def _repr_html_(self) -> str:
        """The conversation as an HTML table for Jupyter: :func:`agentcontext.display.conversation_repr_html`
        (attached by the ``agentcontext`` package when the core is loaded; the core renders no HTML)."""
    def __getitem__(self, index: int, /) -> JsonDict:
        """One message in the library's own (``jsonl``) form."""

    def message_tokens(self) -> list[int]:
        """Tokens of each message, overhead included."""

    def tokens_by_role(self) -> dict[str, int]:
        """Tokens per role. Tool results count as ``tool`` in every format (in Anthropic they
        travel inside user messages)."""

    def tokens_by_tool(self) -> dict[str, ToolTotals]:
        """Calls, results and tokens (calls and results together) per tool name. Results whose
        call is not in the conversation are listed under ``"(unknown)"``."""

    def stats(self, encoding: Encoding | None = None) -> Stats:
        """All totals, under this conversation's encoding or, counted now, another one."""

    def to_openai(self, *, request: bool = False) -> list[JsonDict]:
        """OpenAI Chat Completions messages. Unknown fields (``cache_control``, ids, metadata) are
        carried from every format; with ``request=True``, for a provider's request, only messages
        read from this format keep theirs (a provider rejects fields its API does not define)."""

    def to_responses(self, *, request: bool = False) -> list[JsonDict]:
        """OpenAI Responses input items (``request`` as for :meth:`to_openai`)."""

    def to_jsonl(self) -> list[JsonDict]:
        """The library's own messages, one dict per line of a JSONL file."""

    def to_anthropic_params(self, *, request: bool = False) -> AnthropicRequest:
        """The Anthropic request fields ``{"system": ..., "messages": [...]}``, for
        ``client.messages.create(**conv.to_anthropic_params(request=True), ...)`` (the shape
        ``convert(..., to="anthropic")`` gives too); ``system`` is present only when the
        conversation starts with system messages. With ``request=True`` only messages read from
        Anthropic keep their unknown fields (Anthropic rejects fields it does not define); without
        it every message's are carried.

        Raises:
            ConversionError: a system message after the conversation started (Anthropic has no
                place for it).
        """

    def to_format(self, format: FormatOrAuto, /, *, request: bool = False) -> list[JsonDict]:
        """The message list in the named format, the shape ``to_openai``, ``to_responses`` and
        ``to_jsonl`` give, and what ``Conversation(messages, format=format)`` reads back: for
        ``"anthropic"`` a system prompt is the first element, with role ``"system"`` (the request
        fields, with ``system`` apart, are :meth:`to_anthropic_params`). ``request`` as for
        :meth:`to_openai`."""

    # -- surgery ----------------------------------------------------------------------------
    def validate(self) -> list[Violation]:
        """Protocol violations with the message index of each: orphan, missing, misplaced and
        duplicate results, reused call ids, thinking after text or a call, empty messages. Empty
        when the conversation is valid for its format."""

    def repair(self) -> tuple[Conversation, list[Change]]:
        """A repaired copy and what changed: results moved right after their calls, an error result
        synthesized for an interrupted call, a result with no call before it (or a second result for
        a call) made a user message that names the call and keeps the text, reused ids renamed
        (``id#2``, ``id#3``, ...) with their results, thinking moved first, empty messages dropped.
        A valid conversation comes back equal with no changes, so ``repair`` is idempotent. The
        importers of :mod:`agentcontext.importers` build their conversations with this repair."""

    def groups(self) -> list[tuple[int, int]]:
        """Interaction groups after the system messages: each starts at a real user message (not
        one that only carries tool results) and holds everything up to the next one."""

    def rounds(self) -> list[tuple[int, int]]:
        """API rounds: each assistant message with the tool results that follow it."""

    def protected(self, *, recent_messages: int = 12, recent_tools: int = 3) -> list[int]:
        """Protected message indices: the union of the last ``recent_messages`` messages, the
        messages of the last ``recent_tools`` completed tool interactions (paired by id), and the
        pinned messages — each computed over the whole conversation."""

    def pin(self, index: int, /, *, pinned: bool = True) -> None:
        """Pin a message (``pinned=False`` unpins it): it is never cleared or summarized and is
        always rendered."""
    @property
    def pinned(self) -> list[int]: ...
    def clear_tool_results(
        self,
        *,
        recent_messages: int = 12,
        recent_tools: int = 3,
        exclude_tools: list[str] = ...,
        clear_tool_inputs: bool = False,
        clear_at_least: int = 0,
        keep_thinking: bool = True,
        recall_ids: bool = True,
    ) -> tuple[Conversation, ClearReport]:
        """A copy where every completed, paired tool result outside the protected set becomes
        ``[cleared: result of read_file(path=src/app.py), 12,345 tokens; recall id <call id>]``
        (with ``recall_ids=False``: ``...; 12,345 tokens; not stored]``, for a caller that keeps
        no original to recall). When calls reuse an id, the k-th call with it (k >= 2) is named
        ``<call id>#k`` here and in the arguments' name below, as :class:`agentcontext.budgets.Recall`
        resolves it; a name two calls would have, or one that a placeholder or cut marker of
        another call shows already, is given to none (``not stored]``).
        The call (name and input) stays; user and assistant text is never rewritten; results of
        ``exclude_tools`` stay; ``clear_tool_inputs`` also replaces the arguments of every old call
        (the same calls: outside the protected set, tool not excluded; whether or not its result
        is cleared now or was before) by ``{"cleared": "[cleared: arguments of write(path=a.py,
        ...), 1,234 tokens; recall id <id>#arguments]"}`` (the original arguments are recalled
        by that name, :class:`agentcontext.budgets.Recall`; ``...; not stored]`` with
        ``recall_ids=False``), ids and names kept;
        nothing changes unless at least ``clear_at_least`` tokens are freed;
        ``keep_thinking=False`` drops thinking blocks of unprotected assistant turns."""

    def clearable_tokens(
        self, *, recent_messages: int = 12, recent_tools: int = 3, exclude_tools: list[str] = ...
    ) -> int:
        """The most :meth:`clear_tool_results` with these options could free, from cached counts
        and without building anything."""

    def dedup_reads(
        self, read_only_tools: list[str], /, *, recent_messages: int = 12
    ) -> tuple[Conversation, list[DedupedRead]]:
        """A copy where earlier results of a read-only tool called again with the same input are
        short stubs pointing to the latest call."""

    def recent_suffix(self, max_tokens: int, /, *, reserved_output: int = 0, safety_margin: int = 0) -> Suffix:
        """The longest contiguous, protocol-complete suffix of history that fits ``max_tokens`` once the
        system messages, ``reserved_output`` and ``safety_margin`` are taken off: cut between
        interaction groups, or between rounds inside a last group too large to keep whole. A single
        round larger than the budget is reported in ``overflow`` (``fits`` is False), never split."""

    def split(self, parts: int, /) -> list[tuple[int, int]]:
        """History split into at most ``parts`` contiguous ranges of about equal token share, at
        boundaries that never separate a call from its result (for staged summaries)."""

    def slice(self, start: int, stop: int | None = None, /) -> Conversation:
        """Messages ``start:stop`` as a new conversation (their counts and pins carried over)."""

    def truncate_tool_results(
        self,
        max_chars: int,
        /,
        *,
        per_tool: dict[str, int] | None = None,
        strategy: TruncateStrategy = "auto",
        head_share: float = 0.5,
        recall_ids: bool = True,
    ) -> tuple[Conversation, list[TruncatedResult]]:
        """A copy where every text tool result over ``max_chars`` characters (``per_tool`` overrides by tool
        name) is cut to head + marker + tail; the marker names the call id (``<call id>#k`` for
        the k-th call of a reused id, as :meth:`clear_tool_results` names it), by which the original
        can be recalled (see :class:`agentcontext.budgets.Recall`), or with ``recall_ids=False``
        says the full text is not stored. Returns what was cut."""

    def tool_results_over(self, max_chars: int, /, *, per_tool: dict[str, int] | None = None) -> int:
        """How many text tool results are over their budget: what :meth:`truncate_tool_results` would cut."""

    @property
    def preamble(self) -> int:
        """Number of leading system and developer messages (the system prompt)."""

    def _raw_start_at_least(self, *, keep_messages: int = 0, keep_tokens: int = 0) -> int:
        """Internal. Where the raw recent tail starts (always a cut point): the latest one keeping at least
        ``keep_messages`` messages and ``keep_tokens`` tokens after it (the preamble length when there is
        none)."""

    def _raw_start_fits(self, room: int) -> int:
        """Internal. The earliest cut point whose tail fits ``room`` tokens (the length when none does)."""

    def _raw_start_steps(self, room: int, first: float, step: float) -> int | None:
        """Internal. With the schedule ``first``, ``step`` (summarize that share of the messages after the
        preamble, then ``step`` more, ...), the cut point of the first step whose tail fits ``room`` tokens
        (None when none does). Raises OptionError unless ``first`` is finite and ``step`` finite and
        positive."""

    def _keep_plan(
        self, max_tokens: int, /, *, reserve: int = 0, request: int | None = None, beside: int = 0
    ) -> tuple[list[int], int | None] | None:
        """Internal. The compaction ladder's drop: the indices kept within ``max_tokens`` less ``reserve`` (the
        preamble, message ``request`` when the longest suffix that fits leaves it out, with ``beside`` more
        tokens free, and the longest suffix that fits beside it) and the request when kept apart; None when
        the last round, or the request and the last round after it, do not fit."""

    def _cut_points(self) -> list[int]:
        """Internal. Message indices where history may be cut: starts of groups and rounds that keep every
        tool call with its result."""

    def _export_each(self) -> list[list[JsonDict]]:
        """Internal. Each message in the conversation's format, as the list of dicts it is written as."""

    def handoff(self, start: int = 0, stop: int | None = None, /) -> Handoff:
        """What the offline summarizer extracts from this history: user requests (latest first),
        files read and modified, every path named (in user and assistant text, tool inputs of any
        member and commands), commands with their last outcome, errors (resolved or not), tests
        with their last status (``passed``, ``failed``, ``error``, ``skipped``; ``ran`` when only a
        command named it, ``named`` when only another tool input did), identifiers, references
        (URLs, branches, commits), TODOs, decisions, the last assistant text and earlier summaries;
        for the task ledger, the artifact trail (each file with what was done to it and the last
        call that touched it), the rules the user stated (verbatim, latest first), the latest plan
        a tool set and the latest ledger written earlier — over messages ``start:stop`` (indices in
        the result are relative to ``start``)."""

    def _latest_request(self, start: int = 0, stop: int | None = None, /) -> tuple[int, str] | None:
        """Internal. The latest real user request of messages ``start:stop`` as ``(index in this conversation, text)``: a user
        turn with text that is not only tool results, not a summary of earlier history and not a
        text a harness put there (a task notification, a command echo, an interruption marker).
        None when there is none, or when a summary of earlier history comes after the last one
        (the summary holds it): the same search ``trim_messages`` keeps the request by."""

    def _summaries(self, start: int = 0, stop: int | None = None, /) -> list[str]:
        """Internal. Texts of summary messages in this history (from this library or Claude Code), oldest first."""

    @staticmethod
    def concat(parts: list[Conversation], /) -> Conversation:
        """The conversations one after the other (one format and encoding), counts reused."""

    def replace(
        self, start: int, stop: int | None, messages: Iterable[Message], /, *, format: FormatOrAuto = "jsonl"
    ) -> Conversation:
        """A new conversation with messages ``start:stop`` (``stop=None``: to the end) replaced by
        ``messages``, given in ``format`` (the library's own ``"jsonl"`` by default; ``"auto"``:
        detected) and read as a conversation in this one's format holds them: the same messages as
        ``Conversation(Conversation(messages, format="jsonl").to_format(f), format=f)``. Untouched
        messages keep their counts and pins; this conversation is not changed.
        ``MessageIndexError`` when ``stop`` is past the end, ``OptionError`` when ``start > stop``."""

    def class_tokens(
        self, start: int = 0, /, *, encoding: Encoding | None = None, per_message: bool = False
    ) -> dict[str, int]:
        """Estimated tokens of messages ``start:`` per content class (``prose``, ``code``,
        ``json``, ``cjk``: each text of a message's JSONL form classified by its first 4,000
        characters) and ``overhead``, in ``encoding`` (default: the conversation's; texts counted
        exactly with a BPE encoding, by the heuristic otherwise). ``overhead`` (the messages'
        tokens beyond their texts, at least 0 over the range or, with ``per_message``, for each
        message) only under the conversation's encoding, else 0. Each message's counts are kept:
        a call counts only the messages not counted before."""

@final
class HandoffScan:
    """Internal. ``conversation.handoff(start, stop)`` for several stops, from one scan: the facts
    of each message and tool call are read once and merged for each span (a message read for an
    earlier stop is not read again). The conversation's messages must not change meanwhile
    (appending is fine)."""

    def __new__(cls, conversation: Conversation, start: int = 0, /) -> HandoffScan: ...
    def handoff(self, stop: int | None = None, /) -> Handoff:
        """What ``conversation.handoff(start, stop)`` returns."""
    def ledger_handoff(self, stop: int | None = None, /) -> Handoff:
        """:meth:`handoff` with only the fields a task ledger reads (``user_requests``,
        ``constraints``, ``previous_ledger``, ``files_read``, ``files_modified``, ``commands``,
        ``errors``, ``artifacts``, ``plan``, ``messages``, ``tool_calls``); the others empty. The
        messages are scanned whole all the same, for a later :meth:`handoff`."""
    def _facts(self, stop: int | None = None, /) -> _HandoffFacts:
        """:meth:`handoff` kept in the core, for the offline summary's fit."""
    def _facts_ahead(self, stop: int | None = None, /) -> None:
        """Start making :meth:`_facts` of ``stop`` on the core's thread pool when the span is the
        one whose ledger fields were merged last (nothing else to read), so that it is made while
        Python works on; ``_facts(stop)`` then waits for it. Otherwise nothing."""

@final
class _HandoffFacts:
    """Internal. A handoff held in the core (``HandoffScan._facts``): the offline summary's fit
    (``_fit_summary(..., facts=)``) writes its tests' and decisions' lines there, so only the
    lines the summary keeps become Python strings."""

    def handoff(self, *, texts: bool = True) -> Handoff:
        """The handoff as :meth:`HandoffScan.handoff` gives it; ``texts=False``: with its
        ``tests`` and ``decisions`` empty."""

def count_tokens(text: str, /, *, encoding: Encoding = "o200k_base") -> int:
    """Tokens in ``text``, exact for OpenAI's encodings (special-token text counts as text)."""

def count_tokens_batch(texts: Iterable[str], /, *, encoding: Encoding = "o200k_base") -> list[int]:
    """Tokens of each text, counted in parallel with the GIL released."""

def estimate_tokens(text: str, /, *, target: Target = "o200k_base") -> int:
    """The heuristic estimate of ``text``'s tokens under ``target`` (no tokenizer involved):
    about 5-6% median error on agent transcripts, aware of code, digits, whitespace and CJK."""

def detect_format(messages: Iterable[Message], /) -> Format | None:
    """The format of ``messages``, or None when nothing in them tells the formats apart."""

@overload
def convert(
    messages: Iterable[Message],
    /,
    *,
    to: Literal["anthropic"],
    source: FormatOrAuto = "auto",
    system: str | Iterable[Message] | None = None,
) -> AnthropicRequest: ...
@overload
def convert(
    messages: Iterable[Message],
    /,
    *,
    to: Literal["openai", "responses", "jsonl"],
    source: FormatOrAuto = "auto",
    system: str | Iterable[Message] | None = None,
) -> list[JsonDict]:
    """Convert a whole list from ``source`` (``"auto"`` detects it) to the format ``to``. The shape
    follows ``to`` alone: the request fields ``{"system", "messages"}`` for ``"anthropic"``
    (``system`` present only when there is one), a list for the others."""

@final
class _Prints:
    """Internal. Fingerprints of a list of objects (each object, its class and some of its
    attributes, by identity), to tell in one pass that a list still begins with the same objects,
    none changed in place."""

    def __new__(cls) -> _Prints: ...
    def __len__(self) -> int: ...
    def same(self, objects: list[Any], /) -> bool:
        """Whether ``objects`` begins with the kept objects (by identity), each of the same class,
        each kept attribute the same object or an equal one, each kept list as long as it was (of
        an object kept by identity alone, only its identity)."""
    def extend(self, objects: list[Any], names: dict[type, tuple[str, ...]], /) -> bool:
        """As :meth:`same`, and when they are the same, the objects after the kept ones kept too
        (each one's class and the attributes ``names[class]`` names)."""
    def keep(
        self,
        objects: list[Any],
        start: int,
        names: dict[type, tuple[str, ...]] | list[tuple[str, ...] | None],
        /,
    ) -> None:
        """Keep the prints of ``objects``, the first ``start`` kept already (the others dropped):
        each one's class and the attributes ``names[class]`` names (of a dict: its items of those
        keys, None for a missing one). ``names`` may instead be a list of such tuples, one per
        object from ``start`` on (each object's own; the first ``start`` must be the kept ones),
        where None keeps an object by identity alone (its class and attributes not read).

        Raises:
            TypeError: ``names`` neither a dict nor a list.
            ValueError: a list not one per object from ``start`` on, or the first ``start``
                objects not the kept ones.
        """

@final
class _Fields:
    """Internal. What the copies of some objects were made of (each a :class:`_Held`), each object
    at its place in a list, told unchanged in one pass."""

    def __new__(cls) -> _Fields: ...
    def __len__(self) -> int: ...
    def add(self, index: int, held: _Held, /) -> None:
        """Keep ``held`` for the object at ``index``, replacing what was kept there."""
    def discard(self, index: int, /) -> None:
        """Forget what is kept at ``index``."""
    def clear(self) -> None:
        """Forget everything kept."""
    def current(self, objects: list[Any], /) -> bool:
        """Whether every kept object still at its place in ``objects`` holds the fields kept (the
        same objects, in the same order); the ones no longer there are forgotten. False too when
        another thread holds the fields meanwhile."""

@final
class _Held:
    """Internal. Every field of one object, by identity, told unchanged later."""

    @staticmethod
    def of(obj: Any, own: Literal["items", "attrs"] | None, group: str | None = None, /) -> _Held | None:
        """The fields of ``obj``: ``own``, how its own fields are read (``"items"``: a dict of the
        class ``dict`` itself; ``"attrs"``: an object's ``__dict__`` and non-empty
        ``__pydantic_extra__``; None: only the object itself); ``group``, an attribute holding a
        list or tuple whose members' fields are kept too (each a plain dict's items or an object's
        attributes). None when a field is not there to read that way."""
    def same(self) -> bool:
        """Whether the object holds the fields kept (the same objects, in the same order)."""

@final
class _Trimmer:
    """Internal. :func:`trim_messages`' fast path kept across calls, for an adapter whose list grows
    call by call: it holds what the last call read (each message's role, counts and call ids, found
    again by the identity of the dicts: they must not change in place, and a list given again must
    only have grown) and reads only the rest. Beside each dict it holds the caller's object for it,
    and for each changed copy it made, the object :meth:`remember` was told for it."""

    def __new__(cls, *, encoding: Encoding = "o200k_base") -> _Trimmer: ...
    def trim(
        self,
        dicts: list[JsonDict],
        objects: list[Any],
        max_tokens: int,
        /,
        *,
        clear: bool = True,
        recent_messages: int = 12,
        recent_tools: int = 3,
        clear_at_least: int = 0,
        reserved_output: int = 0,
        safety_margin: int = 0,
        clear_tool_inputs: bool = False,
        recall_ids: bool = True,
        fresh: bool = False,
    ) -> tuple[list[Any], list[tuple[int, int]]] | None:
        """``trim_messages(dicts, max_tokens, format="openai", ...)`` with each kept dict given back
        as the object at its place in ``objects`` (unchanged) or the one :meth:`remember` was told
        for the same change; the other changed copies as they are, listed beside as ``(position,
        index)`` (but for a dict that is its own object in ``objects``: its copy is its object).
        None when the fast path does not apply (call :func:`trim_messages`). With
        ``fresh``, every dict is read again (dicts that may have changed in place since the last
        call: only the mapping to ``objects`` is this trimmer's; nothing of the last call is read, and
        nothing of this one is held for a later call).

        Raises:
            BudgetError: the system messages, the request and the last round do not fit."""
    def remember(self, index: int, copy: JsonDict, object: Any, /) -> None:
        """That ``object`` stands for ``copy``, the changed copy of message ``index`` the last
        :meth:`trim` gave back."""

def _chat_tokens(dicts: list[JsonDict], /, *, encoding: Encoding = "o200k_base") -> int | None:
    """Internal. The tokens of ``dicts`` as a :class:`Conversation` of them counts them, read as the
    fast path reads a list; None when one is not a plain OpenAI Chat message with a string content."""

def _plain_dicts(objects: list[Any], /) -> bool:
    """Internal. Whether every one of ``objects`` is a plain dict (of the class ``dict`` itself)."""

def _any_field(objects: list[Any], name: str, /) -> bool:
    """Internal. Whether any of ``objects`` holds a true value under ``name``: a plain dict's item,
    or another object's own attribute (``__dict__``, then ``__pydantic_extra__``): ``name`` is never
    looked up as an attribute."""

def _fork_prepare() -> None:
    """Internal (registered with ``os.register_at_fork(before=...)`` when the module loads): wait
    until no other thread is building an encoding or inside the core's shared memos, and hold them
    until :func:`_fork_release`, so that a forked child finds none of them held."""

def _fork_release() -> None:
    """Internal (``after_in_parent`` and ``after_in_child``): let go what :func:`_fork_prepare` took."""

def _heuristic_features(texts: list[str], /) -> list[list[float]]:
    """The heuristic's regressors per text (used by ``benches/calibrate_heuristic.py``)."""

def _equal_shares(sizes: list[int], total: int, /) -> list[int]:
    """Internal. Equal shares of ``total`` tokens over texts of ``sizes`` tokens, smallest first: a text
    under its share stays whole (the compaction ladder's cut of a round)."""

def _fit_summary(
    latest: str | None,
    sections: list[list[str]],
    cap: int,
    /,
    *,
    encoding: str,
    request_room: int,
    recall_id: str | None,
    held: str | None,
    constraints: list[bool],
    facts: _HandoffFacts | None = None,
    latest_cut: bool = False,
) -> tuple[str, int | None]:
    """Internal. The offline summary's fit within ``cap`` tokens (``summarize._fit``): ``sections``
    holds the lines of each of its sections in their order, ``constraints`` which user message
    lines constrain the work; ``facts``: a handoff whose tests and decisions (``- name: status``,
    ``- text``, most recent first) come before the lines given of those sections, each line once;
    ``latest_cut``: ``latest`` is cut already (headed ``_SUMMARY_LATEST_CUT`` even when kept whole).
    The summary and its tokens, or the text still over the cap with its first sections only and
    None (the caller cuts it)."""

def _give_way(shares: list[int], sizes: list[int], over: int, /) -> list[int] | None:
    """Internal. ``shares`` with the largest cut text (share under its size, the first of equals) giving up
    ``over`` tokens; None when no text is cut or it would keep less than one token."""

@final
class Truncation:
    """The result of :func:`truncate`. ``str(t)`` is ``t.text``."""

    @property
    def text(self) -> str:
        """The text to use: the original when it fits, else head + marker + tail."""
    @property
    def truncated(self) -> bool: ...
    @property
    def kept(self) -> Literal["all", "head", "tail", "head_tail"]:
        """What was kept (``"auto"`` resolves to ``"head"`` or ``"head_tail"``)."""
    @property
    def tail_rule(self) -> str | None:
        """The tail-importance rule that made ``"auto"`` keep the tail, if any."""
    @property
    def head_chars(self) -> int:
        """Characters of the original kept at the start: ``text`` starts with ``original[:head_chars]``."""
    @property
    def tail_chars(self) -> int:
        """Characters of the original kept at the end."""
    @property
    def original_chars(self) -> int: ...
    @property
    def original_bytes(self) -> int: ...
    @property
    def original_lines(self) -> int:
        """Line breaks in the original."""
    @property
    def omitted_chars(self) -> int: ...
    @property
    def omitted_bytes(self) -> int: ...
    @property
    def omitted_lines(self) -> int:
        """Line breaks in the omitted text."""
    @property
    def omitted_tokens(self) -> int | None:
        """Tokens omitted, for token budgets with ``count_omitted_tokens=True``."""

def truncate(
    text: str,
    max_size: int,
    /,
    *,
    unit: Unit = "chars",
    strategy: TruncateStrategy = "auto",
    head_share: float = 0.5,
    encoding: Encoding = "o200k_base",
    recall_id: str | None = None,
    path: str | None = None,
    count_omitted_tokens: bool = False,
    not_stored: bool = False,
    exact: bool = False,
) -> Truncation:
    """Fit ``text`` into ``max_size`` units of ``unit`` (chars, bytes, lines or tokens of ``encoding``).

    Over budget, the result is head + marker + tail: ``"head"`` and ``"tail"`` keep one end,
    ``"head_tail"`` both (``head_share`` of the room to the head), ``"auto"`` both when the tail
    holds what matters (tracebacks, errors, test summaries, exit status, closing JSON brackets;
    see :func:`important_tail`) and the head otherwise. The marker sits where text was removed
    and states the lines and characters omitted, and how to get them back when ``recall_id`` or
    ``path`` is given (or, with ``not_stored`` and neither, that the full text is not stored). Cuts fall on line boundaries when that keeps at least half of the room and
    never inside a character; the output, marker included, never exceeds ``max_size``. Token budgets
    count only the kept lines, not the whole text. With ``exact=True`` (``unit="tokens"`` only) the
    cut is the largest whose whole output counts at most ``max_size`` tokens, counted exactly: the
    room given to the cut is searched up from ``max_size`` (a plain cut may stay well under).

    Raises:
        BudgetError: ``max_size`` cannot hold the marker itself.
        OptionError: an unknown ``unit``, ``strategy`` or ``encoding``; ``max_size`` negative or over
            the 64-bit range; ``head_share`` outside [0, 1] or NaN; ``exact`` with a unit other
            than ``"tokens"`` (ArgumentTypeError for a value of the wrong type).
    """

def page_chars(
    pieces: str | Iterable[str],
    /,
    offset: int = 1,
    lines: int = 500,
    *,
    char_offset: int | None = None,
    max_chars: int = 20_000,
) -> tuple[str, int, int, int, int, int, int, str | None]:
    """One page of a text given whole or in pieces (consumed once, in order: only the page is
    held), by lines (``offset``, 1-based, and ``lines``) or from ``char_offset``, never longer than
    ``max_chars`` characters: ``(text, start, end, total_chars, start_line, end_line, total_lines,
    hint)``, offsets in characters, ``text`` exactly ``full[start:end]``; ``hint`` says how to go on
    when more follows. The pager of the ``recall`` tool (:class:`agentcontext.budgets.RecallPage`).

    Raises:
        OptionError: the offset or char_offset is past the end of the text, or a piece holds a
            lone surrogate (not text).
        ArgumentTypeError: ``pieces`` is not a str or an iterable of str.
    """

def important_tail(text: str, /) -> str | None:
    """The name of the tail-importance rule that fires on the end of ``text`` (``"traceback"``,
    ``"error"``, ``"test summary"``, ``"exit status"``, ``"summary"``, ``"json close"``), or None."""

def json_path(text: str, path: str, /) -> str:
    """The value at ``path`` in the JSON ``text``: ``$`` (the root), ``.key``, ``['key']``,
    ``[n]`` (``[-1]`` is the last), ``[*]`` / ``.*`` (every element or member). A string value is
    given as its own text, anything else as JSON indented by two spaces; a path with a wildcard
    gives the JSON array of every match. Raises OptionError naming the path when it cannot be
    parsed, selects nothing (saying which step failed), or the text is not JSON."""

def json_preview(text: str, /, *, max_chars: int = 2000) -> str | None:
    """A structural preview of a JSON object or array (keys, types, array lengths, first items)
    of at most ``max_chars`` characters; None when ``text`` is not one."""

@final
class Page:
    """One page of a file. ``str(p)`` is ``p.text``."""

    @property
    def text(self) -> str:
        """The lines, then ``[Showing lines A-B of N. Use offset=B+1 to continue.]`` when more follow."""
    @property
    def start_line(self) -> int: ...
    @property
    def end_line(self) -> int: ...
    @property
    def total_lines(self) -> int | None:
        """Lines in the file, or None when the read did not reach the end of the file to count them
        (more than ``8 MiB`` follow the page, or a line of it is longer than that)."""
    @property
    def file_bytes(self) -> int:
        """The file's size: the bytes read when the read reached the end, else its size on disk."""
    @property
    def long_lines_cut(self) -> int: ...
    @property
    def more(self) -> bool: ...
    @property
    def content_hash(self) -> str:
        """A hash of the bytes the read went through, from the start of the file to the end of
        the page and the bytes scanned after it (the whole file when ``total_lines`` is known), to
        tell a changed file from an unchanged one."""

def read_page(
    path: str | PathLike[str],
    /,
    offset: int | None = None,
    lines: int | None = None,
    *,
    max_lines: int = 2000,
    max_bytes: int = 51200,
    line_max_chars: int = 2000,
    byte_gate: int | None = 262144,
    token_gate: int | None = 25000,
    encoding: Encoding = "o200k_base",
    line_numbers: bool = True,
) -> Page:
    """Read one page of a text file: ``lines`` lines (at most ``max_lines``, the default) or ``max_bytes``
    bytes, whichever comes first, from line ``offset`` (1-based; 0 reads as 1); lines longer than
    ``line_max_chars`` characters (or ``max_bytes`` bytes) are cut with a marker.

    The file is streamed, never read whole: the lines before ``offset`` are skipped in a fixed
    buffer, and past the page at most 8 MiB more are looked at (the rest of cut lines, then the
    lines after the page to count them). Memory stays in the size of a page; when the file goes on
    beyond that, ``total_lines`` is None and the hint says "of at least N". Only regular files are
    read (a symlink to one is followed).

    Raises:
        FileReadError: with a message written for the model — the file is over ``byte_gate``
            bytes and no ``offset``/``lines`` was given, the page is over ``token_gate`` tokens, the file
            is binary or not UTF-8 (in the lines shown), the offset is past the end, the path is a
            directory or not a regular file (``kind="not_regular"``: a FIFO, a device, a socket),
            or it cannot be read.
        OptionError: a negative ``offset`` or ``lines``.
    """

def page_text(
    text: str,
    /,
    offset: int | None = None,
    lines: int | None = None,
    *,
    name: str = "text",
    max_lines: int = 2000,
    max_bytes: int = 51200,
    line_max_chars: int = 2000,
    token_gate: int | None = None,
    encoding: Encoding = "o200k_base",
    line_numbers: bool = False,
) -> Page:
    """:func:`read_page` over text in memory."""

def validate(
    messages: Iterable[Message], /, *, format: FormatOrAuto = "auto", system: str | Iterable[Message] | None = None
) -> list[Violation]:
    """:meth:`Conversation.validate` for a whole list of messages."""

@overload
def repair(
    messages: Iterable[Message],
    /,
    *,
    format: Literal["openai", "responses", "jsonl", "auto"] = "auto",
    system: None = None,
    leave_open: bool = False,
) -> tuple[list[JsonDict], list[Change]]: ...
@overload
def repair(
    messages: Iterable[Message],
    /,
    *,
    format: Literal["anthropic"],
    system: str | Iterable[Message] | None = None,
    leave_open: bool = False,
) -> tuple[AnthropicRequest, list[Change]]: ...
@overload
def repair(
    messages: Iterable[Message],
    /,
    *,
    format: Literal["auto"] = "auto",
    system: str | Iterable[Message],
    leave_open: bool = False,
) -> tuple[AnthropicRequest, list[Change]]: ...
@overload
def repair(
    messages: Iterable[Message],
    /,
    *,
    format: FormatOrAuto = "auto",
    system: str | Iterable[Message] | None = None,
    leave_open: bool = False,
) -> tuple[list[JsonDict] | AnthropicRequest, list[Change]]:
    """:meth:`Conversation.repair` for a whole list: ``(messages, changes)``, the messages in the
    same format, shaped by the arguments alone (never by what ``"auto"`` detects): with
    ``format="anthropic"`` or ``system=`` given, the request fields ``{"system", "messages"}``;
    otherwise a list (an Anthropic list found by ``"auto"`` comes back a list too, a system prompt
    first with role ``"system"``, as :meth:`Conversation.to_format` writes it).

    ``leave_open=True``: the calls of the last message that is not a tool result, when nothing but
    results follows them once repaired (an agent's loop waiting on its tools), are left without a
    synthesized result: theirs may still come. A result after them that becomes a user message
    ends the wait (they get the interrupted result). Default ``False``: every call without a
    result gets one.

    Raises:
        ArgumentTypeError: ``leave_open`` not True or False.
    """

def token_cache_info() -> TokenCacheInfo:
    """What the process's token-count memo holds and how it has been used.

    Message contents (and clearing placeholders) counted under ``o200k_base``, ``cl100k_base``
    or ``heuristic`` are remembered by a hash of the text (two 64-bit hashes), so a whole list
    passed again on the next call is not counted again: a list that grew by one message costs one
    count. Texts under 16 bytes are counted directly. ``capacity``: entries held at most (default
    131,072, rounded down to a multiple of 32); ``bytes``: what its tables have allocated;
    ``hits``/``misses``: look-ups since the process started. Thread-safe."""

def token_cache_clear(*, capacity: int | None = None) -> None:
    """Empty the token-count memo; ``capacity`` (entries, rounded down to a multiple of 32; 0
    turns memoizing off) replaces the current one.

    Raises:
        OptionError: ``capacity`` negative or over the 64-bit range.
    """

@overload
def trim_messages(
    messages: Iterable[Message],
    max_tokens: int,
    /,
    *,
    format: Literal["openai", "responses", "jsonl", "auto"] = "auto",
    system: None = None,
    encoding: Encoding = "o200k_base",
    clear: bool = True,
    recent_messages: int = 12,
    recent_tools: int = 3,
    clear_at_least: int = 0,
    reserved_output: int = 0,
    safety_margin: int = 0,
    clear_tool_inputs: bool = False,
    recall_ids: bool = True,
) -> list[JsonDict]: ...
@overload
def trim_messages(
    messages: Iterable[Message],
    max_tokens: int,
    /,
    *,
    format: Literal["anthropic"],
    system: str | Iterable[Message] | None = None,
    encoding: Encoding = "o200k_base",
    clear: bool = True,
    recent_messages: int = 12,
    recent_tools: int = 3,
    clear_at_least: int = 0,
    reserved_output: int = 0,
    safety_margin: int = 0,
    clear_tool_inputs: bool = False,
    recall_ids: bool = True,
) -> AnthropicRequest: ...
@overload
def trim_messages(
    messages: Iterable[Message],
    max_tokens: int,
    /,
    *,
    format: Literal["auto"] = "auto",
    system: str | Iterable[Message],
    encoding: Encoding = "o200k_base",
    clear: bool = True,
    recent_messages: int = 12,
    recent_tools: int = 3,
    clear_at_least: int = 0,
    reserved_output: int = 0,
    safety_margin: int = 0,
    clear_tool_inputs: bool = False,
    recall_ids: bool = True,
) -> AnthropicRequest: ...
@overload
def trim_messages(
    messages: Iterable[Message],
    max_tokens: int,
    /,
    *,
    format: FormatOrAuto = "auto",
    system: str | Iterable[Message] | None = None,
    encoding: Encoding = "o200k_base",
    clear: bool = True,
    recent_messages: int = 12,
    recent_tools: int = 3,
    clear_at_least: int = 0,
    reserved_output: int = 0,
    safety_margin: int = 0,
    clear_tool_inputs: bool = False,
    recall_ids: bool = True,
) -> list[JsonDict] | AnthropicRequest:
    """Fit a whole list into ``max_tokens``: clear old tool results, then keep the system messages,
    the latest user request (a user message that is not only tool results and not a text a harness
    put there — a task notification, an interruption marker, a reminder; a summary of earlier
    history when no request follows it) and the longest recent
    protocol-complete suffix that fits beside them. A list that is not pair-valid is repaired
    first as :func:`repair` repairs it (a call without its result gets one saying it was
    interrupted, a result without its call becomes a user message that says so), except the calls
    of the last message that are still waiting for their results. The request is kept verbatim, or cut to head +
    marker + tail when it does not fit whole beside the last round after it. Returned in the same
    format, shaped by the arguments alone (never by what ``"auto"`` detects): with
    ``format="anthropic"`` or ``system=`` given, the request fields ``{"system", "messages"}``;
    otherwise a list (an Anthropic list found by ``"auto"`` comes back a list too, a system prompt
    first with role ``"system"``, as :meth:`Conversation.to_format` writes it). The messages the library did not change are the caller's own objects (new dicts only
    for cleared results, cleared arguments and a cut request) when the list is OpenAI Chat or native dicts with
    string or null contents, no ``system=`` is given, every tool call is answered in the tool
    messages right after it (a reused call id is fine), and no result is orphan or duplicate and
    no message empty; any other input comes back converted, as new objects.
    ``clear_tool_inputs=True`` also replaces the arguments of old calls (outside the last
    ``recent_tools`` calls and ``recent_messages`` messages) by
    ``{"cleared": "[cleared: arguments of write(path=a.py, ...), 1,234 tokens; recall id
    <id>#arguments]"}``, whether or not their results are cleared: ``Recall(originals=messages)``
    gives the original arguments back by that name (and a cleared result by its call id; the
    k-th call of a reused id by ``<id>#k``, as :meth:`Conversation.clear_tool_results` names it).
    ``recall_ids=False`` makes both placeholders say ``...; not stored]`` instead, for a caller
    whose fitted list replaces the one it holds (nothing keeps the originals).

    Raises:
        BudgetError: the system messages, the request (cut to its least) and the last indivisible
            round after it do not fit together (``needed`` says how much would).
        OptionError: a negative count, or one over the 64-bit range.
        ArgumentTypeError: ``clear`` or ``clear_tool_inputs`` is not True or False.
    """

@final
class MemoryIndex:
    """The index of one memory directory (``*.md`` record files with front matter), kept between
    refreshes: :meth:`refresh` reads (in parallel) only files that are new or changed since the
    last one (by inode, size, mtime and ctime). Broken files are reported by :meth:`problems`,
    never raised. Thread-safe."""

    def __new__(cls, directory: str | PathLike[str], /) -> MemoryIndex: ...
    @property
    def directory(self) -> Path:
        """The directory, as given (a ``pathlib.Path``)."""
    def refresh(self) -> RefreshStats:
        """Bring the index up to date; returns ``files``, ``read``, ``reused`` and ``removed``.
        Raises :class:`~agentcontext.errors.FileReadError` if the directory cannot be listed."""
    def render(self, *, max_lines: int = 200, max_bytes: int = 25_000) -> str:
        """The index for the system prompt: one line per record, ``- name (type, file):
        description``, grouped by type (user, feedback, project, reference) then by name; when
        not all fit in ``max_lines`` / ``max_bytes``, a last line says how many are not listed.
        Raises :class:`~agentcontext.errors.BudgetError` when not even that line fits."""
    def records(self) -> list[MemoryRecord]:
        """Valid records in index order: ``name``, ``type``, ``description``, ``updated``, ``file``, ``bytes``."""
    def get(self, name: str, /) -> MemoryRecordWithBody | None:
        """Record ``name`` with its ``body``, or None."""
    def problems(self) -> list[tuple[str, str]]:
        """(file name, reason) for each ``*.md`` file that is not a valid record."""
    def search(
        self, query: str, /, *, regex: bool = False, limit: int = 10, snippet_chars: int = 240
    ) -> list[MemoryHit]:
        """Records matching ``query`` (words, case-insensitive, ``"a phrase"`` quoted; or a regular
        expression) in name, description or body, best first (BM25, name and description weighted
        up), each with ``score``, ``matches`` and ``snippets`` of the body."""
    def __len__(self) -> int: ...

def check_memory_record(file: str, text: str, /) -> str | None:
    """Why ``text`` is not a valid record file named ``file``, or None when it is."""

def search_log(
    path: str | PathLike[str],
    query: str,
    /,
    *,
    regex: bool = False,
    limit: int = 10,
    snippet_chars: int = 240,
    snippets: int = 2,
    max_bytes: int = 1073741824,
) -> SearchResult:
    """Search every message of a session log (``agentcontext.SessionLog``), cleared, cut and
    summarized ones included: ``messages`` (message records in the log), ``matched``, ``skipped``
    (lines that could not be read as a record: not JSON, a number out of range, a torn last line;
    not counted in ``messages``) and ``hits``, best first, each with ``message`` (its log index), ``line``, ``role``, ``recall_id`` (for a tool result,
    the recall id its placeholder names: the call id, or ``<id>#k`` for the k-th call of an id the
    log reuses, None when two calls would have that name), ``score``, ``matches`` and
    ``snippets``. The log is read as a stream, only if it is at most ``max_bytes`` bytes (read
    twice when a hit is a tool result: its name depends on the calls before and after it); a file
    that does not start with a session log's header raises ``FileReadError`` of kind
    ``"not_a_session_log"``."""

def search_messages(
    conversation: Conversation,
    query: str,
    /,
    *,
    regex: bool = False,
    limit: int = 10,
    snippet_chars: int = 240,
    snippets: int = 2,
) -> SearchResult:
    """Search the messages of ``conversation`` as :func:`search_log` searches a log's: ``message``
    is the position in the conversation, ``line`` is None and ``skipped`` is 0."""
