"""A lone surrogate is refused (``InvalidMessageError``) wherever a message's text or a call's
name or arguments carries it, on ``trim_messages``' fast path (a list of dicts) and its kept
trimmer as on the general path, for every encoding. With ``encoding="approximate"`` the fast
path used to count only a string's length and accept it, while the general path and
``Conversation`` refused it."""

from __future__ import annotations

from typing import Any

import pytest

import agentcontext as ac
from agentcontext import _core
from agentcontext.errors import InvalidMessageError

BAD = "before \ud800 after"
ENCODINGS = ["approximate", "o200k_base", "cl100k_base"]


def _call(name: str = "read", args: str = "{}") -> dict[str, Any]:
    return {"id": "c1", "type": "function", "function": {"name": name, "arguments": args}}


def _cases() -> dict[str, list[dict[str, Any]]]:
    return {
        "system": [{"role": "system", "content": BAD}, {"role": "user", "content": "hi"}],
        "user": [{"role": "user", "content": BAD}],
        "assistant": [{"role": "user", "content": "a"}, {"role": "assistant", "content": BAD}],
        "tool": [
            {"role": "user", "content": "a"},
            {"role": "assistant", "content": "", "tool_calls": [_call()]},
            {"role": "tool", "tool_call_id": "c1", "content": BAD},
        ],
        "arguments": [
            {"role": "user", "content": "a"},
            {"role": "assistant", "content": "", "tool_calls": [_call(args='{"p": "' + BAD + '"}')]},
            {"role": "tool", "tool_call_id": "c1", "content": "ok"},
        ],
        "tool name": [
            {"role": "user", "content": "a"},
            {"role": "assistant", "content": "", "tool_calls": [_call(name=BAD)]},
            {"role": "tool", "tool_call_id": "c1", "content": "ok"},
        ],
        "call id": [
            {"role": "user", "content": "a"},
            {"role": "assistant", "content": "", "tool_calls": [{**_call(), "id": BAD}]},
            {"role": "tool", "tool_call_id": BAD, "content": "ok"},
        ],
        "open call arguments": [
            {"role": "user", "content": "a"},
            {"role": "assistant", "content": None, "tool_calls": [_call(args=BAD)]},
        ],
    }


@pytest.mark.parametrize("encoding", ENCODINGS)
@pytest.mark.parametrize("where", list(_cases()))
def test_a_lone_surrogate_is_refused_on_every_path(encoding: str, where: str) -> None:
    messages = _cases()[where]
    with pytest.raises(InvalidMessageError):
        ac.Conversation(messages, encoding=encoding)
    with pytest.raises(InvalidMessageError):
        ac.trim_messages(tuple(messages), 10**6, encoding=encoding)  # the general path
    with pytest.raises(InvalidMessageError):
        ac.trim_messages(messages, 10**6, encoding=encoding)  # the fast path (a list of dicts)


@pytest.mark.parametrize("encoding", ENCODINGS)
@pytest.mark.parametrize("where", list(_cases()))
def test_the_kept_trimmer_hands_a_lone_surrogate_to_the_general_path(encoding: str, where: str) -> None:
    messages = _cases()[where]
    trimmer = _core._Trimmer(encoding=encoding)
    # None: the fast path does not apply (the caller then takes the general path, which refuses it).
    assert trimmer.trim(messages, list(messages), 10**6) is None
    assert trimmer.trim(messages, list(messages), 10**6, fresh=True) is None


@pytest.mark.parametrize("encoding", ENCODINGS)
def test_valid_non_ascii_text_stays_on_the_fast_path(encoding: str) -> None:
    messages = [
        {"role": "user", "content": "naïve café 日本語 🙂"},
        {"role": "assistant", "content": "", "tool_calls": [_call(name="lire", args='{"p": "é"}')]},
        {"role": "tool", "tool_call_id": "c1", "content": "résumé ✓"},
    ]
    trimmer = _core._Trimmer(encoding=encoding)
    assert trimmer.trim(messages, list(messages), 10**6) is not None
    assert ac.trim_messages(messages, 10**6, encoding=encoding) == messages
