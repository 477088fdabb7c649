"""Tool-result budgets: head + marker + tail, tail importance, token fitting, the result store,
project files, file paging with gates and dedup, open-file views and presets."""

from __future__ import annotations

import json
import multiprocessing
import os
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import agentcontext as ac
from agentcontext.budgets import FileReader, OpenFiles, ResultStore, ToolResultPolicy, fit_project_files
from tests import support

UNITS = ["chars", "bytes", "lines", "tokens"]
STRATEGIES = ["auto", "head", "tail", "head_tail"]


def size(text: str, unit: str) -> int:
    if unit == "chars":
        return len(text)
    if unit == "bytes":
        return len(text.encode())
    if unit == "lines":
        # Lines end at "\n" (not at the other breaks str.splitlines knows).
        return text.count("\n") + (0 if not text or text.endswith("\n") else 1)
    return ac.count_tokens(text)


def check_truncation(
    original: str, limit: int, unit: str, strategy: str, head_share: float = 0.5
) -> ac.Truncation | None:
    try:
        t = ac.truncate(original, limit, unit=unit, strategy=strategy, head_share=head_share)  # type: ignore[arg-type]
    except ac.BudgetError as e:
        assert e.needed > limit
        return None
    assert size(t.text, unit) <= limit, (unit, strategy, limit)
    head = original[: t.head_chars]
    tail = original[len(original) - t.tail_chars :] if t.tail_chars else ""
    assert t.text.startswith(head)
    assert t.text.endswith(tail)
    if t.truncated:
        omitted = original[t.head_chars : len(original) - t.tail_chars]
        assert t.head_chars + t.tail_chars + t.omitted_chars == t.original_chars == len(original)
        assert t.omitted_lines == omitted.count("\n")
        assert t.omitted_bytes == len(omitted.encode())
        assert f"[... {t.omitted_lines} lines, {t.omitted_chars} chars omitted" in t.text
        assert head.count("\n") + tail.count("\n") + t.omitted_lines == original.count("\n")
    else:
        assert t.text == original
    t.text.encode("utf-8")  # never a broken character (would be a lone surrogate here)
    return t


texts = st.text(st.characters(codec="utf-8"), max_size=3000) | st.lists(
    st.text(st.characters(codec="utf-8", exclude_characters="\n"), max_size=120), max_size=200
).map("\n".join)


@settings(max_examples=400, deadline=None)
@given(texts, st.integers(0, 4000), st.sampled_from(UNITS), st.sampled_from(STRATEGIES), st.floats(0, 1))
def test_any_text_any_budget(text: str, limit: int, unit: str, strategy: str, head_share: float) -> None:
    if unit == "lines":
        limit = limit % 60
    check_truncation(text, limit, unit, strategy, head_share)


def test_budget_below_the_marker_is_a_typed_error() -> None:
    with pytest.raises(ac.BudgetError) as info:
        ac.truncate("x\n" * 1000, 20)
    assert info.value.needed > 20
    assert isinstance(info.value, ValueError)


def test_marker_says_how_to_get_it_back() -> None:
    text = "".join(f"line {i}\n" for i in range(2000))
    t = ac.truncate(text, 500, recall_id="r-abc")
    assert 'recall(id="r-abc")' in t.text
    t = ac.truncate(text, 500, path="/tmp/out.txt")
    assert "full text in /tmp/out.txt" in t.text
    t = ac.truncate(text, 300, unit="tokens", count_omitted_tokens=True)
    assert t.omitted_tokens is not None and t.omitted_tokens > 1000
    assert f"{t.omitted_tokens} tokens omitted" in t.text


def corpus_tool_results() -> list[tuple[str, str]]:
    out = []
    for path in support.normalized_files():
        for i, m in enumerate(support.read_jsonl(path)):
            if m["role"] == "tool" and m["content"]:
                out.append((f"{path.parent.name}/{path.stem}#{i}", m["content"]))
    return out


