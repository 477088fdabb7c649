"""Issue #29, item 1: ``agentcontext compact`` shows its progress on a terminal for a large input,
from the compaction's own events; quiet when piped, with ``--json`` or for a small input; ``eval``
is quiet with ``--json`` too unless ``--progress`` asks."""

from __future__ import annotations

import io
import json
from pathlib import Path
from typing import Any

import pytest

import agentcontext as ac
from agentcontext import cli
from agentcontext.compaction import Compactor
from agentcontext.observe.progress import LARGE_INPUT_BYTES, compact_progress
from tests import support


class Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def _file(tmp_path: Path, size: int) -> Path:
    path = tmp_path / "t.jsonl"
    with path.open("wb") as f:
        f.truncate(size)
    return path


def test_the_line_follows_the_steps_and_the_compaction_events(tmp_path: Path) -> None:
    screen = Terminal()
    progress = compact_progress(str(_file(tmp_path, LARGE_INPUT_BYTES)), False, screen)
    assert progress.on_event is progress
    conv = ac.Conversation(support.synthetic_session(80, seed=3), format="openai")
    progress.step("compact")
    result = Compactor("openharness", on_event=progress.on_event).compact(conv, budget=conv.tokens // 3)
    progress.step("write")
    progress.close()
    frames = screen.getvalue().split("\r\x1b[2K")[1:]
    assert frames[0].startswith("compact [########........] compact: ")
    assert any(f"{conv.tokens:,} tokens in {len(conv):,} messages" in f for f in frames)
    stages = " > ".join(s.stage for s in result.stages)
    assert any(f"{stages}: {result.tokens_after:,} tokens" in f for f in frames)
    assert frames[-1].startswith("compact [################] done: done") and frames[-1].endswith("s\n")


@pytest.mark.parametrize(
    ("size", "as_json", "stream"),
    [(LARGE_INPUT_BYTES, False, io.StringIO()), (LARGE_INPUT_BYTES, True, Terminal()), (1_000, False, Terminal())],
    ids=["piped", "json", "small"],
)
def test_quiet_when_piped_with_json_or_for_a_small_input(
    tmp_path: Path, size: int, as_json: bool, stream: io.StringIO
) -> None:
    progress = compact_progress(str(_file(tmp_path, size)), as_json, stream)
    assert progress.on_event is None
    progress.step("read")
    progress.close()
    assert stream.getvalue() == ""


def test_compact_on_a_terminal_for_a_small_input_prints_the_report_only(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "s.jsonl"
    path.write_text("".join(json.dumps(m) + "\n" for m in support.synthetic_session(40, seed=2)))
    screen = Terminal()
    monkeypatch.setattr("sys.stderr", screen)
    assert cli.main(["compact", str(path), "--budget", "50%", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["fits"] is True
    assert screen.getvalue() == ""


def test_eval_is_quiet_with_json_unless_progress_is_asked(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    from agentcontext.measure import evaluation

    seen: list[Any] = []

    def run(*args: Any, progress: Any = None, **kwargs: Any) -> list[Any]:
        seen.append(progress)
        raise SystemExit(0)

    monkeypatch.setattr(evaluation, "run", run)
    monkeypatch.setattr("sys.stderr", Terminal())
    for extra in (["--json", str(tmp_path / "o.json")], ["--json", str(tmp_path / "o.json"), "--progress"], []):
        with pytest.raises(SystemExit):
            cli.main(["eval", "x.jsonl", "--budget", "50%", *extra])
    assert seen[0] is None and seen[1] is not None and seen[2] is not None
