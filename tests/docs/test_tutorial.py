"""The Jupyter tutorial (docs/tutorial.ipynb) runs top to bottom in a fresh kernel, offline, and
prints what its stored outputs show: the same text, the same HTML reports, and a plot."""

from __future__ import annotations

import os

import pytest

from tests import support

nbformat = pytest.importorskip("nbformat", reason="the tutorial needs nbformat and nbclient (test extras)")
nbclient = pytest.importorskip("nbclient", reason="the tutorial needs nbformat and nbclient (test extras)")

NOTEBOOK = support.ROOT / "docs" / "tutorial.ipynb"


def _outputs(cell: object, kind: str) -> list[str]:
    found = []
    for out in cell.outputs:  # type: ignore[attr-defined]
        if kind == "stream" and out.output_type == "stream":
            found.append(out.text)
        elif kind in out.get("data", {}):
            found.append(out.data[kind])
    return found


def test_the_tutorial_runs_and_prints_its_stored_outputs(monkeypatch: pytest.MonkeyPatch) -> None:
    for key in ("ANTHROPIC_API_KEY", "OPENAI_API_KEY", "MPLBACKEND"):
        monkeypatch.delenv(key, raising=False)
    stored = nbformat.read(NOTEBOOK, as_version=4)
    fresh = nbformat.read(NOTEBOOK, as_version=4)
    for cell in fresh.cells:
        if cell.cell_type == "code":
            cell.outputs = []
    path = str(support.ROOT)
    monkeypatch.setenv(
        "PYTHONPATH", os.pathsep.join(filter(None, [str(support.ROOT / "python"), os.environ.get("PYTHONPATH")]))
    )
    nbclient.NotebookClient(fresh, timeout=300, kernel_name="python3", resources={"metadata": {"path": path}}).execute()
    code = [(a, b) for a, b in zip(stored.cells, fresh.cells, strict=True) if a.cell_type == "code"]
    assert len(code) >= 5
    for old, new in code:
        assert _outputs(new, "stream") == _outputs(old, "stream"), old.source
        assert _outputs(new, "text/html") == _outputs(old, "text/html"), old.source
    plots = [new for _, new in code if _outputs(new, "image/png")]
    assert len(plots) == 1
    text = "".join(t for _, new in code for t in _outputs(new, "stream"))
    for preset in ("openharness", "pi", "codex"):
        assert text.count(f" {preset} ") == 2  # once at 25%, once at 10%
