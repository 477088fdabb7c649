"""Every Python example of the docs runs as written: each page's blocks top to bottom in a fresh
process, from the repository root, with no API key set and no network. A block that is not meant
to run is fenced as ``text`` (or ``python {.no-run}`` where it should still be highlighted)."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from tests import support

DOCS = support.ROOT / "docs"
PAGES = sorted(p.relative_to(DOCS).as_posix() for p in DOCS.rglob("*.md"))
#: A fenced Python block: ```python then the code up to the closing fence.
BLOCK = re.compile(r"^```python\n(.*?)^```$", re.DOTALL | re.MULTILINE)
KEYS = ("ANTHROPIC_API_KEY", "ANTHROPIC_AUTH_TOKEN", "OPENAI_API_KEY", "ANTHROPIC_BASE_URL", "OPENAI_BASE_URL")


def blocks_of(text: str) -> list[str]:
    """The Python blocks of a page that run (``python {.no-run}`` blocks do not match)."""
    return BLOCK.findall(text)


def run_page(text: str, name: str, tmp_path: Path) -> subprocess.CompletedProcess[str]:
    """The page's blocks joined in order, run in a fresh interpreter from the repository root."""
    script = tmp_path / (name.replace("/", "__") + ".py")
    script.write_text("\n\n".join(blocks_of(text)), encoding="utf-8")
    env = {k: v for k, v in os.environ.items() if k not in KEYS}
    env["MPLBACKEND"] = "Agg"
    env["LITELLM_LOCAL_MODEL_COST_MAP"] = "True"  # LiteLLM reads its model table offline
    return subprocess.run(
        [sys.executable, str(script)],
        check=False,
        cwd=support.ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )


def test_the_docs_have_pages_and_examples() -> None:
    assert len(PAGES) >= 20
    assert sum(len(blocks_of((DOCS / p).read_text(encoding="utf-8"))) for p in PAGES) >= 16


#: Pages whose examples need an extra the test extras leave out (CI installs it in a later step and
#: runs those pages there).
NEEDS = {"how-to/litellm.md": "litellm"}


@pytest.mark.parametrize("page", [p for p in PAGES if blocks_of((DOCS / p).read_text(encoding="utf-8"))])
def test_page_examples_run_alone_offline(page: str, tmp_path: Path) -> None:
    if page in NEEDS:
        pytest.importorskip(NEEDS[page], reason=f"docs/{page} needs {NEEDS[page]} (its extra, installed apart in CI)")
    done = run_page((DOCS / page).read_text(encoding="utf-8"), page, tmp_path)
    assert done.returncode == 0, f"docs/{page}:\n{done.stdout[-2000:]}\n{done.stderr[-4000:]}"


def test_a_failing_block_fails_its_page(tmp_path: Path) -> None:
    page = "# A page\n\n```python\nprint('fine')\n```\n\n```python\nraise SystemExit(3)\n```\n"
    assert run_page(page, "broken.md", tmp_path).returncode == 3
    assert blocks_of("```python {.no-run}\nraise SystemExit(3)\n```\n") == []
