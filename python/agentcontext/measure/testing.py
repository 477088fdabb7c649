"""Assertion helpers for tests of agents and compaction strategies, with or without pytest.

Each helper raises a plain :class:`AssertionError` whose message says what failed, with message
indices, and returns nothing when the check passes::

    from agentcontext.measure.testing import assert_fits, assert_retains, assert_valid

    result = Compactor("openharness").compact(conv, budget=8000)
    assert_valid(result)  # no orphan or missing tool results, ...
    assert_fits(result)  # within the result's own budget (or assert_fits(result, "25%"))
    assert_retains(result, ["src/app.py", "KeyError"])  # exact texts still in the working set
    assert_retains(result, kinds=["path", "exception"], min_share=0.9)  # probes of result.original

Under pytest (the ``agentcontext`` plugin loads automatically) the tracebacks stop at the line of
the test that called the helper.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from agentcontext._core import Conversation
from agentcontext.compaction import CompactionPolicy, CompactionResult, Compactor, parse_budget, resolve_policy
from agentcontext.errors import AgentContextError, ArgumentTypeError, OptionError
from agentcontext.measure.metrics import (
    PROBE_KINDS,
    VIEWS,
    Probe,
    found_in,
    probes,
    replay,
    replay_policy,
    working_set_text,
)

__all__ = ["assert_cache_stable", "assert_fits", "assert_retains", "assert_valid"]

#: Names that stand for several probe kinds in ``assert_retains(kinds=...)``.
KIND_GROUPS: dict[str, tuple[str, ...]] = {
    "path": ("user_path", "call_path"),
    "user": ("latest_ask", "user_message"),
}

#: At most this many lost facts or violations are listed in a failure message.
MAX_LISTED = 20
#: Texts in failure messages are cut to this many characters.
MAX_TEXT = 120

Checked = Conversation | CompactionResult


def _short(text: str, limit: int = MAX_TEXT) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 3] + "..."


def _listed(lines: list[str], total: int) -> list[str]:
    out = lines[:MAX_LISTED]
    if total > len(out):
        out.append(f"  ... and {total - len(out)} more")
    return out


def _conversation(x: Any, *, format: str = "auto") -> Conversation:
    """The conversation to check: a Conversation, a CompactionResult's working set, a list of
    messages in any format, or an Anthropic ``{"system", "messages"}`` request."""
    if isinstance(x, Conversation):
        return x
    if isinstance(x, CompactionResult):
        return x.conversation
    if isinstance(x, Mapping) and "messages" in x:
        return Conversation(x["messages"], system=x.get("system"))
    if isinstance(x, (str, bytes)) or not isinstance(x, Iterable):
        raise ArgumentTypeError(
            f"expected a Conversation, a CompactionResult or a list of messages, got {type(x).__name__}"
        )
    return Conversation(list(x), format=format)  # type: ignore[arg-type]


def assert_valid(x: Checked | Iterable[Mapping[str, Any]] | Mapping[str, Any], *, format: str = "auto") -> None:
    """Fail unless ``x`` is a valid conversation: every tool call answered once, right after it,
    no reused call ids, thinking first, no empty messages (:meth:`Conversation.validate`).

    ``x`` is a :class:`Conversation`, a :class:`CompactionResult` (its working set is checked) or a
    list of messages in any format (``format`` names it; ``"auto"`` detects it). A message that
    does not even have its format's shape fails too."""
    __tracebackhide__ = True
    try:
        conv = _conversation(x, format=format)
    except ArgumentTypeError:
        raise  # not a conversation at all: the caller's mistake, not a failed assertion
    except AgentContextError as exc:
        raise AssertionError(f"not a valid conversation: {exc}") from None
    violations = conv.validate()
    if not violations:
        return
    n = len(violations)
    items = []
    for v in violations:
        ident = f" (id {v['id']!r})" if v.get("id") is not None else ""
        items.append(f"  message {v['index']}: {v['kind']}{ident}: {v['detail']}")
    header = f"conversation is not valid: {_plural(n, 'protocol violation')} in {_plural(len(conv), 'message')}"
    raise AssertionError("\n".join([header, *_listed(items, n)]))


