"""The README fits on a few screens, its quickstart runs alone in a fresh process with no API key,
and every page it links to exists."""

from __future__ import annotations

import os
import re
import subprocess
import sys

from tests import support

README = support.ROOT / "README.md"
#: The issue-28 limit: what it is, install, a quickstart, the two commands, links into the docs.
MAX_BYTES = 10_000


def test_the_readme_is_short() -> None:
    assert len(README.read_bytes()) <= MAX_BYTES


def test_the_quickstart_runs_alone_offline(tmp_path: object) -> None:
    blocks = re.findall(r"^```python\n(.*?)^```$", README.read_text(encoding="utf-8"), re.DOTALL | re.MULTILINE)
    assert blocks, "the README has a Python quickstart"
    env = {k: v for k, v in os.environ.items() if not k.endswith(("_API_KEY", "_AUTH_TOKEN", "_BASE_URL"))}
    for block in blocks:
        done = subprocess.run(
            [sys.executable, "-c", block], check=False, cwd=support.ROOT, env=env, capture_output=True, text=True
        )
        assert done.returncode == 0, done.stderr


def test_every_link_resolves() -> None:
    text = README.read_text(encoding="utf-8")
    links = [t for t in re.findall(r"\]\(([^)#]+)(?:#[^)]*)?\)", text) if "://" not in t]
    assert len(links) >= 20
    missing = [t for t in links if not (support.ROOT / t).exists()]
    assert missing == []
