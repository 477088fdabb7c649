"""Views for Jupyter: a conversation and a compaction result as HTML, and context size over turns
as a matplotlib figure.

The HTML is a self-contained fragment: its CSS is inline (a ``<style>`` block whose selectors are
all scoped to ``.ac-view``, plus per-element ``style`` for bar widths and colours), with no
JavaScript and nothing fetched from the network (no fonts, no images). Every piece of message text
is escaped. Colours read on light and dark notebook themes: text inherits the theme's colour, greys
are translucent, and only bars, swatches and badges are coloured. Every row carries ``data-*`` attributes (``data-index``, ``data-role``,
``data-tokens``, ``data-fate``) for tools and tests.

``conversation_repr_html`` and ``result_repr_html`` are the ``_repr_html_`` entry points: they never
raise (see :func:`safe_html`).
"""

from __future__ import annotations

import functools
import io
import json
import os
from collections.abc import Callable, Mapping, Sequence
from html import escape
from typing import TYPE_CHECKING, Any, TypeVar

from agentcontext.errors import MissingExtraError, OptionError

if TYPE_CHECKING:
    from matplotlib.axes import Axes
    from matplotlib.figure import Figure

    from agentcontext._core import Conversation
    from agentcontext.compaction import CompactionResult

__all__ = [
    "FATE_COLORS",
    "ROLE_COLORS",
    "conversation_html",
    "conversation_repr_html",
    "plot_context",
    "result_html",
    "result_repr_html",
    "safe_html",
]

T = TypeVar("T")

#: Bar colours per role group: mid-tone, readable on light and dark backgrounds.
ROLE_COLORS: dict[str, str] = {
    "system": "#8b5cf6",
    "user": "#3b82f6",
    "assistant": "#10b981",
    "tool": "#f59e0b",
    "other": "#94a3b8",
}
#: Bar colours per compaction fate (see :meth:`CompactionResult.fates`).
FATE_COLORS: dict[str, str] = {
    "kept": "#22c55e",
    "changed": "#eab308",
    "summarized": "#3b82f6",
    "dropped": "#ef4444",
}
_FATE_LABELS = {
    "kept": "kept",
    "changed": "changed (cut or cleared)",
    "summarized": "summarized",
    "dropped": "dropped",
}
_ROLE_LABELS = {"system": "system / developer", "user": "user", "assistant": "assistant", "tool": "tool"}

PREVIEW_CHARS = 120
_TITLE_CHARS = 400
_ARGS_CHARS = 60

_MONO = "ui-monospace,SFMono-Regular,Menlo,Consolas,monospace"
# One stylesheet scoped to ``.ac-view``, embedded in every fragment (as pandas does): per-row styles
# stay short. Text colour is never set, so it follows the notebook theme; greys are translucent.
# The `table.ac-t` selectors outrank JupyterLab's defaults (right-aligned cells).
_CSS = (
    "<style>"
    ".ac-view{font-family:system-ui,-apple-system,'Segoe UI',Roboto,sans-serif;font-size:12px;line-height:1.45;"
    "max-width:100%;overflow-x:auto;margin:4px 0}"
    ".ac-view table.ac-t{border-collapse:collapse;margin:4px 0;width:auto;table-layout:auto}"
    ".ac-view table.ac-t th{text-align:left;padding:2px 8px;border:0;border-bottom:1px solid rgba(127,127,127,.45);"
    "font-weight:600;white-space:nowrap}"
    ".ac-view table.ac-t td{text-align:left;padding:1px 8px;border:0;border-bottom:1px solid rgba(127,127,127,.15);"
    "vertical-align:middle;white-space:nowrap}"
    f".ac-view table.ac-t td.ac-num{{text-align:right;font-family:{_MONO}}}"
    ".ac-view table.ac-t td.ac-preview{max-width:60em;overflow:hidden;text-overflow:ellipsis}"
    ".ac-view table.ac-t td.ac-wrap{white-space:normal}"
    ".ac-view table.ac-t tr.ac-elided td{text-align:center;font-style:italic;opacity:.7}"
    ".ac-view .ac-track{width:160px;height:10px;background:rgba(127,127,127,.15);border-radius:2px;overflow:hidden}"
    ".ac-view .ac-bar{height:10px;min-width:0}"
    ".ac-view .ac-muted{opacity:.7}"
    ".ac-view .ac-sw{display:inline-block;width:10px;height:10px;border-radius:2px;margin:0 4px 0 10px;"
    "vertical-align:middle}"
    ".ac-view .ac-legend{margin:2px 0 2px -10px}"
    ".ac-view .ac-badge{display:inline-block;padding:0 6px;border-radius:3px;color:#fff;font-weight:600}"
    ".ac-view .ac-pin{display:inline-block;padding:0 4px;margin-right:4px;border:1px solid currentColor;"
    "border-radius:3px;font-size:10px}"
    ".ac-view details.ac-summary{margin:4px 0}.ac-view details.ac-summary>summary{cursor:pointer}"
    ".ac-view details.ac-summary pre{white-space:pre-wrap;overflow-wrap:anywhere;word-break:break-word;margin:4px 0;"
    f"padding:6px 8px;border-left:3px solid #3b82f6;background:rgba(127,127,127,.08);font-family:{_MONO};"
    "font-size:11px}"
    "</style>"
)
_OK = "#16a34a"
_BAD = "#dc2626"


