"""Session snapshots: lossless, atomic, rotated, cleared; readable after kill -9 at any point."""

from __future__ import annotations

import json
import os
import random
import signal
import subprocess
import sys
import textwrap
import threading
import time
from pathlib import Path

import pytest

from agentcontext import Conversation
from agentcontext.cli import main
from agentcontext.errors import AgentContextError, OptionError, SnapshotError
from agentcontext.sessions import Snapshot, SnapshotStore
from tests import support
from tests.support import normalized_files

CHAT = [
    {"role": "system", "content": "be brief", "x_vendor": {"a": 1}},
    {"role": "user", "content": "list files"},
    {
        "role": "assistant",
        "content": None,
        "tool_calls": [{"id": "c1", "type": "function", "function": {"name": "ls", "arguments": '{"p": "."}'}}],
    },
    {"role": "tool", "tool_call_id": "c1", "content": "a.py\nb.py"},
    {"role": "assistant", "content": "two files", "refusal": None},
]
ANTHROPIC = [
    {"role": "user", "content": [{"type": "text", "text": "read it", "cache_control": {"type": "ephemeral"}}]},
    {
        "role": "assistant",
        "content": [
            {"type": "thinking", "thinking": "hm", "signature": "sig=="},
            {"type": "tool_use", "id": "t1", "name": "read", "input": {"path": "a.py"}},
        ],
    },
    {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t1", "content": "print(1)"}]},
    {"role": "assistant", "content": [{"type": "text", "text": "done"}], "x_extra": [1, 2]},
]
RESPONSES = [
    {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "run tests"}]},
    {"type": "function_call", "call_id": "r1", "name": "sh", "arguments": '{"cmd": "pytest"}', "id": "fc_1"},
    {"type": "function_call_output", "call_id": "r1", "output": "1 passed"},
    {"type": "reasoning", "id": "rs_1", "summary": [], "encrypted_content": "xyz"},
    {"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": "ok", "annotations": []}]},
]


def same(a: Conversation, b: Conversation) -> bool:
    return (
        a.format == b.format
        and a.encoding == b.encoding
        and a.tokens == b.tokens
        and a.to_format(a.format) == b.to_format(b.format)
    )


@pytest.mark.parametrize(
    ("messages", "fmt"), [(CHAT, "openai"), (ANTHROPIC, "anthropic"), (RESPONSES, "responses"), (CHAT, "jsonl")]
)
def test_round_trip_is_lossless(tmp_path: Path, messages: list[dict], fmt: str) -> None:
    if fmt == "jsonl":
        conv = Conversation(Conversation(messages, format="openai").to_jsonl(), format="jsonl", encoding="cl100k_base")
    else:
        conv = Conversation(messages, format=fmt)
    store = SnapshotStore(tmp_path / "s")
    control = {"mode": "plan", "goal": {"condition": "tests pass"}, "compaction": {"summary": "…", "cooldown": 2}}
    store.save(Snapshot(conv, control=control, fingerprint="f1", turn=3, reason="reply"))
    back = store.load()
    assert same(back.conversation, conv)
    assert (back.control, back.fingerprint, back.turn, back.reason) == (control, "f1", 3, "reply")
    assert conv.to_format(conv.format) == (messages if fmt != "jsonl" else conv.to_format("jsonl"))


def test_every_corpus_transcript_round_trips(tmp_path: Path) -> None:
    files = normalized_files()
    if not files:
        pytest.skip("the shared corpus is not here (set AGENTCONTEXT_SHARED)")
    store = SnapshotStore(tmp_path / "s", keep=0)
    for path in files:
        conv = Conversation.from_file(path)
        store.save(Snapshot(conv))
        assert same(store.load().conversation, conv), path