@pytest.mark.parametrize("name", sorted(n for n, p in ac.PRESETS.items() if p.budgets is not None))
def test_every_corpus_tool_result_through_every_preset(name: str, transcripts: Path) -> None:
    preset = ac.PRESETS[name].budgets
    assert preset is not None
    results = corpus_tool_results()
    assert len(results) > (1900 if support.full_corpus() else 600)
    for budget in (500, 4000):
        policy = preset.result_policy().__class__(
            max_chars=budget, strategy=preset.strategy, head_share=preset.head_share, persist_over_chars=None
        )
        for where, content in results:
            r = policy.apply(content)
            assert len(r.text) <= max(budget, len(content) if r.action == "kept" else budget), where
            if r.action == "truncated":
                t = r.truncation
                assert t is not None
                assert r.text.startswith(content[: t.head_chars])
                assert content.endswith(content[len(content) - t.tail_chars :])
                assert t.head_chars + t.tail_chars + t.omitted_chars == len(content), where


@pytest.mark.parametrize(
    ("transcript", "index", "rule"),
    [
        # All in the vendored subset (tests/data), so they run on a fresh clone too.
        ("codemie/session-2025-12-01T21-45-5b959dae", 8, "test summary"),
        ("mini-swe-agent/deepseek_chat_dev--pyvista__pyvista-4315", 25, "traceback"),
        ("mini-swe-agent/deepseek_chat_dev--pyvista__pyvista-4315", 17, "exit status"),
        ("pi-mono/large-session", 74, "error"),
        ("openhands/mock_output--output--1", 26, "json close"),
        ("codemie/rollout-2026-05-11T13-28-45-019e1695-0522-7c83-8b39-0dd379793f80", 6, "summary"),
        ("codemie/rollout-2026-05-11T13-28-45-019e1695-0522-7c83-8b39-0dd379793f80", 3, None),
    ],
)
def test_tail_importance_on_real_outputs(transcript: str, index: int, rule: str | None, transcripts: Path) -> None:
    content = support.read_jsonl(transcripts / "normalized" / f"{transcript}.jsonl")[index]["content"]
    assert ac.important_tail(content) == rule
    t = ac.truncate(content, 600)
    assert t.truncated
    if rule is None:
        assert t.kept == "head" and t.tail_chars == 0
    else:
        assert t.kept == "head_tail" and t.tail_rule == rule
        last_line = content.rstrip().rsplit("\n", 1)[-1]
        assert t.text.rstrip().endswith(last_line)


def test_token_budget_counts_only_what_is_kept() -> None:
    text = "".join(f"def function_{i}(x):\n    return x * {i}\n" for i in range(20_000))
    t = ac.truncate(text, 2000, unit="tokens", strategy="head_tail")
    assert ac.count_tokens(t.text) <= 2000
    assert ac.count_tokens(t.text) > 1800, "the fit uses most of the budget"


# ---------------------------------------------------------------------------------------------
# The store and the policy.


def test_store_round_trip_and_unknown_id(tmp_path: Path) -> None:
    store = ResultStore(tmp_path / "store")
    text = "".join(f"row {i}\n" for i in range(1000))
    rid = store.put(text)
    assert rid == store.put(text) == ResultStore.id_for(text)
    assert store.get(rid) == text
    assert rid in store
    assert store.recall(rid, 1, 3) == "row 0\nrow 1\nrow 2\n\n[Showing lines 1-3 of 1000. Use offset=4 to continue.]"
    with pytest.raises(ac.RecallError) as info:
        store.get("r-00000000000000000000")
    assert isinstance(info.value, KeyError)
    assert info.value.recall_id == "r-00000000000000000000"
    with pytest.raises(ac.RecallError):
        store.get("../../etc/passwd")


def _persist_many(directory: str, text: str, n: int) -> None:
    store = ResultStore(directory)
    for _ in range(n):
        store.put(text)


def test_two_processes_persisting_the_same_result_leave_one_intact_file(tmp_path: Path) -> None:
    text = "payload line\n" * 200_000
    ctx = multiprocessing.get_context("spawn")
    procs = [ctx.Process(target=_persist_many, args=(str(tmp_path), text, 5)) for _ in range(2)]
    for p in procs:
        p.start()
    for p in procs:
        p.join(timeout=120)
        assert p.exitcode == 0
    files = sorted(tmp_path.iterdir())
    rid = ResultStore.id_for(text)
    assert [f.name for f in files] == [f"{rid}.len", f"{rid}.txt"]  # the result and its size
    assert files[1].read_text() == text and files[0].read_text() == str(len(text.encode()))


