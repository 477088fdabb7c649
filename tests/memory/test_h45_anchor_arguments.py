"""WorkspaceAnchors' arguments: one path given as a string was taken character by character
("PLAN.md" re-attached files named "P", "L", ...: nothing, silently); max_tokens=True was taken
for 1, a path with a NUL was never found, and an unknown encoding failed at the first compaction."""

from __future__ import annotations

from pathlib import Path

import pytest

from agentcontext.errors import ArgumentTypeError, OptionError
from agentcontext.memory.anchors import WorkspaceAnchors


@pytest.mark.parametrize("one", ["PLAN.md", Path("PLAN.md")])
def test_one_path_is_one_anchor(tmp_path: Path, one: str | Path) -> None:
    (tmp_path / "PLAN.md").write_text("step 1: parse\n", encoding="utf-8")
    anchors = WorkspaceAnchors(one, workspace=tmp_path)
    assert anchors.paths == [Path("PLAN.md")]
    [message] = anchors.messages()
    assert "step 1: parse" in message["content"]


@pytest.mark.parametrize(
    ("kwargs", "error", "match"),
    [
        ({"paths": 5}, ArgumentTypeError, "paths must be"),
        ({"paths": b"PLAN.md"}, ArgumentTypeError, "paths must be"),
        ({"paths": ["a\0b"]}, OptionError, r"paths\[0\]"),
        ({"paths": [5]}, ArgumentTypeError, r"paths\[0\]"),
        ({"paths": [], "workspace": "a\0b"}, OptionError, "workspace"),
        ({"paths": [], "max_tokens": True}, ArgumentTypeError, "max_tokens"),
        ({"paths": [], "max_bytes": 1.5}, ArgumentTypeError, "max_bytes"),
        ({"paths": [], "encoding": "gpt2"}, OptionError, "encoding"),
    ],
)
def test_bad_arguments_are_typed_errors(kwargs: dict[str, object], error: type[Exception], match: str) -> None:
    with pytest.raises(error, match=match):
        WorkspaceAnchors(**kwargs)  # type: ignore[arg-type]