def test_history_rotates_and_keeps_n(tmp_path: Path) -> None:
    store = SnapshotStore(tmp_path / "s", keep=2)
    assert store.current() is None
    assert store.history() == []
    conv = Conversation([], format="openai")
    for turn in range(1, 6):
        conv.append({"role": "user", "content": f"message {turn}"})
        store.save(Snapshot(conv.slice(0), turn=turn, reason="reply"))
    infos = store.history()
    assert [(i.slot, i.turn, i.messages) for i in infos] == [(0, 5, 5), (1, 4, 4), (2, 3, 3)]
    assert store.load(2).conversation[2]["content"] == "message 3"
    assert len(list((tmp_path / "s" / "history").iterdir())) == 2
    with pytest.raises(SnapshotError, match="no snapshot 3 back") as info:
        store.load(3)
    assert info.value.kind == "not_found"


def test_keep_zero_keeps_no_history(tmp_path: Path) -> None:
    store = SnapshotStore(tmp_path / "s", keep=0)
    for turn in range(3):
        store.save(Snapshot(Conversation([], format="openai"), turn=turn))
    assert [i.slot for i in store.history()] == [0]


def test_clear_then_resume_is_empty(tmp_path: Path) -> None:
    store = SnapshotStore(tmp_path / "s")
    conv = Conversation(CHAT, format="openai")
    store.save(Snapshot(conv, control={"mode": "plan"}, turn=4, reason="reply"))
    store.clear(control={"mode": "plan"}, turn=4)
    current = store.current()
    assert current is not None and current.empty and current.reason == "clear"
    assert current.conversation.format == "openai"  # the format survives the clear
    assert current.control == {"mode": "plan"}
    assert same(store.load(1).conversation, conv)  # the old state is history, not current
    # A store reopened by another process sees the clear too.
    again = SnapshotStore(tmp_path / "s").current()
    assert again is not None and again.empty


def test_the_callers_conversation_is_not_changed(tmp_path: Path) -> None:
    conv = Conversation(CHAT, format="openai")
    before = conv.to_openai()
    store = SnapshotStore(tmp_path / "s")
    store.save(Snapshot(conv))
    store.load().conversation.append({"role": "user", "content": "more"})
    assert conv.to_openai() == before


WRITER = textwrap.dedent(
    """
    import sys
    from agentcontext import Conversation
    from agentcontext.sessions import Snapshot, SnapshotStore

    store = SnapshotStore(sys.argv[1], keep=3)
    current = store.current()  # each writer resumes where the killed one left off
    conv = current.conversation if current is not None else Conversation([], format="openai")
    start = current.turn + 1 if current is not None else 1
    for turn in range(start, start + 100000):
        conv.append({"role": "user", "content": "x" * 2000 + str(turn)})
        store.save(Snapshot(conv, turn=turn, reason="reply"))
        print(turn, flush=True)
    """
)


def _env() -> dict[str, str]:
    env = dict(os.environ)
    root = str(support.ROOT)
    env["PYTHONPATH"] = os.pathsep.join([str(Path(root) / "python"), root, env.get("PYTHONPATH", "")])
    return env


@pytest.mark.skipif(sys.platform == "win32", reason="kill -9 is POSIX")
def test_kill_9_at_any_point_leaves_a_readable_current(tmp_path: Path) -> None:
    directory = tmp_path / "s"
    rng = random.Random(7)
    confirmed = 0
    for _ in range(12):
        proc = subprocess.Popen(
            [sys.executable, "-c", WRITER, str(directory)],
            stdout=subprocess.PIPE,
            env=_env(),
            text=True,
        )
        assert proc.stdout is not None
        lines: list[str] = []
        reader = threading.Thread(target=lines.extend, args=(proc.stdout,))
        reader.start()
        deadline = time.monotonic() + 60
        while not lines and time.monotonic() < deadline:  # started (imports can be slow on a busy machine)
            time.sleep(0.01)
        time.sleep(rng.random() * 0.2)
        proc.send_signal(signal.SIGKILL)
        proc.wait()
        reader.join()
        proc.stdout.close()
        done = [int(line) for line in lines if line.strip().isdigit()]
        store = SnapshotStore(directory, keep=3)
        current = store.current()
        assert current is not None
        # Everything the writer confirmed is there; at most the one in flight more.
        last = done[-1] if done else confirmed
        assert current.turn in (last, last + 1)
        assert len(current.conversation) == current.turn and current.conversation.validate() == []
        assert current.conversation[-1]["content"].endswith(str(current.turn))
        for info in store.history():  # every history file is whole
            assert store.load(info.slot).turn == info.turn
        confirmed = current.turn
    assert confirmed > 12
    # A later save removes any temporary file a killed writer left.
    SnapshotStore(directory).save(Snapshot(Conversation([], format="openai")))
    assert not [p for p in directory.rglob(".snapshot-*")]