def _min_share(min_share: object) -> float:
    """``min_share`` checked: a number from 0 to 1 (a share, not a percentage)."""
    if isinstance(min_share, bool) or not isinstance(min_share, (int, float)):
        raise ArgumentTypeError(f"min_share must be a number from 0 to 1, got {type(min_share).__name__}")
    if not 0.0 <= min_share <= 1.0:
        raise OptionError(f"min_share must be between 0 and 1, got {min_share}")
    return float(min_share)


def _plural(n: int, word: str) -> str:
    return f"{n:,} {word}{'s' * (n != 1)}"


def _largest(conv: Conversation, n: int = 3) -> list[str]:
    sizes = conv.message_tokens()
    top = sorted(range(len(sizes)), key=lambda i: (-sizes[i], i))[:n]
    return [f"  message {i} ({conv[i].get('role', '?')}): {sizes[i]:,} tokens" for i in top]


def assert_fits(x: Checked, budget: str | int | None = None, *, original: Conversation | None = None) -> None:
    """Fail when the tokens of ``x`` (a :class:`Conversation` or a :class:`CompactionResult`'s
    working set) are over ``budget``: tokens (``8000``, ``"8,000"``) or a share of the original's
    tokens (``"25%"``; the original is ``result.original`` or ``original=``). With no budget, a
    result is checked against its own ``result.budget``. The message gives the tokens, the
    budget, the overshoot and the largest messages."""
    __tracebackhide__ = True
    base: Conversation | None
    if isinstance(x, CompactionResult):
        conv, base = x.conversation, original if original is not None else x.original
        if budget is None:
            budget = x.budget
    elif isinstance(x, Conversation):
        conv, base = x, original
    else:
        raise ArgumentTypeError(f"expected a Conversation or a CompactionResult, got {type(x).__name__}")
    if budget is None:
        raise ArgumentTypeError("assert_fits needs a budget for a Conversation")
    shared = isinstance(budget, str) and budget.strip().endswith("%")
    if shared and base is None:
        raise OptionError(f"a budget of {budget!r} is a share of the original: pass a CompactionResult or original=")
    limit = parse_budget(budget, base.tokens if base is not None else conv.tokens)
    tokens = conv.tokens
    if tokens <= limit:
        return
    over = tokens - limit
    what = f"{budget} of {base.tokens:,} original tokens = {limit:,}" if shared and base is not None else f"{limit:,}"
    lines = [
        f"working set is over budget: {tokens:,} tokens > {limit:,} (over by {over:,} tokens, {over / limit:.1%})",
        f"  budget: {what}",
        *([f"  why: {x.reason}"] if isinstance(x, CompactionResult) and x.reason else []),
        f"  {_plural(len(conv), 'message')}; the largest:",
        *_largest(conv),
    ]
    raise AssertionError("\n".join(lines))


def _probe_facts(
    facts: Iterable[str | Probe] | None, original: Conversation | None, kinds: Sequence[str] | None
) -> list[str | Probe]:
    if kinds is not None:
        if isinstance(kinds, str):
            kinds = [kinds]
        kinds = list(kinds)
        if not kinds:
            raise OptionError(
                "kinds is empty: it selects no fact, so the check could not fail (kinds=None: every kind)"
            )
        unknown = [k for k in kinds if k not in PROBE_KINDS and k not in KIND_GROUPS]
        if unknown:
            expected = ", ".join([*PROBE_KINDS, *KIND_GROUPS])
            raise OptionError(f"unknown probe kinds {unknown} (expected some of: {expected})")
        kinds = [kind for k in kinds for kind in KIND_GROUPS.get(k, (k,))]
    if facts is None:
        if original is None:
            raise ArgumentTypeError(
                "assert_retains needs facts, original= or a CompactionResult (whose original is used)"
            )
        found: list[str | Probe] = list(probes(original))
    elif isinstance(facts, (str, Probe)):
        found = [facts]
    elif isinstance(facts, Iterable):
        found = list(facts)
    else:
        raise ArgumentTypeError(
            f"facts must be a string, a metrics.Probe or an iterable of them, got {type(facts).__name__}"
        )
    for f in found:
        if not isinstance(f, (str, Probe)):
            raise ArgumentTypeError(f"a fact is a string or a metrics.Probe, got {type(f).__name__}")
    if kinds is not None:
        found = [f for f in found if isinstance(f, str) or f.kind in kinds]
    else:  # a view kind (an artifact path is a call path too) counts only when asked for by name
        found = [f for f in found if isinstance(f, str) or f.kind not in VIEWS]
    return found