# -- helpers ------------------------------------------------------------------------------


def _e(value: object) -> str:
    return escape(str(value), quote=True)


def _role_group(role: object) -> str:
    if role in ("system", "developer"):
        return "system"
    if role in ("user", "assistant", "tool"):
        return str(role)
    return "other"


def _part_text(part: object) -> str:
    if isinstance(part, str):
        return part
    if not isinstance(part, Mapping):
        return ""
    kind = part.get("type")
    text = part.get("text")
    if isinstance(text, str) and kind in (None, "text", "input_text", "output_text"):
        return text
    if kind in ("thinking", "reasoning", "redacted_thinking"):
        return "[thinking]"
    if kind in ("image", "image_url", "input_image"):
        return "[image]"
    if isinstance(text, str):
        return text
    return f"[{kind}]" if isinstance(kind, str) else ""


def _content_text(content: object) -> str:
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return " ".join(t for t in (_part_text(p) for p in content) if t)
    return json.dumps(content, ensure_ascii=False, default=str)


def _clip(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _message_text(message: Mapping[str, Any]) -> str:
    """The message as one line: its text, ``name(args…)`` for each tool call, ``← id`` for a result."""
    pieces: list[str] = []
    if message.get("role") == "tool":
        pieces.append(f"← {message.get('tool_call_id') or '?'}")
    text = _content_text(message.get("content"))
    if text:
        pieces.append(text)
    for call in message.get("tool_calls") or []:
        if isinstance(call, Mapping):
            args = call.get("arguments")
            args = args if isinstance(args, str) else json.dumps(args, ensure_ascii=False, default=str)
            pieces.append(f"{call.get('name') or '?'}({_clip(' '.join(args.split()), _ARGS_CHARS)})")
    return " ".join(" ".join(pieces).split())


def _bar(tokens: int, largest: int, color: str) -> str:
    width = 100.0 * tokens / largest if largest > 0 else 0.0
    return (
        f'<div class="ac-track"><div class="ac-bar" data-width="{width:.3f}" '
        f'style="width:{width:.3f}%;background:{color}"></div></div>'
    )


def _legend(colors: Mapping[str, str], labels: Mapping[str, str]) -> str:
    items = "".join(
        f'<span class="ac-legend-item" data-key="{_e(key)}"><span class="ac-sw" style="background:{color}"></span>'
        f"{_e(labels[key])}</span>"
        for key, color in colors.items()
        if key in labels
    )
    return f'<div class="ac-legend">{items}</div>'


def _badge(text: str, color: str, attrs: str = "") -> str:
    return f'<span class="ac-badge"{attrs} style="background:{color}">{_e(text)}</span>'


def _plural(count: int, word: str) -> str:
    return f"{count:,} {word}{'' if count == 1 else 's'}"


def _shown(n: int, max_messages: int) -> tuple[list[int], int, int]:
    """Indices to show, how many are elided and where the elision row goes."""
    if max_messages < 0:
        raise OptionError(f"max_messages must be at least 0, got {max_messages}")
    if n <= max_messages:
        return list(range(n)), 0, n
    tail = max_messages // 2
    head = max_messages - tail
    return [*range(head), *range(n - tail, n)], n - max_messages, head


def _table(kind: str, headers: Sequence[str], rows: Sequence[str]) -> str:
    head = "".join(f"<th>{_e(h)}</th>" for h in headers)
    return f'<table class="ac-t ac-{kind}"><thead><tr>{head}</tr></thead><tbody>{"".join(rows)}</tbody></table>'


def _message_rows(
    conv: Conversation,
    max_messages: int,
    row: Callable[[int, Mapping[str, Any]], tuple[str, str, str, str]],
    columns: int,
) -> list[str]:
    """One ``<tr>`` per shown message and the elision row. ``row(i, message)`` gives the row's
    class and extra attributes, its bar colour and the cells between the tokens and the preview."""
    totals = conv.message_tokens()
    largest = max(totals, default=0)
    pinned = set(conv.pinned)
    shown, elided, at = _shown(len(conv), max_messages)
    elision = (
        f'<tr class="ac-elided" data-elided="{elided}"><td colspan="{columns}">'
        f"… {_plural(elided, 'message')} elided …</td></tr>"
    )
    rows: list[str] = []
    for pos, i in enumerate(shown):
        if elided and pos == at:
            rows.append(elision)
        message = conv[i]
        role = message.get("role")
        tokens = totals[i]
        cls, attrs, color, extra = row(i, message)
        text = _message_text(message)
        pin = '<span class="ac-pin" title="pinned">pinned</span>' if i in pinned else ""
        rows.append(
            f'<tr class="ac-message {cls}"{attrs} data-index="{i}" data-role="{_e(role)}" data-tokens="{tokens}" '
            f'data-pinned="{str(i in pinned).lower()}">'
            f'<td class="ac-num">{i}</td><td class="ac-role">{_e(role)}</td>'
            f"<td>{_bar(tokens, largest, color)}</td>"
            f'<td class="ac-num ac-tokens">{tokens:,}</td>{extra}'
            f'<td class="ac-preview" title="{_e(_clip(text, _TITLE_CHARS))}">{pin}{_e(_clip(text, PREVIEW_CHARS))}</td>'
            "</tr>"
        )
    if elided and at == len(shown):
        rows.append(elision)
    return rows


# -- conversation ---------------------------------------------------------------------------


def conversation_html(conv: Conversation, *, max_messages: int = 500) -> str:
    """The conversation as an HTML fragment: totals and validity, then one row per message with
    a token bar (width relative to the largest message, colour by role) and a short preview.
    Over ``max_messages``, the first and last halves are shown with a row saying how many were
    elided.

    Rows are ``<tr class="ac-message ac-role-<group>" data-index data-role data-tokens
    data-pinned>``; the bar is ``<div class="ac-bar" data-width="<percent>">``.
    """
    n = len(conv)
    pinned = conv.pinned
    violations = conv.validate()
    if violations:
        kinds = ", ".join(sorted({str(v.get("kind")) for v in violations}))
        title = "; ".join(f"{v.get('index')}: {v.get('kind')} {v.get('detail') or ''}".strip() for v in violations[:20])
        validity = (
            _badge(
                _plural(len(violations), "violation"), _BAD, f' data-violations="{len(violations)}" title="{_e(title)}"'
            )
            + f' <span class="ac-muted">{_e(kinds)}</span>'
        )
    else:
        validity = _badge("valid", _OK, ' data-violations="0"')
    header = (
        f'<div class="ac-header"><b>Conversation</b> · {_plural(n, "message")} · {conv.tokens:,} tokens · '
        f"format {_e(conv.format)} · {_plural(conv.tool_calls, 'tool call')}"
        f"{f' · {len(pinned):,} pinned' if pinned else ''} · {validity}</div>"
    )

    def row(i: int, message: Mapping[str, Any]) -> tuple[str, str, str, str]:
        group = _role_group(message.get("role"))
        return f"ac-role-{group}", "", ROLE_COLORS[group], ""

    rows = _message_rows(conv, max_messages, row, 5)
    return (
        f'<div class="ac-view ac-conversation" data-messages="{n}" data-tokens="{conv.tokens}">{_CSS}'
        f"{header}{_legend(ROLE_COLORS, _ROLE_LABELS)}{_table('messages', ['#', 'role', '', 'tokens', 'preview'], rows)}"
        "</div>"
    )


# -- compaction result ----------------------------------------------------------------------


def _detail(detail: Mapping[str, Any]) -> str:
    return ", ".join(
        f"{k}={v:,}" if isinstance(v, int) and not isinstance(v, bool) else f"{k}={v}" for k, v in detail.items()
    )


def result_html(result: CompactionResult, *, max_messages: int = 500) -> str:
    """A compaction result as an HTML fragment: tokens before → after against the budget, a table
    of the ladder's stages, the summary in a ``<details>`` block, then one row per ORIGINAL message
    with a token bar coloured by its fate (kept, changed, summarized, dropped).

    Message rows are ``<tr class="ac-message ac-fate-<fate>" data-index data-role data-fate
    data-tokens data-pinned>``; stage rows ``<tr class="ac-stage" data-stage data-tokens-before
    data-tokens-after>``; the summary is ``<details class="ac-summary"><pre>``.
    """
    original = result.original
    n = len(original)
    fates = result.fates()
    before, after, budget = result.tokens_before, result.tokens_after, result.budget

    change = f" ({(after - before) / before:+.1%})" if before else ""
    fits = (
        _badge("fits", _OK, ' data-fits="true"') if result.fits else _badge("over budget", _BAD, ' data-fits="false"')
    )
    counts = "".join(f" · {fates.count(f):,} {f}" for f in FATE_COLORS if fates.count(f))
    reason = f'<div class="ac-reason"><b>Reason:</b> {_e(result.reason)}</div>' if result.reason else ""
    header = (
        f'<div class="ac-header"><b>Compaction</b> · {before:,} → {after:,} tokens{change} · budget {budget:,} · '
        f'{fits}</div><div class="ac-muted">{n:,} → {_plural(len(result.conversation), "message")}{counts}</div>'
        f"{reason}"
    )

    stage_rows = [
        f'<tr class="ac-stage" data-stage="{_e(s.stage)}" data-tokens-before="{s.tokens_before}" '
        f'data-tokens-after="{s.tokens_after}"><td><b>{_e(s.stage)}</b></td>'
        f'<td class="ac-num">{s.tokens_before:,}</td><td class="ac-num">{s.tokens_after:,}</td>'
        f'<td class="ac-num">{s.tokens_after - s.tokens_before:+,}</td>'
        f'<td class="ac-wrap">{_e(_detail(s.detail))}</td></tr>'
        for s in result.stages
    ]
    stages = _table("stages", ["stage", "before", "after", "Δ", "detail"], stage_rows)

    summary = ""
    if result.summary is not None:
        summary = (
            f'<details class="ac-summary"><summary>Summary ({_plural(len(result.summary), "character")})</summary>'
            f"<pre>{_e(result.summary)}</pre></details>"
        )

    def row(i: int, message: Mapping[str, Any]) -> tuple[str, str, str, str]:
        fate = _e(fates[i])
        return (
            f"ac-fate-{fate}",
            f' data-fate="{fate}"',
            FATE_COLORS.get(fates[i], ROLE_COLORS["other"]),
            f'<td class="ac-fate">{fate}</td>',
        )

    rows = _message_rows(original, max_messages, row, 6)
    return (
        f'<div class="ac-view ac-result" data-tokens-before="{before}" data-tokens-after="{after}" '
        f'data-budget="{budget}" data-fits="{str(bool(result.fits)).lower()}">{_CSS}'
        f"{header}{stages}{summary}{_legend(FATE_COLORS, _FATE_LABELS)}"
        f"{_table('messages', ['#', 'role', '', 'tokens', 'fate', 'preview'], rows)}</div>"
    )


# -- never-raising reprs --------------------------------------------------------------------


def safe_html(fn: Callable[[T], str], obj: T) -> str:
    """``fn(obj)``, or on any exception an escaped ``<pre class="ac-error">`` naming the error
    type: a notebook repr must never raise."""
    try:
        out = fn(obj)
        if not isinstance(out, str):
            raise TypeError(f"{getattr(fn, '__name__', 'view')} returned {type(out).__name__}, not str")
        return out
    except Exception as exc:  # noqa: BLE001 - a repr must not raise, whatever went wrong
        try:
            message = _clip(str(exc), 500)
        except Exception:  # noqa: BLE001 - even str(exc) may fail
            message = ""
        kind = type(exc).__name__
        text = f"<{type(obj).__name__}: HTML view failed with {kind}{f': {message}' if message else ''}>"
        return f'<pre class="ac-error" data-error="{_e(kind)}">{_e(text)}</pre>'


def conversation_repr_html(conv: Conversation) -> str:
    """``Conversation._repr_html_``: :func:`conversation_html` that never raises."""
    return safe_html(conversation_html, conv)


def result_repr_html(result: CompactionResult) -> str:
    """``CompactionResult._repr_html_``: :func:`result_html` that never raises."""
    return safe_html(result_html, result)


# -- plots ----------------------------------------------------------------------------------


def _render_png(fig: Figure) -> bytes:
    buf = io.BytesIO()
    fig.savefig(buf, format="png")
    return buf.getvalue()


def plot_context(
    tokens_per_turn: Sequence[int],
    compactions: Sequence[int] = (),
    *,
    budget: int | None = None,
    trigger: int | None = None,
    title: str | None = None,
    label: str = "context",
    xlabel: str = "turn",
    ylabel: str = "tokens",
    path: str | os.PathLike[str] | None = None,
    ax: Axes | None = None,
) -> Figure:
    """Context size (tokens) over turns, with a dashed vertical line and a marker at every
    compaction turn (an index into ``tokens_per_turn``) and horizontal lines at ``budget`` and
    ``trigger``. Returns the figure, written to ``path`` when given (format from the suffix:
    ``.png``, ``.svg``, ``.pdf``...).

    Without ``ax`` the figure is built on the Agg canvas directly, without pyplot, so the
    notebook's backend is left alone (the figure shows itself in Jupyter through ``_repr_png_``);
    with ``ax`` it is drawn there and that axes' figure is returned.

    Raises:
        MissingExtraError: matplotlib is not installed (``pip install 'agentcontext[plot]'``).
        OptionError: a compaction turn outside ``tokens_per_turn``, or an unknown file suffix.
    """
    try:
        from matplotlib.ticker import StrMethodFormatter
    except ImportError as exc:
        raise MissingExtraError(
            f"plot_context needs matplotlib, which is not installed: pip install 'agentcontext[plot]' ({exc})"
        ) from exc

    tokens = [int(t) for t in tokens_per_turn]
    turns = [int(t) for t in compactions]
    bad = [t for t in turns if not 0 <= t < len(tokens)]
    if bad:
        raise OptionError(f"compaction turns {bad} are outside the {len(tokens)} turns of tokens_per_turn")
    fmt = _image_format(path)
    fig, axes = _figure(ax)

    x = list(range(len(tokens)))
    axes.plot(x, tokens, color=ROLE_COLORS["user"], linewidth=1.6, label=label, gid="ac-context")
    if turns:
        axes.vlines(
            turns, 0, 1, transform=axes.get_xaxis_transform(), colors=ROLE_COLORS["system"],
            linestyles="dashed", linewidth=1, alpha=0.7, label="compaction", gid="ac-compactions",
        )  # fmt: skip
        axes.scatter(
            turns, [tokens[t] for t in turns], color=ROLE_COLORS["system"], marker="v", s=36, zorder=3,
            gid="ac-compaction-points",
        )  # fmt: skip
    if budget is not None:
        axes.axhline(budget, color="#dc2626", linewidth=1.2, label=f"budget ({budget:,})", gid="ac-budget")
    if trigger is not None:
        axes.axhline(
            trigger, color=FATE_COLORS["changed"], linewidth=1.2, linestyle="dotted",
            label=f"trigger ({trigger:,})", gid="ac-trigger",
        )  # fmt: skip
    axes.set_ylim(bottom=0)
    axes.set_xlabel(xlabel)
    axes.set_ylabel(ylabel)
    axes.yaxis.set_major_formatter(StrMethodFormatter("{x:,.0f}"))
    axes.grid(True, alpha=0.3)
    if title:
        axes.set_title(title)
    axes.legend(loc="best", fontsize="small")

    if path is not None:
        fig.savefig(path, format=fmt)
    return fig


def _image_format(path: str | os.PathLike[str] | None) -> str | None:
    """The image format ``path``'s suffix names (None without a path); matplotlib is imported.

    Raises:
        OptionError: a suffix the Agg canvas cannot write.
    """
    if path is None:
        return None
    from matplotlib.backends.backend_agg import FigureCanvasAgg

    fmt = os.path.splitext(os.fspath(path))[1].lstrip(".").lower()
    supported = FigureCanvasAgg.get_supported_filetypes()
    if fmt not in supported:
        expected = ", ".join("." + k for k in sorted(supported))
        raise OptionError(f"cannot tell the image format from {os.fspath(path)!r} (expected one of: {expected})")
    return fmt


def _figure(ax: Axes | None) -> tuple[Figure, Axes]:
    """A new figure on the Agg canvas (no pyplot) and its one axes, or ``ax`` and its top-level
    figure; matplotlib is imported."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure, SubFigure

    if ax is None:
        fig = Figure(figsize=(8, 3.5), layout="constrained")
        FigureCanvasAgg(fig)
        axes = fig.add_subplot()
        # Jupyter shows a pyplot-free figure only through a repr method of its own.
        vars(fig)["_repr_png_"] = functools.partial(_render_png, fig)
        return fig, axes
    parent: Figure | SubFigure = ax.figure
    while isinstance(parent, SubFigure):
        parent = parent.figure
    return parent, ax
