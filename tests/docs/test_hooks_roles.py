"""The docs hook that renders the docstrings' Sphinx roles as code (docs/hooks.py)."""

from __future__ import annotations

import importlib.util
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def _hooks():  # type: ignore[no-untyped-def]
    spec = importlib.util.spec_from_file_location("docs_hooks", ROOT / "docs" / "hooks.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_roles_render_as_the_code_they_name() -> None:
    html = (
        "<p>See :class:<code>~agentcontext.compaction.Compactor</code>, "
        ":func:<code>agentcontext.count_tokens</code> and :py:meth:<code>~Session.send</code>.</p>"
    )
    assert _hooks().on_page_content(html) == (
        "<p>See <code>Compactor</code>, <code>agentcontext.count_tokens</code> and <code>send</code>.</p>"
    )


def test_text_without_a_role_is_unchanged() -> None:
    html = "<p>The ratio is 3:1; <code>a:b</code> and :class: alone stay.</p>"
    assert _hooks().on_page_content(html) == html


def test_every_role_the_docstrings_use_is_one_the_hook_renders() -> None:
    package = ROOT / "python" / "agentcontext"
    used: set[str] = set()
    for path in [*package.rglob("*.py"), *package.rglob("*.pyi")]:
        used |= set(re.findall(r":(?:py:)?([a-z]+):`", path.read_text(encoding="utf-8")))
    assert used, "no role found: the scan is wrong"
    assert used <= {"class", "func", "meth", "attr", "mod", "exc", "data", "obj", "const"}, used
