"""Recall keeps its promise: every id a marker or placeholder names resolves to its original,
exactly, and a marker names no id where nothing is stored."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

import agentcontext as ac
from agentcontext.budgets import Recall, RecallPage, ResultStore, recall_tool, result_text
from agentcontext.compaction import PRESETS, Compactor
from agentcontext.compaction.summarize import SUMMARY_MARKER
from agentcontext.errors import AgentContextError, OptionError, RecallError
from tests import support

BUDGET_PRESETS = {name: preset.budgets for name, preset in PRESETS.items() if preset.budgets is not None}

CLEARED = re.compile(r"\[cleared: result of .*, [\d,]+ tokens; recall id (.+)\]\Z", re.DOTALL)
CUT = re.compile(r'(?:\A|\n)\[\.\.\. [^\n]* omitted; full text: recall\(id="([^"\n]+)"\) \.\.\.\]')
SPAN = re.compile(r"recall id (r-[0-9a-f]{20}) gives the originals")
STORED = re.compile(r"^\[Full result stored: [^\n]*; recall id (r-[0-9a-f]{20})\]")


def reassembled(recall: Recall, recall_id: str, max_chars: int) -> str:
    """The whole text behind ``recall_id``, page by page as a model would read it: by lines, and
    by character wherever a page ends inside a line."""
    parts: list[str] = []
    page: RecallPage = recall.page(recall_id, 1, 200, max_chars=max_chars)
    while True:
        parts.append(page.text)
        if page.hint is None:
            assert page.end == page.total_chars
            return "".join(parts)
        more = re.search(r"Use (offset|char_offset)=(\d+) to continue", page.hint)
        assert more, page.hint
        if more.group(1) == "offset":
            page = recall.page(recall_id, int(more.group(2)), 200, max_chars=max_chars)
        else:
            page = recall.page(recall_id, char_offset=int(more.group(2)), max_chars=max_chars)
        assert page.start == sum(map(len, parts)), "pages join without a gap or an overlap"


def results_by_call(conv: ac.Conversation) -> dict[str, str]:
    """Call id → the text of its (last) result."""
    return {
        m["tool_call_id"]: result_text(m.get("content"))
        for m in conv.to_jsonl()
        if m.get("role") == "tool" and isinstance(m.get("tool_call_id"), str)
    }


def markers(conv: ac.Conversation) -> tuple[list[str], list[str]]:
    """(call ids named by cleared/cut results, span ids named by summary and drop markers)."""
    calls: list[str] = []
    spans: list[str] = []
    for m in conv.to_jsonl():
        text = m.get("content")
        if not isinstance(text, str):
            continue
        if m.get("role") == "tool":
            found = CLEARED.match(text)
            calls += [found.group(1)] if found else CUT.findall(text)
        spans += SPAN.findall(text)
    return calls, spans


@pytest.mark.parametrize("path", support.normalized_files(), ids=lambda p: f"{p.parent.name}/{p.stem[:40]}")
def test_every_compaction_marker_on_the_corpus_recalls_its_original(
    path: Path, transcripts: Path, tmp_path: Path
) -> None:
    conv = ac.Conversation.from_file(path)
    originals = results_by_call(conv)
    named = 0
    # One store for every run: content-addressed, so the runs share what they store.
    store = ResultStore(tmp_path / "store")
    for preset in PRESETS:
        for share in (0.1, 0.3):
            result = Compactor(preset, store=store).compact(conv, budget=max(1, int(conv.tokens * share)))
            recall = Recall(store)
            calls, spans = markers(result.conversation)
            for n, call_id in enumerate(calls):
                assert recall.original(call_id) == originals[call_id], (preset, call_id)
                if n % 5 == 0:
                    assert reassembled(recall, call_id, 3_000) == originals[call_id]
            every = [m for items in support.each_message(result.original) for m in items]
            for span in spans:
                text = recall.original(span)
                assert reassembled(recall, span, 3_000) == text
                lines = [json.loads(line) for line in text.splitlines()]
                assert lines and all(isinstance(m, dict) for m in lines)
                summaries = [
                    m for m in result.conversation.to_jsonl() if str(m.get("content")).startswith(SUMMARY_MARKER)
                ]
                header = summaries[0]["content"].split("\n", 1)[0] if summaries else ""
                if span in header:
                    pre = result.original.preamble
                    count = int(re.search(r": ([\d,]+) earlier messages", header).group(1).replace(",", ""))  # type: ignore[union-attr]
                    each = support.each_message(result.original.slice(pre, pre + count))
                    if preset == "codex":
                        # Codex keeps the user messages beside the summary: it replaces the others.
                        fates = result.fates()
                        each = [
                            e for k, e in enumerate(support.each_message(result.original)) if fates[k] == "summarized"
                        ]
                        assert len(each) == count
                    assert lines == [m for items in each for m in items], "the summary's originals, exactly"
                else:
                    # A dropped span: original messages, or messages an earlier stage wrote (a
                    # summary, a cleared or cut result, whose own ids resolve as above).
                    for m in lines:
                        written = str(m.get("content")).startswith((SUMMARY_MARKER, "[cleared: ")) or CUT.search(
                            str(m.get("content"))
                        )
                        assert m in every or written, str(m)[:300]
            named += len(calls) + len(spans)
            if share != 0.1:
                continue
            # Without a store nothing is stored, and no marker names an id.
            bare = Compactor(preset).compact(conv, budget=max(1, int(conv.tokens * share)))
            assert markers(bare.conversation) == ([], [])
            for m in bare.conversation.to_jsonl():
                text = m.get("content")
                if isinstance(text, str):
                    assert "recall id" not in text and "recall(id=" not in text, text[:300]
    if conv.tool_calls > 20:
        assert named > 0, "the corpus file exercised no marker"


@pytest.mark.parametrize("preset", sorted(BUDGET_PRESETS))
def test_every_result_policy_marker_on_the_corpus_recalls_its_original(
    preset: str, transcripts: Path, tmp_path: Path
) -> None:
    if preset == "pi" and not support.full_corpus():
        pytest.skip("pi cuts results over 51,200 chars: only session-624a4a58 of the full corpus has one")
    store = ResultStore(tmp_path / "store")
    recall = Recall(store)
    policy = BUDGET_PRESETS[preset].result_policy(context_window=8_000, store=store)
    named = 0
    for path in support.normalized_files():
        for m in support.read_jsonl(path):
            if m["role"] != "tool" or not isinstance(m.get("content"), str):
                continue
            content = m["content"]
            budgeted = policy.apply(content, None)
            ids = set(CUT.findall(budgeted.text)) | set(STORED.findall(budgeted.text))
            assert ids == ({budgeted.recall_id} if budgeted.action != "kept" else set()), budgeted.text[:300]
            for recall_id in ids:
                named += 1
                assert recall.original(recall_id) == content
                if named % 7 == 0:
                    assert reassembled(recall, recall_id, 2_000) == content
    assert named > 0


def test_a_one_line_json_result_pages_to_its_end_and_drills_down(tmp_path: Path) -> None:
    items = [{"name": f"item-{i}", "tags": ["x" * 20, i], "note": "é" * 30} for i in range(2_200)]
    one_line = json.dumps({"items": items, "total": len(items)}, ensure_ascii=False)
    assert len(one_line) > 200_000 and "\n" not in one_line
    store = ResultStore(tmp_path)
    rid = store.put(one_line)
    recall = Recall(store)
    first = recall.page(rid)
    assert len(first.text) == 20_000 and first.hint is not None and "char_offset=20000" in first.hint
    assert reassembled(recall, rid, 20_000) == one_line
    assert reassembled(recall, rid, 7_777) == one_line
    assert store.recall(rid, char_offset=len(one_line) - 5) == one_line[-5:]
    assert recall.recall(rid, path="$.items[3].name") == "item-3"
    assert recall.recall(rid, path="$.items[-1].tags[1]") == "2199"
    assert json.loads(recall.recall(rid, path="$['items'][2]")) == items[2]
    assert json.loads(recall.recall(rid, 1, 10_000, path="$.items[*].name", max_chars=10**9)) == [
        i["name"] for i in items
    ]
    with pytest.raises(OptionError, match=r"has 2200 elements; index 2200 is out of range"):
        recall.recall(rid, path="$.items[2200]")
    # The tool's executor answers errors with their message, for the model to act on.
    assert recall({"id": rid, "path": "$.nope"}).startswith('Error: JSON path "$.nope": $ has no key "nope"')
    assert recall({"id": rid, "path": "$.total"}) == "2200"


def test_line_pages_of_a_multi_line_result(tmp_path: Path) -> None:
    text = "".join(f"row {i}\n" for i in range(1000))
    store = ResultStore(tmp_path)
    rid = store.put(text)
    assert store.recall(rid, 1, 3) == "row 0\nrow 1\nrow 2\n\n[Showing lines 1-3 of 1000. Use offset=4 to continue.]"
    assert store.recall(rid, 999, 5) == "row 998\nrow 999\n"
    assert reassembled(Recall(store), rid, 100) == text
    with pytest.raises(OptionError, match="offset 1001 is past the end"):
        store.recall(rid, 1001)


def test_store_arguments_are_typed_errors(tmp_path: Path) -> None:
    store = ResultStore(tmp_path)
    rid = store.put("hello")
    for call, kind, words in [
        (lambda: store.recall(rid, -5), OptionError, "offset must be a positive integer, got -5"),
        (lambda: store.recall(rid, 1, 0), OptionError, "lines must be a positive integer, got 0"),
        (lambda: store.recall(rid, char_offset=-1), OptionError, "char_offset must be a non-negative integer, got -1"),
        (lambda: store.recall(rid, "1"), OptionError, "offset must be a positive integer, got str '1'"),  # type: ignore[arg-type]
        (lambda: store.recall(None), OptionError, "recall_id must be a string, not NoneType"),  # type: ignore[arg-type]
        (lambda: store.get(None), OptionError, "recall_id must be a string"),  # type: ignore[arg-type]
        (lambda: store.get("r-" + "a" * 5_000), RecallError, "too long"),
        (lambda: store.get("r-abc "), RecallError, "padded with spaces"),
        (lambda: store.get("../../etc/passwd"), RecallError, "not a recall id"),
        (lambda: Recall(store).original(None), OptionError, "id must be a string, not NoneType"),  # type: ignore[arg-type]
        (lambda: Recall(store).original("x" * 5_000), RecallError, "too long"),
        (lambda: Recall(store).original("call_missing"), RecallError, "no stored result with recall id 'call_missing'"),
        (lambda: ResultStore("/proc/version/store"), OptionError, "cannot use /proc/version/store as a result store"),
    ]:
        with pytest.raises(kind) as info:
            call()
        assert isinstance(info.value, AgentContextError) and words in str(info.value), str(info.value)
    long = "r-" + "a" * 5_000
    with pytest.raises(RecallError) as caught:
        store.get(long)
    assert len(str(caught.value)) < 300, "the message shows a long id cut"
    for malformed in ["r-abc ", "r-" + "a" * 5_000, None, 5, "", "r-ABC", "r-٣٣٣٣٣٣٣٣٣٣٣٣٣٣٣٣٣٣٣٣"]:
        assert malformed not in store
    assert rid in store


def test_a_put_that_is_not_text_is_an_option_error_and_writes_nothing(tmp_path: Path) -> None:
    store = ResultStore(tmp_path / "store")
    for kwargs, words in [
        (
            {"text": "a result", "alias": "call_\ud800"},
            "alias is not valid Unicode text: a lone surrogate at character 6",
        ),
        ({"text": "out \udcff", "alias": "call_1"}, "text is not valid Unicode text: a lone surrogate at character 5"),
        ({"text": "out \udcff"}, "text is not valid Unicode text"),
    ]:
        with pytest.raises(OptionError, match=re.escape(words)):
            store.put(**kwargs)
        assert list(store.directory.iterdir()) == []  # not the text without its alias either
    rid = store.put("a result", alias="call_1")
    assert store.alias("call_1") == rid and store.get(rid) == "a result"


def test_symlinks_and_special_files_in_the_store_are_refused(tmp_path: Path) -> None:
    store = ResultStore(tmp_path / "store")
    secret = tmp_path / "secret.txt"
    secret.write_text("do not leak")
    rid = store.put("the real result")
    path = store.path_for(rid)
    path.unlink()
    path.symlink_to(secret)
    with pytest.raises(RecallError, match="is a symlink"):
        store.get(rid)
    assert rid not in store
    answer = Recall(store)({"id": rid})
    assert "do not leak" not in answer and "is a symlink" in answer
    # Storing the text again replaces the planted link, never writes through it.
    assert store.put("the real result") == rid
    assert not path.is_symlink() and store.get(rid) == "the real result"
    assert secret.read_text() == "do not leak"
    # An alias planted as a link is refused too.
    alias_rid = store.put("aliased", alias="call_1")
    ref = next(p for p in (tmp_path / "store").iterdir() if p.name.endswith(".ref"))
    ref.unlink()
    ref.symlink_to(secret)
    with pytest.raises(RecallError, match="symlink"):
        Recall(store).original("call_1")
    assert store.put("aliased", alias="call_1") == alias_rid and Recall(store).original("call_1") == "aliased"
    # A FIFO under a stored name is refused at once (it would block a read forever).
    fifo_id = ResultStore.id_for("fifo")
    os.mkfifo(store.path_for(fifo_id))
    with pytest.raises(RecallError, match="not a regular file"):
        store.get(fifo_id)
    # A directory under a stored name.
    dir_id = ResultStore.id_for("dir")
    store.path_for(dir_id).mkdir()
    with pytest.raises(RecallError):
        store.get(dir_id)


def test_call_ids_resolve_from_the_callers_messages_and_the_session_log(tmp_path: Path) -> None:
    conv = ac.Conversation(support.synthetic_session(120, seed=3))
    cleared, report = conv.clear_tool_results(recent_messages=2, recent_tools=0)
    assert report["cleared"]
    originals = results_by_call(conv)
    by_messages = Recall(originals=conv.to_openai())
    log = ac.SessionLog(tmp_path / "s.jsonl", format=conv.format)
    log.append(conv)
    by_log = Recall(log=ac.SessionLog(tmp_path / "s.jsonl"))
    calls, _ = markers(cleared)
    assert len(calls) == len(report["cleared"])
    for call_id in calls:
        assert by_messages.original(call_id) == originals[call_id]
        assert by_log.original(call_id) == originals[call_id]
    with pytest.raises(RecallError, match="looked in the session log"):
        by_log.original("no-such-call")
    # trim_messages returns placeholders naming call ids; the caller's list resolves them.
    messages = conv.to_openai()
    trimmed = ac.trim_messages(messages, conv.tokens // 3)
    named = [
        CLEARED.match(m["content"]).group(1)  # type: ignore[union-attr]
        for m in trimmed
        if m.get("role") == "tool" and isinstance(m.get("content"), str) and CLEARED.match(m["content"])
    ]
    assert named
    for call_id in named:
        assert Recall(originals=messages).original(call_id) == originals[call_id]


def test_session_keeps_originals_beside_its_log_and_runs_the_recall_tool(tmp_path: Path) -> None:
    from agentcontext.providers import OpenAIChatProvider

    pytest.importorskip("openai")
    provider = OpenAIChatProvider("gpt-4o-mini", api_key="test", base_url="http://127.0.0.1:9/v1")
    log = ac.SessionLog(tmp_path / "s.jsonl")
    session = ac.Session(provider, log=log)
    assert session.compactor.store is not None
    assert session.compactor.store.directory == tmp_path / "s.jsonl.recall"
    assert session.functions["recall"] == session._recall  # runs session.recall (made anew if a store is)
    rid = session.compactor.store.put("kept")
    assert session.functions["recall"]({"id": rid}) == "kept"
    assert session.functions["recall"]({"id": rid, "offset": -5}).startswith("Error: offset must be a positive integer")
    assert session.functions["recall"]({"id": None}).startswith("Error: id must be a string")
    # Without a log or a store nothing is kept, and no recall tool is offered.
    bare = ac.Session(provider)  # no log: compactions store nothing; cut tool results will be stored
    assert bare.compactor.store is None and "recall" in bare.functions
    plain = ac.Session(provider, result_policy=False)
    assert plain.compactor.store is None and "recall" not in plain.functions
    # A compactor with a store of its own and no log: the session's recall reads that store.
    own = ac.ResultStore(tmp_path / "own")
    kept = ac.Session(provider, compactor=ac.Compactor(store=own), result_policy=False)
    assert kept.result_store is own and kept.functions["recall"]({"id": own.put("mine")}) == "mine"
    assert recall_tool("anthropic")["input_schema"]["properties"]["path"]["type"] == "string"


def test_cli_compact_markers_are_recallable_with_store_and_say_so_without(tmp_path: Path) -> None:
    src = max(support.normalized_files(), key=lambda p: p.stat().st_size)
    conv = ac.Conversation.from_file(src)
    originals = results_by_call(conv)

    def compact(*extra: str) -> ac.Conversation:
        out = tmp_path / f"out{len(extra)}.jsonl"
        done = subprocess.run(
            [sys.executable, "-m", "agentcontext", "compact", str(src), "--budget", "20%", "-o", str(out), *extra],
            capture_output=True,
            text=True,
            check=False,
        )
        assert done.returncode in (0, 3), done.stderr
        return ac.Conversation.from_file(out)

    bare = compact()
    text = json.dumps(bare.to_jsonl(), ensure_ascii=False)
    assert "recall id" not in text and "recall(id=" not in text
    assert "not stored" in text
    stored = compact("--store", str(tmp_path / "store"))
    recall = Recall(ResultStore(tmp_path / "store"))
    calls, spans = markers(stored)
    assert calls or spans
    for call_id in calls:
        assert recall.original(call_id) == originals[call_id]
    for span in spans:
        assert recall.original(span)


def test_a_result_policy_without_a_store_says_nothing_is_stored() -> None:
    log = "".join(f"line {i}\n" for i in range(20_000))
    for preset in sorted(BUDGET_PRESETS):
        policy = BUDGET_PRESETS[preset].result_policy(context_window=8_000)
        for content in (log, json.dumps({"rows": list(range(30_000))})):
            budgeted = policy.apply(content)
            assert budgeted.action == "truncated" and budgeted.recall_id is None
            assert "recall" not in budgeted.text
            assert "omitted; the full text is not stored ...]" in budgeted.text, (preset, budgeted.text[-300:])


@pytest.mark.skipif(not os.path.isdir("/proc/self/fd"), reason="counts open descriptors through /proc")
@pytest.mark.filterwarnings("ignore::ResourceWarning")  # Python's word for a file closed by collection
@pytest.mark.filterwarnings("ignore::pytest.PytestUnraisableExceptionWarning")
def test_pieces_never_iterated_leave_no_descriptor_open(tmp_path: Path) -> None:
    # pieces() opened the file and wrapped it in the generator's body: a generator never started
    # (the caller looked at the first result only, or none) never closed it, one descriptor each.
    import gc

    store = ac.ResultStore(tmp_path / "store")
    recall_id = store.put("line\n" * 100)
    before = len(os.listdir("/proc/self/fd"))
    for _ in range(200):
        store.pieces(recall_id)
    gc.collect()
    assert len(os.listdir("/proc/self/fd")) <= before + 1
    assert "".join(store.pieces(recall_id)) == "line\n" * 100
