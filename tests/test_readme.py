"""The README's Python examples run as written, in order, in one namespace. Provider examples
talk to the loopback server of tests/llm_server.py through the SDKs' base-URL variables."""

from __future__ import annotations

import re

import pytest

from tests import support
from tests.llm_server import LLMServer, Reply


def test_python_examples_run(monkeypatch: pytest.MonkeyPatch) -> None:
    pytest.importorskip("anthropic", reason="the README's provider example needs the anthropic SDK (a test extra)")
    readme = (support.ROOT / "README.md").read_text(encoding="utf-8")
    blocks = re.findall(r"```python\n(.*?)```", readme, re.DOTALL)
    assert len(blocks) >= 2
    monkeypatch.chdir(support.ROOT)
    namespace: dict[str, object] = {}
    with LLMServer(default=lambda request: Reply("src/app.py starts the web server.")) as server:
        monkeypatch.setenv("ANTHROPIC_BASE_URL", server.url)
        monkeypatch.setenv("ANTHROPIC_API_KEY", "test-key")
        monkeypatch.setenv("OPENAI_BASE_URL", server.url + "/v1")
        monkeypatch.setenv("OPENAI_API_KEY", "test-key")
        try:
            for block in blocks:
                exec(compile(block, "README.md", "exec"), namespace)
        finally:
            for value in namespace.values():
                if type(value).__name__.endswith("Provider"):
                    value.close()  # type: ignore[attr-defined]
    assert any(r.endpoint == "anthropic" for r in server.requests)