def test_policy_truncates_persists_and_caps_a_message(tmp_path: Path) -> None:
    store = ResultStore(tmp_path)
    policy = ToolResultPolicy(context_window=200_000, store=store)
    assert policy.default_max_chars == 16_000
    assert ToolResultPolicy(context_window=8_000).default_max_chars == 9_600  # 30% of 8K tokens, 4 chars each

    small = policy.apply("ok")
    assert small.action == "kept" and small.text == "ok"

    log = "".join(f"step {i}\n" for i in range(3000)) + "FAILED tests/test_x.py::test_y - AssertionError\n"
    cut = policy.apply(log, "bash")
    assert cut.action == "truncated" and len(cut.text) <= 16_000
    assert cut.text.endswith("AssertionError\n")
    assert cut.recall_id is not None and store.get(cut.recall_id) == log

    huge = json.dumps({"rows": [{"id": i, "name": f"n{i}"} for i in range(5000)]})
    persisted = policy.apply(huge, "query")
    assert persisted.action == "persisted" and len(persisted.text) <= 2_000
    assert persisted.recall_id is not None and persisted.recall_id in persisted.text
    assert "4997 more items of object" in persisted.text
    assert store.get(persisted.recall_id) == huge

    results = [("read", "a" * 45_000), ("read", "b" * 45_000), ("grep", "c" * 30_000)]
    capped = ToolResultPolicy(max_chars=50_000, message_limit_chars=60_000, store=store).apply_message(results)
    # 120,000 chars in all: the two largest are persisted (largest first) until the rest fit.
    assert [r.action for r in capped] == ["persisted", "persisted", "kept"]
    assert sum(len(r.text) for r in capped) <= 60_000

    per_tool = ToolResultPolicy(per_tool={"grep": 1_000}, store=store)
    assert len(per_tool.apply("x\n" * 5000, "grep").text) <= 1_000


def test_project_files_fit_per_file_and_in_total() -> None:
    files = {f"dir{i}/AGENTS.md": "".join(f"rule {i}.{j}\n" for j in range(3000)) for i in range(8)}
    fitted = fit_project_files(files)
    assert list(fitted) == list(files)
    assert all(len(t) <= 12_000 for t in fitted.values())
    assert sum(len(t) for t in fitted.values()) <= 60_000
    first = fitted["dir0/AGENTS.md"]
    assert first.startswith("rule 0.0\n") and first.endswith("rule 0.2999\n")
    marker_at = first.index("[... ")
    assert 0.65 < marker_at / len(first) < 0.8, "75% head, 25% tail"
    assert "omitted" in fitted["dir7/AGENTS.md"]


# ---------------------------------------------------------------------------------------------
# File reads.


def test_paging_generated_files(tmp_path: Path) -> None:
    empty = tmp_path / "empty.txt"
    empty.write_text("")
    assert ac.read_page(empty).text == f"[{empty} is empty.]"

    huge_line = tmp_path / "one_line.txt"
    huge_line.write_text("x" * 100_000)
    page = ac.read_page(huge_line)
    assert page.total_lines == 1 and page.long_lines_cut == 1
    assert "[... line cut: 98000 more chars]" in page.text

    crlf = tmp_path / "crlf.txt"
    crlf.write_bytes(b"a\r\nb\r\nc")
    assert ac.read_page(crlf, line_numbers=False).text == "a\nb\nc\n"

    binary = tmp_path / "blob.bin"
    binary.write_bytes(bytes(range(256)) * 10)
    with pytest.raises(ac.FileReadError) as info:
        ac.read_page(binary)
    assert info.value.kind == "binary"

    latin1 = tmp_path / "latin1.txt"
    latin1.write_bytes("café\n".encode("latin-1"))
    with pytest.raises(ac.FileReadError) as info:
        ac.read_page(latin1)
    assert info.value.kind == "not_utf8" and "Latin-1" in str(info.value)

    big = tmp_path / "million.txt"
    big.write_text("".join(f"{i}\n" for i in range(1, 1_000_001)))
    with pytest.raises(ac.FileReadError) as info:
        ac.read_page(big)
    assert info.value.kind == "too_large"
    assert "offset and limit" in str(info.value) and "grep" in str(info.value)
    page = ac.read_page(big, 1, None, line_numbers=False)
    assert (page.start_line, page.end_line, page.total_lines) == (1, 2000, 1_000_000)
    assert page.text.endswith("[Showing lines 1-2000 of 1000000. Use offset=2001 to continue.]")
    page = ac.read_page(big, 999_999, 10)
    assert (page.start_line, page.end_line, page.more) == (999_999, 1_000_000, False)
    with pytest.raises(ac.FileReadError) as info:
        ac.read_page(big, 1_000_001)
    assert info.value.kind == "offset_past_end"


