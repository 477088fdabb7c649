"""The /context view (:class:`~agentcontext.measure.context_view.ContextView`) as text and as HTML
for Jupyter: one stacked bar of the window by kind, then a row per part (and per inner part), with
tokens, the share of the window and a bar. The HTML is a self-contained fragment like the other
views of :mod:`agentcontext.display` (inline CSS scoped to ``.ac-view``, no script, every text
escaped); rows carry ``data-kind``, ``data-tokens`` and ``data-share``."""

from __future__ import annotations

from typing import TYPE_CHECKING

from agentcontext.display import _CSS, _bar, _e, _table

if TYPE_CHECKING:
    from agentcontext.measure.context_view import ContextPart, ContextView

__all__ = ["KIND_COLORS", "KIND_LABELS", "view_html", "view_text"]

#: A colour per kind of part (mid-tone, readable on light and dark themes).
KIND_COLORS: dict[str, str] = {
    "section": "#8b5cf6",
    "tools": "#a855f7",
    "reminders": "#ec4899",
    "system": "#6366f1",
    "pinned": "#0ea5e9",
    "summary": "#3b82f6",
    "ledger": "#14b8a6",
    "history": "#10b981",
    "reserved_output": "#f59e0b",
    "safety_margin": "#f97316",
    "autocompact_buffer": "#ef4444",
    "free": "rgba(127,127,127,.25)",
}
KIND_LABELS: dict[str, str] = {
    "section": "system prompt",
    "tools": "tool definitions",
    "reminders": "reminders",
    "system": "system messages",
    "pinned": "pinned",
    "summary": "summary",
    "ledger": "task ledger",
    "history": "history",
    "reserved_output": "reserved output",
    "safety_margin": "safety margin",
    "autocompact_buffer": "autocompact buffer",
    "free": "free space",
}


def _rows(view: ContextView) -> list[tuple[int, ContextPart]]:
    out: list[tuple[int, ContextPart]] = []
    for part in view.parts:
        out.append((0, part))
        out += [(1, inner) for inner in part.parts]
    return out


def view_text(view: ContextView) -> str:
    """The view as a text table: a row per part (inner parts indented), tokens and share of the
    window, the request's total and the window's."""
    head = (
        f"request: {view.request_tokens:,} tokens ({view.request_tokens / view.context_window:.1%} of a "
        f"{view.context_window:,}-token window; auto compaction at {view.trigger_tokens:,}; {view.encoding})"
    )
    table = [["source", "kind", "tokens", "share"]]
    for depth, part in _rows(view):
        if depth == 0 and part.kind == "reserved_output":
            table.append(
                ["request total", "", f"{view.request_tokens:,}", f"{view.request_tokens / view.context_window:.1%}"]
            )
        name = ("  " * depth) + part.name
        table.append(
            [name, "" if depth else KIND_LABELS.get(part.kind, part.kind), f"{part.tokens:,}", f"{part.share:.1%}"]
        )
    widths = [max(len(r[i]) for r in table) for i in range(4)]
    lines = [head, ""]
    for n, row in enumerate(table):
        cells = [row[0].ljust(widths[0]), row[1].ljust(widths[1]), row[2].rjust(widths[2]), row[3].rjust(widths[3])]
        lines.append("  ".join(cells).rstrip())
        if n == 0:
            lines.append("  ".join("-" * w for w in widths))
    if view.over:
        lines.append(f"over the room the window leaves the request by {view.over:,} tokens")
    lines += [f"note: {note}" for note in view.notes]
    return "\n".join(lines)


def _stack(view: ContextView) -> str:
    """One bar of the window, a segment per kind."""
    by_kind: dict[str, int] = {}
    for part in view.parts:
        by_kind[part.kind] = by_kind.get(part.kind, 0) + part.tokens
    total = max(view.context_window, sum(by_kind.values()))
    segments = "".join(
        f'<div class="ac-seg" data-kind="{_e(kind)}" title="{_e(KIND_LABELS.get(kind, kind))}: {tokens:,}" '
        f'style="width:{100.0 * tokens / total:.3f}%;background:{KIND_COLORS.get(kind, "#94a3b8")};height:14px"></div>'
        for kind, tokens in by_kind.items()
        if tokens
    )
    legend = "".join(
        f'<span class="ac-legend-item" data-key="{_e(kind)}"><span class="ac-sw" '
        f'style="background:{KIND_COLORS.get(kind, "#94a3b8")}"></span>{_e(KIND_LABELS.get(kind, kind))} {tokens:,}</span>'
        for kind, tokens in by_kind.items()
        if tokens
    )
    return (
        '<div class="ac-window" style="display:flex;width:100%;max-width:640px;border-radius:2px;overflow:hidden;'
        f'background:rgba(127,127,127,.15)">{segments}</div><div class="ac-legend">{legend}</div>'
    )


def view_html(view: ContextView) -> str:
    """The view as an HTML fragment (see the module docs)."""
    largest = max((p.tokens for p in view.parts), default=0)
    rows = []
    for depth, part in _rows(view):
        color = KIND_COLORS.get(part.kind, "#94a3b8")
        indent = ' style="padding-left:24px"' if depth else ""
        rows.append(
            f'<tr class="ac-part" data-kind="{_e(part.kind)}" data-depth="{depth}" data-tokens="{part.tokens}" '
            f'data-share="{part.share:.6f}"><td{indent}>{_e(part.name)}</td>'
            f"<td>{_e('' if depth else KIND_LABELS.get(part.kind, part.kind))}</td>"
            f'<td class="ac-num">{part.tokens:,}</td><td class="ac-num">{part.share:.1%}</td>'
            f"<td>{_bar(part.tokens, largest, color)}</td></tr>"
        )
    over = f" · <b>over by {view.over:,}</b>" if view.over else ""
    title = (
        f'<div class="ac-title" data-request-tokens="{view.request_tokens}" data-window="{view.context_window}">'
        f"<b>request {view.request_tokens:,} tokens</b> of a {view.context_window:,}-token window "
        f"({view.request_tokens / view.context_window:.1%}) · auto compaction at {view.trigger_tokens:,}{over}</div>"
    )
    notes = "".join(f'<div class="ac-muted">{_e(n)}</div>' for n in view.notes)
    table = _table("context", ["source", "kind", "tokens", "share", ""], rows)
    return f'<div class="ac-view ac-context-view">{_CSS}{title}{_stack(view)}{table}{notes}</div>'
