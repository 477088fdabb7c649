"""The README's Python examples run as written, in order, in one namespace."""

from __future__ import annotations

import re

from tests import support


def test_python_examples_run() -> None:
    readme = (support.ROOT / "README.md").read_text(encoding="utf-8")
    blocks = re.findall(r"```python\n(.*?)```", readme, re.DOTALL)
    assert len(blocks) >= 2
    namespace: dict[str, object] = {}
    for block in blocks:
        exec(compile(block, "README.md", "exec"), namespace)
