"""The compiled core of agentcontext. Import from ``agentcontext``, not from here."""

from collections.abc import Iterable
from os import PathLike
from typing import Literal, final, overload

from agentcontext.types import (
    AnthropicRequest,
    Encoding,
    Format,
    FormatOrAuto,
    JsonDict,
    Message,
    Stats,
    Target,
    ToolTotals,
    TruncateStrategy,
    Unit,
)

__all__ = [
    "MAX_IMAGE_TOKENS",
    "MESSAGE_OVERHEAD",
    "TOOL_BLOCK_OVERHEAD",
    "Conversation",
    "Page",
    "Truncation",
    "__version__",
    "_heuristic_features",
    "convert",
    "count_tokens",
    "count_tokens_batch",
    "detect_format",
    "estimate_tokens",
    "important_tail",
    "json_preview",
    "page_text",
    "read_page",
    "truncate",
]

__version__: str

#: Tokens every message costs beyond its content: the role and the delimiters around it.
MESSAGE_OVERHEAD: int
#: Tokens a tool call or tool result costs beyond its name, arguments or content.
TOOL_BLOCK_OVERHEAD: int
#: What an image costs when its size is unknown (an URL) or over the limits: the most an image can cost.
MAX_IMAGE_TOKENS: int

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
    another format keeps every tool pairing and every piece of text; fields and blocks only one
    provider understands (signed thinking, server tool blocks) are written only to their own format.

    Raises:
        InvalidMessageError: a message does not have its format's shape (``index`` names it).
        OptionError: an unknown ``format`` or ``encoding`` name.
        TypeError: ``messages`` is not a list or iterable of messages.
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
        path: str | PathLike[str], /, *, format: FormatOrAuto = "auto", encoding: Encoding = "o200k_base"
    ) -> Conversation:
        """Read a transcript file: a JSON array of messages, a request body (``{"system",
        "messages"}`` or ``{"input"}``), or JSON Lines with one message per line.

        Raises:
            TranscriptError: the file is not valid JSON or a message is malformed (``line`` or
                ``index`` says where).
            TranscriptReadError: the file cannot be read.
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

    def to_openai(self) -> list[JsonDict]:
        """OpenAI Chat Completions messages."""

    def to_responses(self) -> list[JsonDict]:
        """OpenAI Responses input items."""

    def to_jsonl(self) -> list[JsonDict]:
        """The library's own messages, one dict per line of a JSONL file."""

    def to_anthropic(self) -> AnthropicRequest:
        """``{"system": ..., "messages": [...]}`` for ``client.messages.create(**conv.to_anthropic(), ...)``;
        ``system`` is present only when the conversation starts with system messages.

        Raises:
            ConversionError: a system message after the conversation started (Anthropic has no
                place for it).
        """

    def to_format(self, format: FormatOrAuto, /) -> list[JsonDict]:
        """Messages in the named format; for ``"anthropic"`` a system prompt is the first element
        with role ``"system"``."""

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
) -> list[JsonDict]: ...
def _heuristic_features(texts: list[str], /) -> list[list[float]]:
    """The heuristic's regressors per text (used by ``benches/calibrate_heuristic.py``)."""

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
    limit: int,
    /,
    *,
    unit: Unit = "chars",
    strategy: TruncateStrategy = "auto",
    head_share: float = 0.5,
    encoding: Encoding = "o200k_base",
    recall_id: str | None = None,
    path: str | None = None,
    count_omitted_tokens: bool = False,
) -> Truncation:
    """Fit ``text`` into ``limit`` units (chars, bytes, lines or tokens of ``encoding``).

    Over budget, the result is head + marker + tail: ``"head"`` and ``"tail"`` keep one end,
    ``"head_tail"`` both (``head_share`` of the room to the head), ``"auto"`` both when the tail
    holds what matters (tracebacks, errors, test summaries, exit status, closing JSON brackets;
    see :func:`important_tail`) and the head otherwise. The marker sits where text was removed
    and states the lines and characters omitted, and how to get them back when ``recall_id`` or
    ``path`` is given. Cuts fall on line boundaries when that keeps at least half of the room and
    never inside a character; the output, marker included, never exceeds ``limit``. Token budgets
    count only the kept lines, not the whole text.

    Raises:
        BudgetError: ``limit`` cannot hold the marker itself.
        OptionError: an unknown ``unit``, ``strategy`` or ``encoding``.
    """

def important_tail(text: str, /) -> str | None:
    """The name of the tail-importance rule that fires on the end of ``text`` (``"traceback"``,
    ``"error"``, ``"test summary"``, ``"exit status"``, ``"summary"``, ``"json close"``), or None."""

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
    def total_lines(self) -> int: ...
    @property
    def file_bytes(self) -> int: ...
    @property
    def long_lines_cut(self) -> int: ...
    @property
    def more(self) -> bool: ...
    @property
    def content_hash(self) -> str:
        """A hash of the whole file, to tell a changed file from an unchanged one."""

def read_page(
    path: str | PathLike[str],
    /,
    offset: int | None = None,
    limit: int | None = None,
    *,
    max_lines: int = 2000,
    max_bytes: int = 51200,
    line_max_chars: int = 2000,
    byte_gate: int | None = 262144,
    token_gate: int | None = 25000,
    encoding: Encoding = "o200k_base",
    line_numbers: bool = True,
) -> Page:
    """Read one page of a text file: at most ``max_lines`` lines (or ``limit``) or ``max_bytes``
    bytes, whichever comes first, from line ``offset`` (1-based); lines longer than
    ``line_max_chars`` are cut with a marker.

    Raises:
        FileReadError: with a message written for the model — the file is over ``byte_gate``
            bytes and no offset/limit was given, the page is over ``token_gate`` tokens, the file
            is binary or not UTF-8, the offset is past the end, or it cannot be read.
    """

def page_text(
    text: str,
    /,
    offset: int | None = None,
    limit: int | None = None,
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