def assert_retains(
    x: Checked,
    facts: Iterable[str | Probe] | str | None = None,
    *,
    original: Conversation | None = None,
    kinds: Sequence[str] | None = None,
    min_share: float = 1.0,
) -> None:
    """Fail when the working set ``x`` (a :class:`Conversation` or a :class:`CompactionResult`)
    keeps less than ``min_share`` of ``facts``.

    ``facts`` are strings (exact texts that must appear in the working set: in a message, a tool
    input or a tool result), :class:`~agentcontext.measure.metrics.Probe` objects (found as
    :func:`~agentcontext.measure.metrics.retention` finds them), or None: the probes of ``original``
    (:func:`~agentcontext.measure.metrics.probes`; for a result the default original is
    ``result.original``). ``kinds`` keeps only probes of those kinds (``"call_path"``,
    ``"exception"``, ...; ``"path"`` for both path kinds, ``"user"`` for the user's messages).
    The message lists the lost facts (kind, text, the message they came from)."""
    __tracebackhide__ = True
    min_share = _min_share(min_share)
    if isinstance(x, CompactionResult):
        conv = x.conversation
        if original is None:
            original = x.original
    elif isinstance(x, Conversation):
        conv = x
    else:
        raise ArgumentTypeError(f"expected a Conversation or a CompactionResult, got {type(x).__name__}")
    wanted = _probe_facts(facts, original, kinds)
    haystack = working_set_text(conv)
    lost: list[str] = []
    by_kind: dict[str, list[int]] = {}
    for f in wanted:
        kind: str
        if isinstance(f, Probe):
            ok = found_in(f, haystack)
            kind, label = f.kind, f"{f.kind}: {_short(f.text)!r} (message {f.index})"
        else:
            ok = found_in(Probe("call_path", f, -1), haystack)
            kind, label = "text", f"text: {_short(f)!r}"
        counts = by_kind.setdefault(kind, [0, 0])
        counts[1] += 1
        counts[0] += ok
        if not ok:
            lost.append("  " + label)
    total = len(wanted)
    kept = total - len(lost)
    share = kept / total if total else 1.0
    if share >= min_share:
        return
    lines = [
        (
            f"working set lost {len(lost)} of {total} facts: kept {share:.1%}, required {min_share:.1%}"
            f" ({_plural(len(conv), 'message')}, {_plural(conv.tokens, 'token')})"
        ),
        *_listed(lost, len(lost)),
        "  kept by kind: " + ", ".join(f"{k} {c[0]}/{c[1]}" for k, c in by_kind.items()),
    ]
    raise AssertionError("\n".join(lines))


def assert_cache_stable(
    conv: Conversation,
    strategy: str | CompactionPolicy = "openharness",
    budget: str | int = "50%",
    *,
    min_share: float,
) -> None:
    """Fail when replaying ``conv`` call by call with ``strategy`` under ``budget`` (tokens or a
    share of ``conv``'s tokens) keeps less than ``min_share`` of the request tokens a cached prefix
    of the previous request (:func:`~agentcontext.measure.metrics.replay`, offline summarizer). The message
    lists the calls that broke the cache."""
    __tracebackhide__ = True
    min_share = _min_share(min_share)
    if not isinstance(conv, Conversation):
        raise ArgumentTypeError(f"expected a Conversation, got {type(conv).__name__}")
    policy = resolve_policy(strategy)
    limit = parse_budget(budget, conv.tokens)
    rep = replay(conv, Compactor(replay_policy(policy, limit), environ={}))
    if rep.cache_stability >= min_share:
        return
    broken = [
        f"  call {i}: {p:,} of {r:,} tokens cached ({p / r:.0%})"
        + (" after a compaction" if i in rep.compactions else "")
        for i, (r, p) in enumerate(zip(rep.request_tokens, rep.prefix_tokens, strict=True))
        if i and r and p < r and (i in rep.compactions or p / r < min_share)
    ]
    lines = [
        (
            f"prompt cache stability {rep.cache_stability:.1%} < required {min_share:.1%} with {policy.name} under "
            f"{limit:,} tokens: {len(rep.compactions)} compactions in {rep.turns} calls"
        ),
        *_listed(broken, len(broken)),
    ]
    raise AssertionError("\n".join(lines))