def test_byte_limit_per_page_and_token_gate(tmp_path: Path) -> None:
    wide = tmp_path / "wide.txt"
    wide.write_text(("y" * 999 + "\n") * 300)
    page = ac.read_page(wide, 1, 300, line_numbers=False)
    assert page.end_line == 51 and len(page.text.encode()) < 52 * 1024
    dense = tmp_path / "dense.txt"
    dense.write_text("".join(f"{i:x}{'!@#' * 5}\n" for i in range(3000)))
    with pytest.raises(ac.FileReadError) as info:
        ac.read_page(dense, token_gate=5_000)
    assert info.value.kind == "token_gate" and "limit=" in str(info.value)


def test_read_dedup_with_and_without_a_change(tmp_path: Path) -> None:
    path = tmp_path / "app.py"
    path.write_text("print('v1')\n")
    reader = FileReader()
    first = reader.read(path)
    assert "print('v1')" in first
    again = reader.read(path)
    assert again.startswith(f"[{path} is unchanged since read #1")
    assert len(again) < 200
    assert "print('v1')" in reader.read(path, 1, 10), "another range is another read"
    path.write_text("print('v2')\n")
    os.utime(path, ns=(1, 1))
    changed = reader.read(path)
    assert "print('v2')" in changed
    reader.forget(path)
    assert "print('v2')" in reader.read(path)
    assert "is a directory" in reader.answer(tmp_path)


def test_open_files_scale_and_evict_lru() -> None:
    assert ac.budgets.open_file_limits(8_000) == (5_000, 3)
    assert ac.budgets.open_file_limits(32_000) == (15_000, 5)
    assert ac.budgets.open_file_limits(128_000) == (25_000, 10)
    assert ac.budgets.open_file_limits(1_000_000) == (40_000, 15)
    views = OpenFiles(8_000)
    for name in ["a", "b", "c"]:
        assert views.open(name, name * 10) == []
    views.touch("a")
    assert views.open("d", "x" * 9_000) == ["b"]
    assert views.names == ["c", "a", "d"]
    assert len(views.view("d")) <= 5_000
    rendered = views.render()
    assert rendered.index('name="c"') < rendered.index('name="a"') < rendered.index('name="d"')


def test_tool_definitions() -> None:
    openai = ac.budgets.recall_tool()
    assert openai["function"]["name"] == "recall"
    assert openai["function"]["parameters"]["required"] == ["id"]
    anthropic = ac.budgets.read_file_tool("anthropic")
    assert anthropic["name"] == "read_file" and "input_schema" in anthropic


@settings(max_examples=100, deadline=None)
@given(st.data())
def test_paging_covers_every_line_once(data: st.DataObject) -> None:
    lines = data.draw(
        st.lists(
            st.text(st.characters(codec="utf-8", exclude_characters="\n\r"), max_size=50), min_size=1, max_size=100
        )
    )
    offset = data.draw(st.integers(1, len(lines)))
    limit = data.draw(st.integers(1, 50))
    text = "\n".join(lines) + "\n"
    page = ac.page_text(text, offset, limit)
    end = min(len(lines), offset + limit - 1)
    assert (page.start_line, page.end_line, page.total_lines) == (offset, end, len(lines))
    body = "".join(line + "\n" for line in lines[offset - 1 : end])
    if end < len(lines):
        assert (
            page.text == body + f"\n[Showing lines {offset}-{end} of {len(lines)}. Use offset={end + 1} to continue.]"
        )
    else:
        assert page.text == body
