"""Probes found faster, the same probes (issue 27's time bound): paths are searched only in the
words that can hold one, lines with no constraint word are not split into sentences, ``extract``
takes the kinds wanted, and ``fold`` is the one whitespace folding every comparison uses."""

from __future__ import annotations

import random

import pytest

from agentcontext.probes import KINDS, extract, fold, found_in, found_whole

_WORDS = [
    "see", "src/app.py", "and/or", "/etc/hosts", "./x/y", "~/notes/todo.md", "a.b.c", "v1.2.3", "user@host:src/x.py",
    "http://example.com/a/b.py", "setup.cfg.", "(tests/test_x.py)", "foo:bar/baz.rs", "-./q/r.ts", "README.md,",
    "docs/", "x/y", "../up/one.go", "…", "naïve/módulo.py", "e.g.", "lib/a_b-c.d/e.json", "`cfg/x.toml`",
]  # fmt: skip
_SPACES = [" ", "  ", "\t", "\n", " \n\t ", "\u00a0", "\x0c"]


def _text(rng: random.Random, n: int) -> str:
    return "".join(rng.choice(_WORDS) + rng.choice(_SPACES) for _ in range(n))


def _paths(texts: list[str]) -> list[str]:
    messages = [{"role": "user", "content": t} for t in texts]
    return [p.text for p in extract(messages, kinds=("user_path",))]


@pytest.mark.parametrize("seed", range(20))
def test_paths_in_a_long_text_are_those_of_its_pieces(seed: int) -> None:
    # A long text is searched word by word, a short one whole: split between words, the pieces
    # (each short) yield the same paths in the same order.
    rng = random.Random(seed)
    pieces = [_text(rng, rng.randint(1, 12)) for _ in range(30)]
    whole = "".join(pieces)
    assert len(whole) > 256 and all(len(p) < 256 for p in pieces)
    assert _paths([whole]) == _paths(pieces)
    assert "src/app.py" in _paths([whole * 3])


@pytest.mark.parametrize(
    ("text", "want"),
    [
        ("Please do\t\tnot touch the\nfixtures at all, thanks.", "Please do not touch the"),
        ("- Use  pnpm,   and then,\tnot npm for installs here.", "Use pnpm, and then, not npm for installs here"),
        ("/ask why is it slow? You must keep the public API stable.", "You must keep the public API stable"),
        ("Nothing here is a rule, it is a plain question about speed.", None),
    ],
)
def test_constraints_are_found_whatever_the_whitespace_between_their_words(text: str, want: str | None) -> None:
    found = [p.text for p in extract([{"role": "user", "content": text}], kinds=("constraint",))]
    assert found == ([want] if want else [])


def test_extract_of_some_kinds_is_the_full_extract_of_those_kinds() -> None:
    rng = random.Random(3)
    messages = [
        {"role": "user", "content": _text(rng, 80) + " Never push to main; see https://x.io/a and ABC-12."},
        {
            "role": "assistant",
            "content": "Running it.",
            "tool_calls": [{"id": "1", "name": "bash", "arguments": '{"command": "pytest tests/test_a.py::test_b"}'}],
        },
        {"role": "tool", "tool_call_id": "1", "content": "KeyError: 'x'\nE0502 in src/lib.rs"},
    ]
    every = extract(messages)
    assert {p.kind for p in every} >= {"latest_ask", "user_path", "identifier", "constraint", "exception", "test"}
    for kinds in [("user_path",), ("latest_ask", "exception"), ("artifact", "call_path"), KINDS, ()]:
        assert extract(messages, kinds=kinds) == [p for p in every if p.kind in kinds]


def test_fold_and_found_in_compare_whitespace_folded_and_json_escaped() -> None:
    assert fold("  a \t b\n\nc  ") == "a b c"
    probe = extract([{"role": "user", "content": 'Edit "src/a b.py" please'}], kinds=("user_message",))[0]
    assert found_in(probe, fold('x Edit "src/a\n b.py" please y'))
    assert found_whole(probe, 'Edit \\"src/a b.py\\" please')
    assert not found_whole(probe, "Edit src/a b.py please")
