"""The Jupyter views: the HTML of a conversation and of a compaction result (parsed back with the
stdlib parser: rows, attributes, bar widths, escaping, elision), the never-raising reprs, and the
context-size plot (files written, artists drawn, matplotlib missing)."""

from __future__ import annotations

import dataclasses
import re
import subprocess
import sys
from html.parser import HTMLParser
from pathlib import Path
from typing import Any

import pytest

import agentcontext as ac
from agentcontext import display
from agentcontext.compaction import CompactionPolicy, CompactionResult, Compactor
from agentcontext.display import (
    FATE_COLORS,
    ROLE_COLORS,
    conversation_html,
    conversation_repr_html,
    plot_context,
    result_html,
    result_repr_html,
    safe_html,
)
from agentcontext.errors import AgentContextError, MissingExtraError, OptionError
from tests.support import ROOT as ROOT_DIR

EXAMPLE = ROOT_DIR / "examples" / "session.jsonl"
XSS = '<script>alert(1)</script>"><img src=x onerror=alert(2)>'
#: Every tag the views may emit; anything else came from user text.
ALLOWED_TAGS = {"div", "span", "b", "table", "thead", "tbody", "tr", "th", "td", "details", "summary", "pre", "style"}
PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"


# -- a small DOM from the stdlib parser ------------------------------------------------------


@dataclasses.dataclass
class Node:
    tag: str
    attrs: dict[str, str]
    children: list[Node] = dataclasses.field(default_factory=list)
    text: list[str] = dataclasses.field(default_factory=list)

    @property
    def classes(self) -> set[str]:
        return set(self.attrs.get("class", "").split())

    def all_text(self) -> str:
        return "".join(self.text) + "".join(c.all_text() for c in self.children)

    def iter(self) -> Any:
        yield self
        for c in self.children:
            yield from c.iter()

    def find_all(self, tag: str | None = None, cls: str | None = None) -> list[Node]:
        return [n for n in self.iter() if (tag is None or n.tag == tag) and (cls is None or cls in n.classes)]

    def find(self, tag: str | None = None, cls: str | None = None) -> Node:
        found = self.find_all(tag, cls)
        assert found, (tag, cls)
        return found[0]


