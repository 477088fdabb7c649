"""``Session(compiler=..., system=...)`` set ``system`` as the base of the caller's own WorkingSet,
which other compilers may share: a second agent built on the same WorkingSet then sent the first
one's system prompt. The session's compiler now takes a copy of its working set with that base."""

from __future__ import annotations

import pytest

from agentcontext.compiler.compile import Compiler, WorkingSet
from agentcontext.sessions.loop import Session
from tests.llm_server import LLMServer

pytest.importorskip("openai", reason="the openai SDK is a test extra: pip install -e '.[test]'")

from .test_sessions import chat


def test_a_session_system_prompt_leaves_the_callers_working_set_as_it_was(server: LLMServer) -> None:
    shared = WorkingSet(base="You are the shared base.")
    one, two = Compiler(shared), Compiler(shared)
    session = Session(chat(server), compiler=one, system="You review code, and nothing else.")
    assert shared.base == "You are the shared base."
    assert two.working_set.base == "You are the shared base."
    assert one.working_set.base == "You review code, and nothing else."
    assert session.compiler is one
    request = one.compile(session.conversation)
    assert "You review code, and nothing else." in request.system
    assert "You review code, and nothing else." not in two.compile(session.conversation).system
