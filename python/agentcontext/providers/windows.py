"""Context windows of common models: :data:`MODEL_WINDOWS` and :func:`context_window`."""

from __future__ import annotations

from agentcontext.errors import OptionError

__all__ = ["MODEL_WINDOWS", "context_window"]

#: Context windows (input + output tokens) of common models, matched by the longest prefix of
#: the model name. Override per provider with ``context_window=``, or add entries here.
MODEL_WINDOWS: dict[str, int] = {
    # Anthropic (the 1M-token window of some Sonnet models needs a beta header; not assumed).
    "claude-opus-4": 200_000,
    "claude-sonnet-4": 200_000,
    "claude-haiku-4": 200_000,
    "claude-3-7-sonnet": 200_000,
    "claude-3-5-sonnet": 200_000,
    "claude-3-5-haiku": 200_000,
    "claude-3-opus": 200_000,
    "claude-3-haiku": 200_000,
    # OpenAI
    "gpt-5": 400_000,
    "gpt-4.1": 1_047_576,
    "gpt-4o": 128_000,
    "gpt-4-turbo": 128_000,
    "gpt-4": 8_192,
    "gpt-3.5-turbo": 16_385,
    "o4-mini": 200_000,
    "o3": 200_000,
    "o1": 200_000,
    "codex-mini": 200_000,
}


def context_window(model: str, override: int | None = None) -> int:
    """The context window of ``model``: ``override`` when given, else the longest prefix match in
    :data:`MODEL_WINDOWS`.

    Raises:
        OptionError: the model is not in the table and no override was given.
    """
    if override is not None:
        if override <= 0:
            raise OptionError(f"context_window must be positive, got {override}")
        return override
    best = max((p for p in MODEL_WINDOWS if model.startswith(p)), key=len, default=None)
    if best is None:
        raise OptionError(
            f"unknown context window for model {model!r}: pass context_window=... "
            "(or add it to agentcontext.providers.MODEL_WINDOWS)"
        )
    return MODEL_WINDOWS[best]