def test_two_processes_writing_never_tear_a_snapshot(tmp_path: Path) -> None:
    script = textwrap.dedent(
        """
        import sys
        from agentcontext import Conversation
        from agentcontext.sessions import Snapshot, SnapshotStore
        store = SnapshotStore(sys.argv[1], keep=1000)
        for turn in range(40):
            conv = Conversation([{"role": "user", "content": sys.argv[2] * (turn + 1)}], format="openai")
            store.save(Snapshot(conv, turn=turn, control={"who": sys.argv[2]}))
        """
    )
    procs = [
        subprocess.Popen([sys.executable, "-c", script, str(tmp_path / "s"), who], env=_env()) for who in ("a", "b")
    ]
    assert [p.wait() for p in procs] == [0, 0]
    store = SnapshotStore(tmp_path / "s", keep=1000)
    infos = store.history()
    assert len(infos) == 80  # every save rotated the one before into its own history slot
    for info in infos:
        snap = store.load(info.slot)
        assert snap.conversation[0]["content"] == snap.control["who"] * (snap.turn + 1)


def test_attacker_files_are_refused_not_followed(tmp_path: Path) -> None:
    secret = tmp_path / "secret.json"
    secret.write_text("{}")
    directory = tmp_path / "s"
    store = SnapshotStore(directory)
    (directory / "current.json").symlink_to(secret)
    with pytest.raises(SnapshotError) as info:
        store.load()
    assert info.value.kind == "io"
    with pytest.raises(SnapshotError, match="not a regular file; not replaced"):
        store.save(Snapshot(Conversation([], format="openai")))
    assert secret.read_text() == "{}"  # the symlink's target was not written
    (directory / "current.json").unlink()
    os.mkfifo(directory / "current.json")
    with pytest.raises(SnapshotError, match="not a regular file"):  # and does not wait for a writer
        store.load()
    (directory / "current.json").unlink()
    linked = tmp_path / "linked"
    linked.symlink_to(tmp_path / "elsewhere", target_is_directory=True)
    (tmp_path / "elsewhere").mkdir()
    with pytest.raises(SnapshotError, match="a symlink") as info:
        SnapshotStore(linked)
    assert info.value.kind == "symlink"


def test_bad_files_name_what_is_wrong(tmp_path: Path) -> None:
    store = SnapshotStore(tmp_path / "s", max_bytes=100)
    current = tmp_path / "s" / "current.json"
    current.write_bytes(b"\xff\xfe not json")
    with pytest.raises(SnapshotError, match="not a JSON snapshot") as info:
        store.load()
    assert info.value.kind == "invalid"
    current.write_text(json.dumps({"version": 99, "messages": []}))
    with pytest.raises(SnapshotError, match="snapshot version 99") as info:
        store.load()
    assert info.value.kind == "version"
    current.write_text(json.dumps({"version": 1, "messages": [{"role": "nobody"}], "format": "openai"}))
    with pytest.raises(SnapshotError, match=r"current\.json") as info:
        store.load()
    assert info.value.kind == "invalid"
    current.write_text(json.dumps({"version": 1, "messages": "x" * 200}))
    with pytest.raises(SnapshotError, match="100-byte limit") as info:
        store.load()
    assert info.value.kind == "too_large"
    sparse = tmp_path / "s" / "current.json"
    with open(sparse, "wb") as f:
        f.truncate(5 << 30)  # a 5 GiB sparse file is refused after reading max_bytes + 1
    with pytest.raises(SnapshotError, match="limit"):
        store.load()


