"""Models' context windows, output limits and token counters: the one table
:data:`MODEL_WINDOWS`, looked up by :func:`model_window` (and :func:`context_window`,
:func:`encoding_for_model`), extended with :func:`register_model` or per call with ``windows=``.

A model name is matched the way LiteLLM users write it: ``"gpt-4.1"``, a dated snapshot
(``"gpt-4.1-2025-04-14"``, ``"claude-sonnet-4-5-20250929"``), a provider prefix
(``"openai/gpt-4.1"``, ``"anthropic/claude-sonnet-4-5"``, ``"openrouter/anthropic/claude-sonnet-4.5"``),
a Bedrock id (``"us.anthropic.claude-sonnet-4-20250514-v1:0"``) or a Vertex one
(``"claude-sonnet-4-5@20250929"``). After that normalisation the longest table key that is the
whole name or a prefix of it ending at a ``-``, ``:``, ``@`` or ``_`` wins, so ``gpt-4o-mini`` is
``gpt-4o`` but ``gpt-4.5-preview`` is not ``gpt-4``. An unknown model is an
:class:`~agentcontext.errors.UnknownModelError` naming the closest known names, never a guess.

The counter of a model (:func:`encoding_for_model`): ``o200k_base`` for the GPT-4o, GPT-4.1,
GPT-5 and o-series models, ``cl100k_base`` for GPT-4 and GPT-3.5 (the encodings tiktoken maps
them to), and the fast heuristic for Claude and Gemini, whose tokenizers are not public (it
estimates ``o200k_base`` counts; scale it with :class:`~agentcontext.Calibration` from the
provider's reported usage).
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Mapping
from dataclasses import dataclass

from agentcontext import _checks
from agentcontext.errors import ArgumentTypeError, OptionError, UnknownModelError
from agentcontext.types import Encoding

__all__ = [
    "MODEL_WINDOWS",
    "ModelWindow",
    "context_window",
    "encoding_for_model",
    "model_window",
    "normalize_model_name",
    "register_model",
]

_ENCODINGS: tuple[Encoding, ...] = ("o200k_base", "cl100k_base", "heuristic", "approximate")


@dataclass(frozen=True)
class ModelWindow:
    """What the library knows of one model (family): its context window in tokens, the most
    tokens it writes in one response (``None`` when not known here), the encoding that
    counts for it, and the most tokens its input may take when the API limits the input apart
    from the window (``None``: the window; GPT-5's 400,000-token window takes at most 272,000
    of input)."""

    context_window: int
    max_output_tokens: int | None = None
    encoding: Encoding = "heuristic"
    max_input_tokens: int | None = None

    def __post_init__(self) -> None:
        _checks.count("context_window", self.context_window, minimum=1)
        _checks.optional_count("max_output_tokens", self.max_output_tokens, minimum=1)
        _checks.optional_count("max_input_tokens", self.max_input_tokens, minimum=1)
        if self.max_input_tokens is not None and self.max_input_tokens > self.context_window:
            raise OptionError(
                f"max_input_tokens ({self.max_input_tokens}) is over the context window ({self.context_window})"
            )
        if self.encoding not in _ENCODINGS:
            raise OptionError(f"encoding must be one of {', '.join(_ENCODINGS)}, got {self.encoding!r}")


def _openai(window: int, output: int | None, encoding: Encoding = "o200k_base") -> ModelWindow:
    return ModelWindow(window, output, encoding)


def _anthropic(output: int | None) -> ModelWindow:
    return ModelWindow(200_000, output, "heuristic")


def _gemini(window: int, output: int) -> ModelWindow:
    return ModelWindow(window, output, "heuristic")


#: The table, keyed by model name or family prefix (lower case, as :func:`normalize_model_name`
#: writes names). Only numbers the providers publish are here:
#:
#: - Anthropic, https://docs.anthropic.com/en/docs/about-claude/models/overview (the comparison
#:   table: every model 200K; max output Opus 4/4.1 32,000, Sonnet 4/4.5, Haiku 4.5, Opus 4.5 and
#:   Claude 3.7 Sonnet 64,000, Claude 3.5 8,192, Claude 3 4,096). The 1M-token window of some
#:   Sonnet/Opus models needs a beta header and is not assumed; register it if you use it.
#: - OpenAI, https://platform.openai.com/docs/models (each model's page: context window / max
#:   output tokens).
#: - Google, https://ai.google.dev/gemini-api/docs/models (input token limit / output token limit;
#:   for Gemini the window is the input limit).
MODEL_WINDOWS: dict[str, ModelWindow] = {
    # Anthropic.
    "claude-opus-4": _anthropic(32_000),
    "claude-opus-4-1": _anthropic(32_000),
    "claude-opus-4-5": _anthropic(64_000),
    "claude-sonnet-4": _anthropic(64_000),
    "claude-sonnet-4-5": _anthropic(64_000),
    "claude-haiku-4": _anthropic(64_000),
    # Later 4.x versions: the window is 200K (1M with the beta); their output limit is not
    # assumed to be their predecessors'.
    "claude-opus-4-6": _anthropic(None),
    "claude-sonnet-4-6": _anthropic(None),
    "claude-3-7-sonnet": _anthropic(64_000),
    "claude-3-5-sonnet": _anthropic(8_192),
    "claude-3-5-haiku": _anthropic(8_192),
    "claude-3-opus": _anthropic(4_096),
    "claude-3-haiku": _anthropic(4_096),
    # OpenAI.
    "gpt-5": ModelWindow(400_000, 128_000, "o200k_base", max_input_tokens=272_000),
    "gpt-5-chat": _openai(128_000, 16_384),
    "gpt-4.1": _openai(1_047_576, 32_768),
    "gpt-4o": _openai(128_000, 16_384),
    "gpt-4o-2024-05-13": _openai(128_000, 4_096),
    "gpt-4-turbo": _openai(128_000, 4_096, "cl100k_base"),
    "gpt-4": _openai(8_192, 8_192, "cl100k_base"),
    "gpt-4-32k": _openai(32_768, None, "cl100k_base"),
    "gpt-3.5-turbo": _openai(16_385, 4_096, "cl100k_base"),
    "o4-mini": _openai(200_000, 100_000),
    "o3": _openai(200_000, 100_000),
    "o1": _openai(200_000, 100_000),
    "o1-mini": _openai(128_000, 65_536),
    "o1-preview": _openai(128_000, 32_768),
    "codex-mini": _openai(200_000, 100_000),
    # Google.
    "gemini-2.5-pro": _gemini(1_048_576, 65_536),
    "gemini-2.5-flash": _gemini(1_048_576, 65_536),
    "gemini-2.0-flash": _gemini(1_048_576, 8_192),
    "gemini-1.5-pro": _gemini(2_097_152, 8_192),
    "gemini-1.5-flash": _gemini(1_048_576, 8_192),
}

#: Characters that may follow a table key inside a longer name (a date, a size, a tag).
_BOUNDARY = frozenset("-:@_")
_CLAUDE_DOTTED = re.compile(r"(?<=\d)\.(?=\d)")


def normalize_model_name(model: str) -> str:
    """``model`` as the table spells names: lower case, without a provider or router prefix
    (``openai/``, ``openrouter/anthropic/``, Bedrock's ``us.anthropic.``), without Vertex's
    ``@date``, and with OpenRouter's dotted Claude versions (``claude-sonnet-4.5``) dashed."""
    if not isinstance(model, str):
        raise ArgumentTypeError(f"model must be a model name (str), got {type(model).__name__}")
    name = model.strip().lower().rsplit("/", 1)[-1]
    at = name.find("anthropic.")
    if at >= 0:
        name = name[at + len("anthropic.") :]
    name = name.split("@", 1)[0]
    if name.startswith("claude"):
        name = _CLAUDE_DOTTED.sub("-", name)
    return name


def register_model(
    name: str,
    context_window: int,
    *,
    max_output_tokens: int | None = None,
    encoding: Encoding = "heuristic",
    max_input_tokens: int | None = None,
) -> ModelWindow:
    """Add (or replace) ``name`` in :data:`MODEL_WINDOWS`: an exact name or a family prefix,
    matched like the built-in entries. Returns the entry."""
    entry = ModelWindow(context_window, max_output_tokens, encoding, max_input_tokens)
    MODEL_WINDOWS[normalize_model_name(name)] = entry
    return entry


def _as_entry(key: str, value: int | ModelWindow) -> ModelWindow:
    """``windows[key]`` as an entry: a :class:`ModelWindow` as it is; an int is the window of a
    model still counted as the table counts it (``key``'s entry there; the heuristic for a name
    the table does not know)."""
    if isinstance(value, ModelWindow):
        return value
    if isinstance(value, bool) or not isinstance(value, int):
        raise ArgumentTypeError(
            f"windows[{key!r}] must be a context window (int) or a ModelWindow, got {type(value).__name__}"
        )
    known = _match(normalize_model_name(key), MODEL_WINDOWS)
    return ModelWindow(value, encoding=MODEL_WINDOWS[known].encoding if known is not None else "heuristic")


def _match(name: str, table: Mapping[str, ModelWindow]) -> str | None:
    """The longest key of ``table`` that is ``name`` or a prefix of it ending at a boundary."""
    return max(
        (k for k in table if name == k or (name.startswith(k) and name[len(k)] in _BOUNDARY)),
        key=len,
        default=None,
    )


def model_window(model: str, *, windows: Mapping[str, int | ModelWindow] | None = None) -> ModelWindow:
    """The entry of ``model``: from ``windows`` (names or prefixes mapped to a context window or
    a :class:`ModelWindow`; they win over the table; a window given as an int keeps the counter the
    table has for that name) or :data:`MODEL_WINDOWS`, by the longest
    key that is the normalised name or a prefix of it ending at ``-``, ``:``, ``@`` or ``_``.

    Raises:
        UnknownModelError: no key matches; the message and ``close_matches`` name the nearest.
        ArgumentTypeError: ``model`` is not a string, ``windows`` not a mapping, or a ``windows``
            value is not an int or entry.
    """
    name = normalize_model_name(model)
    if windows is not None and not isinstance(windows, Mapping):
        raise ArgumentTypeError(
            f"windows must be a mapping of model names to context windows (int or ModelWindow), "
            f"got {type(windows).__name__}"
        )
    table: dict[str, ModelWindow] = dict(MODEL_WINDOWS)
    for key, value in (windows or {}).items():
        table[normalize_model_name(key)] = _as_entry(key, value)
    best = _match(name, table)
    if best is None:
        close = _closest(name, list(table))
        hint = f" (closest known: {', '.join(close)})" if close else ""
        raise UnknownModelError(
            f"unknown model {model!r}{hint}: pass its window (context_window=..., windows={{name: tokens}}) "
            "or add it with agentcontext.budgets.register_model",
            model,
            close,
        )
    return table[best]


def _closest(name: str, keys: list[str]) -> list[str]:
    """Up to three known names near ``name``: keys it starts with (longest first), then the
    most similar (difflib)."""
    prefixes = sorted((k for k in keys if name.startswith(k)), key=len, reverse=True)
    similar = difflib.get_close_matches(name, keys, n=3, cutoff=0.5)
    return list(dict.fromkeys([*prefixes, *similar]))[:3]


def context_window(
    model: str, override: int | None = None, *, windows: Mapping[str, int | ModelWindow] | None = None
) -> int:
    """The context window of ``model``: ``override`` when given, else :func:`model_window`'s.

    Raises:
        OptionError: ``override`` is not positive.
        UnknownModelError: the model is not known and no override was given.
    """
    if override is not None:
        if override <= 0:
            raise OptionError(f"context_window must be positive, got {override}")
        return override
    return model_window(model, windows=windows).context_window


def encoding_for_model(model: str, *, windows: Mapping[str, int | ModelWindow] | None = None) -> Encoding:
    """The encoding that counts tokens for ``model`` (:class:`ModelWindow.encoding`): exact BPE
    for OpenAI models, the heuristic for Claude and Gemini.

    Raises:
        UnknownModelError: the model is not known.
    """
    return model_window(model, windows=windows).encoding
