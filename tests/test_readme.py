"""The README's quickstart runs as written."""

from __future__ import annotations

import re

from tests import support


def test_quickstart_runs() -> None:
    readme = (support.ROOT / "README.md").read_text(encoding="utf-8")
    block = re.search(r"```python\n(.*?)```", readme, re.DOTALL)
    assert block is not None
    exec(compile(block.group(1), "README.md", "exec"), {})