@pytest.mark.parametrize(
    ("kwargs", "error"),
    [
        ({"keep": -1}, "keep must be a non-negative integer"),
        ({"keep": "3"}, "keep must be a non-negative integer"),
        ({"keep": True}, "keep must be a non-negative integer"),
        ({"max_bytes": 0}, "max_bytes must be a positive integer"),
        ({"max_bytes": 2**70}, "max_bytes is too large"),
    ],
)
def test_bad_arguments(tmp_path: Path, kwargs: dict, error: str) -> None:
    with pytest.raises(OptionError, match=error):
        SnapshotStore(tmp_path / "s", **kwargs)


def test_bad_snapshot_arguments(tmp_path: Path) -> None:
    conv = Conversation([], format="openai")
    with pytest.raises(OptionError, match="directory must be a path"):
        SnapshotStore(3)  # type: ignore[arg-type]
    with pytest.raises(OptionError, match="conversation must be a Conversation"):
        Snapshot([])  # type: ignore[arg-type]
    with pytest.raises(OptionError, match="turn must be a non-negative integer"):
        Snapshot(conv, turn=-1)
    with pytest.raises(OptionError, match="reason must be one of"):
        Snapshot(conv, reason="whim")  # type: ignore[arg-type]
    with pytest.raises(OptionError, match="control must be a mapping"):
        Snapshot(conv, control=[1])  # type: ignore[arg-type]
    with pytest.raises(OptionError, match="save\\(\\) takes a Snapshot"):
        SnapshotStore(tmp_path / "s").save(conv)  # type: ignore[arg-type]
    with pytest.raises(OptionError, match="slot must be a non-negative integer"):
        SnapshotStore(tmp_path / "s").load(-1)
    with pytest.raises(SnapshotError, match="no such snapshot directory"):
        SnapshotStore(tmp_path / "missing", create=False)
    assert not (tmp_path / "missing").exists()
    assert issubclass(SnapshotError, AgentContextError)


