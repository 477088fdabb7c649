from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests import support
from tests.llm_server import LLMServer

pytest_plugins = ["pytester"]


@pytest.fixture(scope="session")
def transcripts() -> Path:
    """The shared transcript corpus; tests that need it skip when ../shared is absent."""
    path = support.transcripts_dir()
    if not path.is_dir():
        pytest.skip(f"shared transcript corpus not found at {path} (set AGENTCONTEXT_SHARED)")
    return path


@pytest.fixture(scope="session")
def tiktoken_encodings() -> dict[str, Any]:
    """Python tiktoken's o200k_base and cl100k_base, loaded offline from the rank files that ship
    inside the Rust crates."""
    tiktoken = pytest.importorskip("tiktoken", reason="tiktoken is a test extra: pip install -e '.[test]'")
    cache = support.tiktoken_cache_dir()
    if cache is None:
        pytest.skip("no tiktoken rank files in the cargo registry (build the project with cargo first)")
    os.environ["TIKTOKEN_CACHE_DIR"] = str(cache)
    return {name: tiktoken.get_encoding(name) for name in ("o200k_base", "cl100k_base")}


@pytest.fixture
def server() -> Iterator[LLMServer]:
    """The loopback LLM server (``tests/llm_server.py``), started for one test; the providers that
    ``support.provider`` made for it are closed when it stops."""
    with LLMServer() as s:
        yield s