class TreeBuilder(HTMLParser):
    """Builds a tree and checks that every tag is closed by its own end tag (balanced markup)."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.root = Node("#root", {})
        self.stack = [self.root]

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        node = Node(tag, {k: v or "" for k, v in attrs})
        self.stack[-1].children.append(node)
        self.stack.append(node)

    def handle_startendtag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        raise AssertionError(f"self-closing <{tag}/> in the output")

    def handle_endtag(self, tag: str) -> None:
        assert len(self.stack) > 1, f"</{tag}> without an open tag"
        open_tag = self.stack.pop().tag
        assert open_tag == tag, f"</{tag}> closes <{open_tag}>"

    def handle_data(self, data: str) -> None:
        self.stack[-1].text.append(data)


def parse(html: str) -> Node:
    builder = TreeBuilder()
    builder.feed(html)
    builder.close()
    assert len(builder.stack) == 1, f"unclosed tags: {[n.tag for n in builder.stack[1:]]}"
    tags = {n.tag for n in builder.root.iter()} - {"#root"}
    assert tags <= ALLOWED_TAGS, tags - ALLOWED_TAGS
    # One top-level element: the fragment is self-contained.
    assert len(builder.root.children) == 1
    return builder.root.children[0]


def message_rows(root: Node) -> list[Node]:
    return root.find_all("tr", "ac-message")


def bar(row: Node) -> Node:
    return row.find("div", "ac-bar")


def style_of(node: Node) -> dict[str, str]:
    pairs = (d.split(":", 1) for d in node.attrs.get("style", "").split(";") if d)
    return {k.strip(): v.strip() for k, v in pairs}


def preview(row: Node) -> str:
    return row.find("td", "ac-preview").all_text()


@pytest.fixture(scope="module")
def session() -> ac.Conversation:
    conv = ac.Conversation.from_file(EXAMPLE)
    conv.pin(1)
    return conv


@pytest.fixture(scope="module")
def compacted(session: ac.Conversation) -> CompactionResult:
    return Compactor("openharness").compact(session, budget=8000)


def tool_session() -> ac.Conversation:
    return ac.Conversation(
        [
            {"role": "system", "content": "You are terse."},
            {"role": "developer", "content": "Use tools."},
            {"role": "user", "content": "Read the file " + "x" * 300},
            {
                "role": "assistant",
                "content": None,
                "tool_calls": [
                    {
                        "id": "call_1",
                        "type": "function",
                        "function": {"name": "read_file", "arguments": '{"path": "src/app.py"}'},
                    }
                ],
            },
            {"role": "tool", "tool_call_id": "call_1", "content": "print('hello')\n" * 40},
            {"role": "assistant", "content": "Done."},
        ],
        format="openai",
    )


# -- conversation ---------------------------------------------------------------------------


def test_one_row_per_message_with_its_tokens_and_role(session: ac.Conversation) -> None:
    root = parse(conversation_html(session))
    assert "ac-conversation" in root.classes
    assert root.attrs["data-messages"] == str(len(session))
    assert root.attrs["data-tokens"] == str(session.tokens)
    rows = message_rows(root)
    assert [int(r.attrs["data-index"]) for r in rows] == list(range(len(session)))
    assert [int(r.attrs["data-tokens"]) for r in rows] == session.message_tokens()
    assert [r.attrs["data-role"] for r in rows] == [session[i]["role"] for i in range(len(session))]
    assert [r.find("td", "ac-tokens").all_text().replace(",", "") for r in rows] == [
        str(t) for t in session.message_tokens()
    ]
    assert not root.find_all("tr", "ac-elided")


def test_bars_are_proportional_to_the_largest_message(session: ac.Conversation) -> None:
    rows = message_rows(parse(conversation_html(session)))
    totals = session.message_tokens()
    largest = max(totals)
    for row, tokens in zip(rows, totals, strict=True):
        width = float(bar(row).attrs["data-width"])
        assert width == pytest.approx(100 * tokens / largest, abs=1e-3)
        assert float(style_of(bar(row))["width"].rstrip("%")) == pytest.approx(width, abs=1e-3)
    assert max(float(bar(r).attrs["data-width"]) for r in rows) == pytest.approx(100)


def test_roles_are_coloured_and_previewed() -> None:
    conv = tool_session()
    root = parse(conversation_html(conv))
    rows = message_rows(root)
    assert [r.attrs["data-role"] for r in rows] == ["system", "developer", "user", "assistant", "tool", "assistant"]
    groups = ["system", "system", "user", "assistant", "tool", "assistant"]
    for row, group in zip(rows, groups, strict=True):
        assert f"ac-role-{group}" in row.classes
        assert style_of(bar(row))["background"] == ROLE_COLORS[group]
    legend = [n.attrs["data-key"] for n in root.find_all("span", "ac-legend-item")]
    assert legend == ["system", "user", "assistant", "tool"]

    # Previews: the text clipped to ~120 characters, `name(args)` for a call, the call id for a result.
    user = preview(rows[2])
    assert user.startswith("Read the file xxx") and user.endswith("…") and len(user) <= 120
    assert preview(rows[3]) == 'read_file({"path": "src/app.py"})'
    assert preview(rows[4]).startswith("← call_1 print('hello')")
    # The full text (clipped longer) is in the title.
    assert len(rows[2].find("td", "ac-preview").attrs["title"]) > 120


def test_header_counts_and_validity(session: ac.Conversation) -> None:
    root = parse(conversation_html(session))
    header = root.find("div", "ac-header").all_text()
    assert f"{len(session)} messages" in header
    assert f"{session.tokens:,} tokens" in header
    assert f"format {session.format}" in header
    assert f"{session.tool_calls} tool calls" in header
    assert "1 pinned" in header
    assert root.find("span", "ac-badge").attrs["data-violations"] == "0"

    broken = ac.Conversation(
        [
            {"role": "user", "content": "hi"},
            {"role": "tool", "tool_call_id": "nope", "content": "orphan"},
            {"role": "assistant", "content": "", "tool_calls": [{"id": "c9", "name": "ls", "arguments": "{}"}]},
        ],
        format="jsonl",
    )
    violations = broken.validate()
    assert violations
    badge = parse(conversation_html(broken)).find("span", "ac-badge")
    assert badge.attrs["data-violations"] == str(len(violations))
    assert "violation" in badge.all_text()


def test_pinned_messages_are_marked(session: ac.Conversation) -> None:
    rows = message_rows(parse(conversation_html(session)))
    marked = [int(r.attrs["data-index"]) for r in rows if r.find_all("span", "ac-pin")]
    assert marked == session.pinned == [1]
    assert [r.attrs["data-pinned"] for r in rows[:3]] == ["false", "true", "false"]


def test_anthropic_blocks_are_previewed() -> None:
    conv = ac.Conversation(
        [
            {"role": "user", "content": [{"type": "text", "text": "look"}, {"type": "image", "source": {"type": "url", "url": "http://x/y.png"}}]},
            {"role": "assistant", "content": [{"type": "thinking", "thinking": "hmm", "signature": "s"}, {"type": "text", "text": "ok"}, {"type": "tool_use", "id": "t1", "name": "grep", "input": {"q": "a"}}]},
            {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t1", "content": "found"}]},
        ],
        format="anthropic",
    )  # fmt: skip
    rows = message_rows(parse(conversation_html(conv)))
    assert [preview(r) for r in rows] == ["look [image]", '[thinking] ok grep({"q":"a"})', "← t1 found"]
    assert [r.attrs["data-tokens"] for r in rows] == [str(t) for t in conv.message_tokens()]


def test_user_text_is_escaped() -> None:
    conv = ac.Conversation(
        [
            {"role": "user", "content": XSS},
            {"role": "assistant", "content": XSS, "tool_calls": [{"id": XSS, "name": XSS, "arguments": XSS}]},
            {"role": "tool", "tool_call_id": XSS, "content": XSS},
        ],
        format="jsonl",
    )
    html = conversation_html(conv)
    assert "<script" not in html and "<img" not in html
    assert "&lt;script&gt;alert(1)&lt;/script&gt;&quot;&gt;&lt;img" in html
    root = parse(html)  # only the views' own tags
    rows = message_rows(root)
    assert preview(rows[0]) == XSS
    assert rows[0].find("td", "ac-preview").attrs["title"] == XSS
    assert XSS in preview(rows[2])


def test_elision_keeps_the_first_and_last_halves() -> None:
    conv = ac.Conversation([{"role": "user" if i % 2 else "assistant", "content": f"m{i}"} for i in range(50)])
    for max_messages, head, tail in [(10, 5, 5), (5, 3, 2), (1, 1, 0), (0, 0, 0)]:
        root = parse(conversation_html(conv, max_messages=max_messages))
        tbody = root.find("tbody")
        kinds = ["elided" if "ac-elided" in r.classes else int(r.attrs["data-index"]) for r in tbody.children]
        assert kinds == [*range(head), "elided", *range(50 - tail, 50)]
        elided = root.find("tr", "ac-elided")
        assert elided.attrs["data-elided"] == str(50 - max_messages)
        assert f"{50 - max_messages} messages elided" in elided.all_text()
        assert elided.find("td").attrs["colspan"] == "5"
    assert not parse(conversation_html(conv, max_messages=50)).find_all("tr", "ac-elided")
    # Bars stay relative to the largest message of the whole conversation.
    longer = ac.Conversation([{"role": "user", "content": "x " * (1 + 100 * (i == 25))} for i in range(50)])
    rows = message_rows(parse(conversation_html(longer, max_messages=10)))
    assert max(float(bar(r).attrs["data-width"]) for r in rows) < 50
    with pytest.raises(OptionError):
        conversation_html(conv, max_messages=-1)


def test_empty_conversation() -> None:
    root = parse(conversation_html(ac.Conversation([])))
    assert message_rows(root) == []
    assert "0 messages" in root.find("div", "ac-header").all_text()


def test_fragment_is_self_contained(session: ac.Conversation, compacted: CompactionResult) -> None:
    for html in (conversation_html(session), result_html(compacted)):
        low = html.lower()
        assert "<script" not in low and "<link" not in low and "@import" not in low and "url(" not in low
        assert "http://" not in low and "https://" not in low
        # The stylesheet only styles the views' own elements.
        css = re.search(r"<style>(.*?)</style>", html, re.DOTALL)
        assert css is not None
        selectors = [s.split("{")[0] for s in css.group(1).split("}") if s.strip()]
        assert all(all(p.strip().startswith(".ac-view") for p in s.split(",")) for s in selectors), selectors


# -- compaction result ----------------------------------------------------------------------


def test_result_rows_follow_the_fates(compacted: CompactionResult) -> None:
    root = parse(result_html(compacted))
    assert "ac-result" in root.classes
    original = compacted.original
    rows = message_rows(root)
    fates = compacted.fates()
    assert [r.attrs["data-fate"] for r in rows] == fates
    assert [r.find("td", "ac-fate").all_text() for r in rows] == fates
    assert all(f"ac-fate-{f}" in r.classes for r, f in zip(rows, fates, strict=True))
    assert [int(r.attrs["data-tokens"]) for r in rows] == original.message_tokens()
    assert [r.attrs["data-role"] for r in rows] == [original[i]["role"] for i in range(len(original))]
    largest = max(original.message_tokens())
    for row, fate, tokens in zip(rows, fates, original.message_tokens(), strict=True):
        assert style_of(bar(row))["background"] == FATE_COLORS[fate]
        assert float(bar(row).attrs["data-width"]) == pytest.approx(100 * tokens / largest, abs=1e-3)
    legend = [n.attrs["data-key"] for n in root.find_all("span", "ac-legend-item")]
    assert legend == ["kept", "changed", "summarized", "dropped"]


def test_result_header_and_stages(compacted: CompactionResult) -> None:
    root = parse(result_html(compacted))
    assert root.attrs["data-tokens-before"] == str(compacted.tokens_before)
    assert root.attrs["data-tokens-after"] == str(compacted.tokens_after)
    assert root.attrs["data-budget"] == str(compacted.budget)
    assert root.attrs["data-fits"] == "true"
    header = root.find("div", "ac-header").all_text()
    assert f"{compacted.tokens_before:,} → {compacted.tokens_after:,} tokens" in header
    assert f"budget {compacted.budget:,}" in header and "fits" in header
    stages = root.find_all("tr", "ac-stage")
    # The rungs this session takes: clear, summarize (and a fill when the summary left room).
    assert [s.attrs["data-stage"] for s in stages] == [s.stage for s in compacted.stages]
    assert [s.stage for s in compacted.stages][:2] == ["clear", "summarize"]
    assert [(int(s.attrs["data-tokens-before"]), int(s.attrs["data-tokens-after"])) for s in stages] == [
        (s.tokens_before, s.tokens_after) for s in compacted.stages
    ]
    assert "results_cleared=125" in stages[0].all_text()


def test_result_summary_is_in_details(compacted: CompactionResult) -> None:
    assert compacted.summary
    details = parse(result_html(compacted)).find("details", "ac-summary")
    assert details.find("summary").all_text().startswith("Summary (")
    assert details.find("pre").all_text() == compacted.summary

    hostile = dataclasses.replace(compacted, summary=XSS + "\nline two", reason=XSS)
    html = result_html(hostile)
    assert "<script" not in html and "<img" not in html
    root = parse(html)
    assert root.find("details", "ac-summary").find("pre").all_text() == XSS + "\nline two"
    assert XSS in root.find("div", "ac-reason").all_text()


def test_result_with_changed_and_dropped(session: ac.Conversation) -> None:
    result = Compactor(CompactionPolicy(summarize=False)).compact(session, budget=8000)
    fates = result.fates()
    assert {"kept", "changed", "dropped"} <= set(fates)
    root = parse(result_html(result))
    assert [r.attrs["data-fate"] for r in message_rows(root)] == fates
    assert not root.find_all("details")
    counts = root.find("div", "ac-muted").all_text()
    assert f"{fates.count('dropped')} dropped" in counts and f"{fates.count('changed')} changed" in counts

    over = Compactor(CompactionPolicy(summarize=False, drop_oldest_groups=False)).compact(session, budget=8000)
    root = parse(result_html(over))
    assert root.attrs["data-fits"] == "false"
    assert "over budget" in root.find("div", "ac-header").all_text()
    assert over.reason and over.reason in root.find("div", "ac-reason").all_text()


def test_result_elision(compacted: CompactionResult) -> None:
    root = parse(result_html(compacted, max_messages=20))
    rows = message_rows(root)
    n = len(compacted.original)
    assert [int(r.attrs["data-index"]) for r in rows] == [*range(10), *range(n - 10, n)]
    assert [r.attrs["data-fate"] for r in rows] == [compacted.fates()[int(r.attrs["data-index"])] for r in rows]
    elided = root.find("tr", "ac-elided")
    assert elided.attrs["data-elided"] == str(n - 20)
    assert elided.find("td").attrs["colspan"] == "6"


# -- never-raising reprs ----------------------------------------------------------------------


class Broken:
    def __len__(self) -> int:
        raise RuntimeError("<b>boom</b>")


class BadStr(Exception):
    def __str__(self) -> str:
        raise ValueError("no message either")


def test_reprs_never_raise(session: ac.Conversation, compacted: CompactionResult) -> None:
    assert conversation_repr_html(session) == conversation_html(session)
    assert result_repr_html(compacted) == result_html(compacted)

    for html, kind in [
        (conversation_repr_html(Broken()), "RuntimeError"),  # type: ignore[arg-type]
        (result_repr_html(None), "AttributeError"),  # type: ignore[arg-type]
        (result_repr_html(dataclasses.replace(compacted, original=Broken())), "RuntimeError"),  # type: ignore[arg-type]
    ]:
        assert "<b>" not in html
        root = parse(html)
        assert root.tag == "pre" and "ac-error" in root.classes
        assert root.attrs["data-error"] == kind
        assert kind in root.all_text()

    def raises_bad_str(obj: object) -> str:
        raise BadStr

    def not_a_string(obj: object) -> str:
        return 42  # type: ignore[return-value]

    assert parse(safe_html(raises_bad_str, 1)).attrs["data-error"] == "BadStr"
    assert parse(safe_html(not_a_string, 1)).attrs["data-error"] == "TypeError"
    assert safe_html(str, "ok") == "ok"

    def interrupted(obj: object) -> str:
        raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):  # only Exception is swallowed
        safe_html(interrupted, 1)


# -- plots ------------------------------------------------------------------------------------

TOKENS = [500, 2_000, 5_000, 9_000, 3_000, 6_000, 9_500, 2_500, 4_000]


def by_gid(fig: Any, gid: str) -> list[Any]:
    return [a for a in fig.axes[0].get_children() if a.get_gid() == gid]


def test_plot_writes_png_and_svg(tmp_path: Path) -> None:
    pytest.importorskip("matplotlib")
    pyplot_loaded = "matplotlib.pyplot" in sys.modules
    png = tmp_path / "context.png"
    fig = plot_context(TOKENS, [4, 7], budget=10_000, trigger=8_500, title="session", path=png)
    data = png.read_bytes()
    assert data.startswith(PNG_SIGNATURE) and len(data) > 5_000
    svg = tmp_path / "context.svg"
    plot_context(TOKENS, [4, 7], budget=10_000, path=str(svg))
    text = svg.read_text(encoding="utf-8")
    assert "<svg" in text and text.rstrip().endswith("</svg>")
    # Built without pyplot, on the Agg canvas, and shown in Jupyter through _repr_png_.
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    assert isinstance(fig, Figure) and isinstance(fig.canvas, FigureCanvasAgg)
    assert ("matplotlib.pyplot" in sys.modules) == pyplot_loaded
    assert fig._repr_png_().startswith(PNG_SIGNATURE)  # type: ignore[attr-defined]
    assert fig.axes[0].get_title() == "session"


def test_plot_artists(tmp_path: Path) -> None:
    pytest.importorskip("matplotlib")
    fig = plot_context(TOKENS, [4, 7], budget=10_000, trigger=8_500)
    (line,) = by_gid(fig, "ac-context")
    assert list(line.get_xdata()) == list(range(len(TOKENS)))
    assert list(line.get_ydata()) == TOKENS
    (vlines,) = by_gid(fig, "ac-compactions")
    assert [seg[0][0] for seg in vlines.get_segments()] == [4, 7]
    (points,) = by_gid(fig, "ac-compaction-points")
    assert [tuple(p) for p in points.get_offsets()] == [(4, 3_000), (7, 2_500)]
    (budget,) = by_gid(fig, "ac-budget")
    assert list(budget.get_ydata()) == [10_000, 10_000]
    (trigger,) = by_gid(fig, "ac-trigger")
    assert list(trigger.get_ydata()) == [8_500, 8_500]
    legend_box = fig.axes[0].get_legend()
    assert legend_box is not None
    legend = [t.get_text() for t in legend_box.get_texts()]
    assert legend == ["context", "compaction", "budget (10,000)", "trigger (8,500)"]
    assert fig.axes[0].get_ylim()[0] == 0

    plain = plot_context(TOKENS)
    assert not by_gid(plain, "ac-compactions") and not by_gid(plain, "ac-budget") and not by_gid(plain, "ac-trigger")


def test_plot_on_given_axes(tmp_path: Path) -> None:
    pytest.importorskip("matplotlib")
    from matplotlib.figure import Figure

    fig = Figure()
    sub = fig.subfigures(1, 2)[1]  # type: ignore[index]
    ax = sub.add_subplot()
    assert plot_context(TOKENS, [4], ax=ax, path=tmp_path / "a.png") is fig
    assert (tmp_path / "a.png").read_bytes().startswith(PNG_SIGNATURE)
    assert [a.get_gid() for a in ax.get_children() if a.get_gid()][:2] == ["ac-context", "ac-compactions"]


def test_plot_rejects_bad_input(tmp_path: Path) -> None:
    pytest.importorskip("matplotlib")
    with pytest.raises(OptionError, match="outside"):
        plot_context(TOKENS, [len(TOKENS)])
    with pytest.raises(OptionError, match="outside"):
        plot_context(TOKENS, [-1])
    with pytest.raises(OptionError, match="image format"):
        plot_context(TOKENS, path=tmp_path / "plot.nope")
    assert not (tmp_path / "plot.nope").exists()


def test_plot_without_matplotlib(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in [m for m in sys.modules if m == "matplotlib" or m.startswith("matplotlib.")]:
        monkeypatch.setitem(sys.modules, name, None)
    monkeypatch.setitem(sys.modules, "matplotlib", None)
    with pytest.raises(MissingExtraError, match=re.escape("pip install 'agentcontext[plot]'")) as info:
        plot_context(TOKENS)
    assert isinstance(info.value, ImportError) and isinstance(info.value, AgentContextError)
    # The HTML views need no matplotlib.
    assert "ac-conversation" in display.conversation_html(ac.Conversation([{"role": "user", "content": "hi"}]))


def test_jupyter_reprs_are_wired() -> None:
    import agentcontext as ac
    from agentcontext.display import conversation_html, result_html

    conv = ac.Conversation.from_file(str(ROOT_DIR / "examples" / "session.jsonl"))
    assert conv._repr_html_() == conversation_html(conv)
    result = ac.Compactor("openharness").compact(conv, budget=8_000)
    assert result._repr_html_() == result_html(result)


def test_jupyter_repr_without_the_package_namespace() -> None:
    # The compiled core imports no display code: the package gives its Conversation the HTML view
    # however the core is reached first (here straight from `agentcontext._core`), in a fresh process.
    code = (
        "import sys; from agentcontext._core import Conversation; "
        "assert 'agentcontext.display' not in sys.modules; "
        "conv = Conversation([{'role': 'user', 'content': 'hi <b>'}]); html = conv._repr_html_(); "
        "from agentcontext.display import conversation_html; assert html == conversation_html(conv), html; "
        "assert 'ac-conversation' in html and 'hi &lt;b&gt;' in html; print('ok')"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=False)
    assert out.stdout.strip() == "ok", out.stderr


def test_replay_plot_has_the_compaction_points(tmp_path: Path) -> None:
    import agentcontext as ac
    from agentcontext.measure.metrics import replay, replay_policy

    conv = ac.Conversation.from_file(str(ROOT_DIR / "examples" / "session.jsonl"))
    rep = replay(conv, ac.Compactor(replay_policy(ac.PRESETS["openharness"].compaction, 6_000)))
    assert rep.compactions
    fig = rep.plot(budget=6_000, path=tmp_path / "ctx.png")
    assert (tmp_path / "ctx.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    (line,) = [a for a in fig.axes[0].get_lines() if a.get_gid() == "ac-context"]
    assert list(line.get_ydata()) == rep.request_tokens