def test_cli_list_and_show(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    root = tmp_path / "sessions"
    a = SnapshotStore(root / "alpha")
    conv = Conversation(CHAT, format="openai")
    a.save(Snapshot(conv.slice(0, 2), turn=1, reason="reply", control={"mode": "default"}))
    a.save(Snapshot(conv, turn=2, reason="permission", control={"mode": "plan", "goal": {"condition": "tests pass"}}))
    SnapshotStore(root / "beta").clear()
    (root / "not-a-session").mkdir()

    assert main(["sessions", "list", str(root)]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[0].startswith("alpha: turn 2, 5 messages, ") and "mode plan, goal tests pass" in out[0]
    assert out[1].startswith("beta: turn 0, empty (cleared)")
    assert len(out) == 2

    assert main(["sessions", "show", str(root / "alpha"), "--history", "5"]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[0].startswith("current: turn 2") and "permission" in out[0]
    assert out[1].startswith("1 back: turn 1, 2 messages") and "mode default" in out[1]

    assert main(["sessions", "show", str(root / "alpha"), "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert [s["slot"] for s in data["snapshots"]] == [0]
    assert data["snapshots"][0]["tokens"] == conv.tokens
    assert data["snapshots"][0]["control"]["mode"] == "plan"

    assert main(["sessions", "list", str(root / "alpha"), "--json"]) == 0
    assert [s["turn"] for s in json.loads(capsys.readouterr().out)["sessions"]] == [2]


def test_cli_bad_input_is_one_line_and_exit_2(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    missing = tmp_path / "missing"
    assert main(["sessions", "show", str(missing)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "no such snapshot directory" in err
    assert not missing.exists()  # reading never creates
    assert main(["sessions", "list", str(missing)]) == 2
    capsys.readouterr()
    SnapshotStore(tmp_path / "s")
    assert main(["sessions", "show", str(tmp_path / "s"), "--history", "-1"]) == 2
    assert "--history must be a non-negative integer" in capsys.readouterr().err
    assert main(["sessions", "show", str(tmp_path / "s")]) == 2
    assert "no current snapshot" in capsys.readouterr().err


_VALID = {"version": 1, "format": "openai", "encoding": "o200k_base", "messages": [], "turn": 1, "reason": "reply"}


@pytest.mark.parametrize(
    ("change", "error"),
    [
        ({"turn": "x"}, "turn must be a non-negative integer"),
        ({"turn": -3}, "turn must be a non-negative integer"),
        ({"turn": 1e400}, "turn must be a non-negative integer"),
        ({"control": []}, "'control' must be an object"),
        ({"messages": [1, 2]}, "message 0"),
        ({"messages": [{"role": 5}]}, "`role` must be a string"),
        ({"fingerprint": 7}, "fingerprint must be a string"),
        ({"reason": ["reply"]}, "reason must be one of"),
        ({"created": {"a": 1}}, "'created' must be a string"),
        ({"format": None}, "unknown format"),
    ],
)
def test_cli_show_refuses_a_field_of_the_wrong_type(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], change: dict, error: str
) -> None:
    # `sessions show` read fields loosely: a turn of "x" was shown as turn 0, messages that are not
    # messages were counted, control [] shown as no control; now it checks what load() checks.
    store = SnapshotStore(tmp_path / "s")
    store.current_path.write_text(json.dumps({**_VALID, **change}))
    assert main(["sessions", "show", str(tmp_path / "s")]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and error in err, err
    with pytest.raises(SnapshotError) as info:
        store.info()
    assert info.value.kind == "invalid"


def test_deeply_nested_json_is_a_snapshot_error_not_a_recursion_error(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    store = SnapshotStore(tmp_path / "s")
    store.current_path.write_text("[" * 100_000 + "]" * 100_000)
    with pytest.raises(SnapshotError, match="nested too deeply"):
        store.load()
    assert main(["sessions", "show", str(tmp_path / "s")]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "nested too deeply" in err


def test_cli_show_prints_a_created_field_with_a_newline_on_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    store = SnapshotStore(tmp_path / "s")
    store.current_path.write_text(json.dumps({**_VALID, "created": "2026\nturn 99, evil"}))
    assert main(["sessions", "show", str(tmp_path / "s")]) == 0
    out = capsys.readouterr().out
    assert out.count("\n") == 1 and "2026\\nturn 99" in out


def test_cli_show_on_a_file_says_not_a_directory(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    plain = tmp_path / "plain"
    plain.write_text("x")
    assert main(["sessions", "show", str(plain)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "not a directory" in err and "cannot create" not in err


def test_a_huge_sparse_snapshot_is_refused_without_reading_it(tmp_path: Path) -> None:
    # The default limit is 1 GiB: a 4 GiB sparse current.json was read up to 1 GiB + 1 into memory
    # before being refused. A child process limited to 512 MiB of address space shows it is not.
    store = SnapshotStore(tmp_path / "s")
    with open(store.current_path, "wb") as f:
        f.truncate(4 << 30)
    code = textwrap.dedent(
        f"""
        import resource
        resource.setrlimit(resource.RLIMIT_AS, (512 << 20, 512 << 20))
        from agentcontext.errors import SnapshotError
        from agentcontext.sessions import SnapshotStore
        try:
            SnapshotStore({str(tmp_path / "s")!r}, create=False).load()
        except SnapshotError as exc:
            print(exc.kind)
        """
    )
    proc = subprocess.run([sys.executable, "-c", code], env=_env(), capture_output=True, text=True, check=False)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert proc.stdout.strip() == "too_large"


def test_a_snapshot_that_cannot_be_encoded_leaves_current_as_it_was(tmp_path: Path) -> None:
    store = SnapshotStore(tmp_path / "s")
    conv = Conversation([{"role": "user", "content": "hi"}])
    store.save(Snapshot(conv, control={"mode": "default"}, turn=1))
    before = store.current_path.read_bytes()
    for control, what in (
        ({"goal": {"text": "ship \ud800"}}, r"control\['goal'\]\['text'\] is not valid Unicode text"),
        ({"mode": "default", "k\udcff": 1}, r"a key of control is not valid Unicode text"),
        ({"calibration": object()}, "the snapshot is not JSON: Object of type object"),
    ):
        with pytest.raises(SnapshotError, match=what) as info:
            store.save(Snapshot(conv, control=control, turn=2))
        assert info.value.kind == "invalid" and "nothing was written" in str(info.value)
        assert store.current_path.read_bytes() == before
    assert store.load().turn == 1 and len(store.history()) == 1


def test_a_planted_lock_symlink_is_a_snapshot_error(tmp_path: Path) -> None:
    store = SnapshotStore(tmp_path / "s")
    outside = tmp_path / "outside"
    (store.directory / ".lock").symlink_to(outside)
    with pytest.raises(SnapshotError, match="the lock file is a symlink") as info:
        store.save(Snapshot(Conversation([{"role": "user", "content": "hi"}])))
    assert info.value.kind == "symlink"
    assert not outside.exists() and not store.current_path.exists()


def test_a_current_json_that_is_a_directory_is_a_snapshot_error_naming_it(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # os.fdopen refused the directory's descriptor: IsADirectoryError "Is a directory: 3" (the
    # descriptor, not the path), outside SnapshotError; the CLI printed "3: Is a directory".
    store = SnapshotStore(tmp_path / "s")
    store.current_path.mkdir()
    with pytest.raises(SnapshotError) as info:
        store.load()
    assert info.value.kind == "io"
    assert str(info.value) == f"{store.current_path}: a directory, not a snapshot file"
    with pytest.raises(SnapshotError, match="a directory, not a snapshot file"):
        store.current()
    assert main(["sessions", "show", str(tmp_path / "s")]) == 2
    err = capsys.readouterr().err
    assert err == f"agentcontext: error: {store.current_path}: a directory, not a snapshot file\n"
    open_fds = len(os.listdir("/proc/self/fd"))
    for _ in range(20):
        with pytest.raises(SnapshotError):
            store.load()
    assert len(os.listdir("/proc/self/fd")) == open_fds  # the descriptor is closed on refusal


def test_cli_list_finds_stores_at_any_depth_and_reports_a_bad_one(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # It looked one level down only, and one store without history/ (or with a current.json it
    # could not read) made it exit 2 listing nothing.
    from agentcontext.sessions.cli import MAX_DEPTH

    root = tmp_path / "root"
    conv = Conversation(CHAT, format="openai")
    SnapshotStore(root / "alpha").save(Snapshot(conv, turn=3, reason="reply"))
    SnapshotStore(root / "team" / "bob" / "s1").save(Snapshot(conv.slice(0, 2), turn=1))
    SnapshotStore(root / "no-history").save(Snapshot(conv, turn=7))
    (root / "no-history" / "history" / "00000001.json").unlink(missing_ok=True)
    (root / "no-history" / "history").rmdir()
    SnapshotStore(root / "broken").current_path.mkdir()
    deep = root.joinpath(*[f"d{i}" for i in range(MAX_DEPTH)], "too-deep")
    SnapshotStore(deep).save(Snapshot(conv))
    outside = tmp_path / "outside"
    SnapshotStore(outside).save(Snapshot(conv))
    (root / "link").symlink_to(outside, target_is_directory=True)
    (root / "empty" / "dir").mkdir(parents=True)

    assert main(["sessions", "list", str(root)]) == 0
    out = capsys.readouterr().out.splitlines()
    assert [line.split(":", 1)[0] for line in out[:-1]] == ["alpha", "broken", "no-history", "team/bob/s1"], out
    assert out[-1] == (
        f"not searched: the subdirectories of 1 directory {MAX_DEPTH} levels down (list one to see its "
        f"sessions, e.g. {'/'.join(f'd{i}' for i in range(MAX_DEPTH))})"
    )
    assert out[0].startswith("alpha: turn 3, 5 messages")
    assert out[1] == f"broken: unreadable: {root / 'broken' / 'current.json'}: a directory, not a snapshot file"
    assert out[2].startswith("no-history: turn 7, 5 messages")
    assert out[3].startswith("team/bob/s1: turn 1, 2 messages")

    assert main(["sessions", "list", str(root), "--json"]) == 0
    sessions = json.loads(capsys.readouterr().out)["sessions"]
    assert [s["directory"] for s in sessions] == [
        str(root / "alpha"),
        str(root / "broken"),
        str(root / "no-history"),
        str(root / "team" / "bob" / "s1"),
    ]
    assert "a directory, not a snapshot file" in sessions[1]["error"]
    assert [s.get("turn") for s in sessions] == [3, None, 7, 1]

    # The store without history/ reads as one with an empty history; nothing is created.
    assert main(["sessions", "show", str(root / "no-history"), "--history", "3"]) == 0
    assert capsys.readouterr().out.startswith("current: turn 7")
    assert not (root / "no-history" / "history").exists()
    # The store on the edge of the depth is found from one level down.
    assert main(["sessions", "list", str(root / "d0")]) == 0
    assert capsys.readouterr().out.startswith("d1/d2/d3/too-deep: turn 0")


def test_cli_show_on_a_directory_that_is_not_a_store_names_it(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # It named DIR/history ("no such snapshot directory"), a path the user never gave.
    plain = tmp_path / "plain"
    plain.mkdir()
    assert main(["sessions", "show", str(plain)]) == 2
    assert capsys.readouterr().err == f"agentcontext: error: {plain}: not a snapshot store (it holds no current.json)\n"
    assert not (plain / "history").exists()


def test_a_store_opened_for_reading_without_history_can_still_save(tmp_path: Path) -> None:
    store = SnapshotStore(tmp_path / "s")
    conv = Conversation(CHAT, format="openai")
    store.save(Snapshot(conv, turn=1))
    (tmp_path / "s" / "history").rmdir()
    reader = SnapshotStore(tmp_path / "s", create=False)
    assert reader.history()[0].turn == 1 and len(reader.history()) == 1
    reader.save(Snapshot(conv, turn=2))
    assert [i.turn for i in reader.history()] == [2, 1]


def test_cli_list_on_a_file_says_not_a_directory(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    plain = tmp_path / "plain"
    plain.write_text("x")
    assert main(["sessions", "list", str(plain)]) == 2
    assert capsys.readouterr().err == f"agentcontext: error: {plain}: not a directory\n"


def test_cli_list_says_which_deeper_directories_it_did_not_search(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # A store 5 levels down was left out silently: "root: no saved sessions".
    root = tmp_path / "root"
    SnapshotStore(root / "a" / "b" / "c" / "d" / "deep").clear()
    (root / "x" / "y" / "z" / "w").mkdir(parents=True)  # 4 levels down, nothing below: searched fully
    assert main(["sessions", "list", str(root)]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out == [
        f"{root}: no saved sessions within 4 levels",
        "not searched: the subdirectories of 1 directory 4 levels down (list one to see its sessions, e.g. a/b/c/d)",
    ]
    assert main(["sessions", "list", str(root), "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["not_searched"] == [str(root / "a" / "b" / "c" / "d")]
    assert main(["sessions", "list", str(root / "a" / "b" / "c" / "d")]) == 0
    assert capsys.readouterr().out.startswith("deep: turn 0, empty (cleared)")
