"""Time in a replay: how long before each replayed call the session was idle, and what the
requests cost when a cache that went cold is written again.

Transcripts rarely keep their timestamps, so the replay assumes a model of time: a call that
answers tool results comes :data:`TOOL_IDLE_SECONDS` after the previous one (the cache is warm),
a call that answers a new user message :data:`USER_IDLE_SECONDS` after it (the user read the
reply and typed: past a 5-minute TTL, within a 1-hour one). A call more than the price table's TTL
after the previous one reads nothing from the cache: its whole request is written.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from agentcontext.errors import OptionError
from agentcontext.probes import is_user_request

if TYPE_CHECKING:
    from agentcontext._core import Conversation
    from agentcontext.compaction.pricing import Prices

__all__ = ["TOOL_IDLE_SECONDS", "USER_IDLE_SECONDS", "call_idle", "timed_tokens"]

#: Seconds between a reply and the call that answers its tool results.
TOOL_IDLE_SECONDS = 10.0
#: Seconds between a reply and the call that answers the user's next message.
USER_IDLE_SECONDS = 600.0


def call_idle(conversation: Conversation) -> list[float]:
    """The idle seconds before each call a replay makes (one per assistant turn after the first
    message, as :func:`agentcontext.measure.metrics.replay` makes them): :data:`USER_IDLE_SECONDS`
    when a real user request came since the previous call, else :data:`TOOL_IDLE_SECONDS`."""
    messages = conversation.to_jsonl()
    out: list[float] = []
    since_user = False
    for i, m in enumerate(messages):
        if i and m.get("role") == "assistant":
            out.append(USER_IDLE_SECONDS if since_user else TOOL_IDLE_SECONDS)
            since_user = False
        elif m.get("role") == "user" and is_user_request(m):
            since_user = True
    return out


def timed_tokens(
    request_tokens: Sequence[int], prefix_tokens: Sequence[int], idle: Sequence[float], prices: Prices
) -> tuple[int, int]:
    """``(read, written)``: the tokens of the requests read from the cache and written to it,
    when a request made more than ``prices``' TTL after the previous one reads nothing."""
    if not len(request_tokens) == len(prefix_tokens) == len(idle):
        raise OptionError(f"{len(request_tokens)} requests, {len(prefix_tokens)} prefixes and {len(idle)} idle times")
    read = written = 0
    for size, prefix, seconds in zip(request_tokens, prefix_tokens, idle, strict=True):
        cached = 0 if seconds > prices.cache_ttl_seconds else prefix
        read += cached
        written += size - cached
    return read, written
