"""`agentcontext memory index|search` and `agentcontext search` on real directories and logs."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from agentcontext import Conversation, SessionLog
from agentcontext.cli import EXIT_BAD_INPUT, main
from agentcontext.memory import MemoryStore
from tests import support


@pytest.fixture
def memdir(tmp_path: Path) -> Path:
    store = MemoryStore(directory=tmp_path / "mem")
    store.write("deploy", description="how we deploy", type="project", body="ArgoCD syncs the staging cluster")
    store.write("who", description="backend developer", type="user", body="prefers short answers")
    (store.directory / "broken.md").write_text("no front matter")
    return store.directory


def test_memory_index_prints_index_then_problems(memdir: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["memory", "index", str(memdir)]) == 0
    out = capsys.readouterr().out
    assert out == (
        "- who (user, who.md): backend developer\n- deploy (project, deploy.md): how we deploy\n\n"
        '1 file is not a valid record:\n  broken.md: no front matter (the file must start with a line "---")\n'
    )
    assert main(["memory", "index", str(memdir), "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert [r["name"] for r in report["records"]] == ["who", "deploy"]
    assert report["problems"][0]["file"] == "broken.md"
    assert report["index"].count("\n") == 2
    assert main(["memory", "index", str(memdir), "--max-lines", "1"]) == 0
    assert capsys.readouterr().out.startswith("[... 2 of 2 records not listed")


def test_memory_search(memdir: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["memory", "search", str(memdir), "argocd"]) == 0
    assert (
        capsys.readouterr().out
        == "- deploy (project, deploy.md): how we deploy\n    ArgoCD syncs the staging cluster\n"
    )
    assert main(["memory", "search", str(memdir), "nothing-like-this"]) == 0
    assert capsys.readouterr().out == "No memory record matches.\n"
    assert main(["memory", "search", str(memdir), "short|staging", "--regex", "--json"]) == 0
    assert {h["name"] for h in json.loads(capsys.readouterr().out)["hits"]} == {"deploy", "who"}


def test_search_log(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    log = SessionLog(tmp_path / "s.jsonl")
    log.append(
        Conversation(
            [
                {"role": "user", "content": "check the port"},
                {
                    "role": "assistant",
                    "content": None,
                    "tool_calls": [{"id": "c9", "type": "function", "function": {"name": "cat", "arguments": "{}"}}],
                },
                {"role": "tool", "tool_call_id": "c9", "content": "listen_port=8431"},
            ],
            format="openai",
        )
    )
    assert main(["search", str(log.path), "listen_port"]) == 0
    assert capsys.readouterr().out == (
        "1 matching messages (of 3 in the session), best first:\n- message 2 (tool), recall id c9:\n    listen_port=8431\n"
    )
    assert main(["search", str(log.path), "port", "--json", "--limit", "1"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert (report["matched"], len(report["hits"])) == (2, 1)


@pytest.mark.parametrize(
    "argv",
    [
        ["memory", "index", "{missing}"],
        ["memory", "index", "{file}"],
        ["memory", "index", "{dir}", "--max-lines", "0"],
        ["memory", "search", "{dir}", "("],
        ["memory", "search", "{dir}", "(", "--regex"],
        ["memory", "search", "{dir}", "x", "--limit", "0"],
        ["search", "{missing}", "x"],
        ["search", "{dir}", "x"],
        ["search", "{file}", "   "],
        ["search", "{fifo}", "x"],
    ],
)
def test_bad_input_is_one_line_and_exit_2(
    argv: list[str], memdir: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    os.mkfifo(tmp_path / "fifo")
    names = {"missing": tmp_path / "nope", "file": memdir / "who.md", "dir": memdir, "fifo": tmp_path / "fifo"}
    args = [a.format(**{k: str(v) for k, v in names.items()}) for a in argv]
    code = main(args)
    captured = capsys.readouterr()
    if argv[-1] == "(" and "--regex" not in argv:
        # "(" is a word, not a pattern: a search that finds nothing.
        assert code == 0
        return
    assert code == EXIT_BAD_INPUT
    err = captured.err.strip()
    assert err.startswith("agentcontext: error: ") and "\n" not in err, err


def test_real_process(memdir: Path) -> None:
    env = {**os.environ, "PYTHONPATH": str(support.ROOT / "python")}
    done = subprocess.run(
        [sys.executable, "-m", "agentcontext", "memory", "index", str(memdir / "absent")],
        capture_output=True,
        text=True,
        env=env,
        check=False,
    )
    assert done.returncode == 2
    assert done.stderr.count("\n") == 1 and "cannot list the memory directory" in done.stderr


def test_memory_search_query_that_is_not_text_is_one_line_and_exit_2(
    memdir: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # A query of bytes that are not UTF-8 reaches Python as lone surrogates (os.fsdecode).
    for query in ("\udcff", "ok \ud800"):
        assert main(["memory", "search", str(memdir), query]) == EXIT_BAD_INPUT
        err = capsys.readouterr().err
        assert err.startswith("agentcontext: error: QUERY is not valid Unicode text: a lone surrogate at character")
        assert err.count("\n") == 1
    env = {**os.environ, "PYTHONPATH": str(support.ROOT / "python")}
    done = subprocess.run(
        [sys.executable, "-m", "agentcontext", "memory", "search", str(memdir).encode(), b"caf\xe9"],
        capture_output=True,
        env=env,
        check=False,
    )
    assert done.returncode == EXIT_BAD_INPUT
    assert (
        done.stderr
        == b"agentcontext: error: QUERY is not valid Unicode text: a lone surrogate at character 4 (U+DCE9)\n"
    )


def test_memory_store_search_of_a_lone_surrogate_is_an_option_error(memdir: Path) -> None:
    from agentcontext.errors import OptionError
    from agentcontext.memory import MemoryTools

    store = MemoryStore(directory=memdir)
    with pytest.raises(
        OptionError, match=r"query is not valid Unicode text: a lone surrogate at character 1 \(U\+D800\)"
    ):
        store.search("\ud800")
    assert MemoryTools(store).execute("memory_search", {"query": "argo\udcff"}) == (
        "Error: query is not valid Unicode text: a lone surrogate at character 5 (U+DCFF)"
    )


def test_memory_index_prints_a_bad_files_name_on_one_line(memdir: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A problem's file name was printed as the directory holds it: a name with a line break or
    a terminal escape sequence (``\\x1b[2J`` clears the screen) wrote it to the terminal."""
    (memdir / "x\n- forged (user, forged.md): line.md").write_text("no front matter")
    (memdir / "\x1b[2Jclear.md").write_text("no front matter")
    assert main(["memory", "index", str(memdir)]) == 0
    out = capsys.readouterr().out
    assert "\x1b" not in out and "\n- forged" not in out
    assert "  '\\x1b[2Jclear.md': the file name is not a record name" in out
    assert "  'x\\n- forged (user, forged.md): line.md': the file name is not a record name" in out


def test_search_snippets_print_no_escape_sequence(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A snippet of a stored text (a record's body, a tool result in a session log) was printed as
    it was: ``\\x1b[2J`` in a tool's output cleared the terminal of whoever searched the log."""
    store = MemoryStore(directory=tmp_path / "mem")
    store.write("a", description="d", type="user", body="deploy \x1b[2J now")
    assert main(["memory", "search", str(store.directory), "deploy"]) == 0
    assert capsys.readouterr().out == "- a (user, a.md): d\n    'deploy \\x1b[2J now'\n"
    log = SessionLog(tmp_path / "s.jsonl")
    log.append(Conversation([{"role": "user", "content": "port \x1b]0;pwned\x07 8431"}], format="openai"))
    assert main(["search", str(log.path), "port"]) == 0
    out = capsys.readouterr().out
    assert "\x1b" not in out and "\x07" not in out and "\\x1b]0;pwned\\x07" in out
