"""The summary fit's faster paths give what the plain ones give (issue #27: ladder time). The fit
itself is the core's now (``tests/compaction/test_fit_core.py``); these hold its Python reference."""

from __future__ import annotations

import random

from agentcontext.compaction.summarize import _WORD_BREAK
from agentcontext.compaction.summary_text import head_tail, one_line
from agentcontext.probes import _PATH, _path_matches
from tests.compaction.reference_fit import _Fitter

_ALPHABET = ["a", "b", "é", "1", ".", ":", ";", "!", "?", " ", "\n", "\u00a0", '"', "'", "`", "(", ")", "[", "]", "{", "}", "<", ">", ",", "-", "/"]  # fmt: skip


def _words(texts: list[str]) -> set[str]:
    """Every word of the texts and each less its trailing ".:;!?" (the fit's rule, split whole)."""
    out: set[str] = set()
    for text in texts:
        words = _WORD_BREAK.split(text)
        out.update(words)
        out.update(w.rstrip(".:;!?") for w in words if w.endswith((".", ":", ";", "!", "?")))
    return out


def test_says_finds_a_fact_exactly_when_it_is_a_word_said() -> None:
    rng = random.Random(27)
    for _ in range(600):
        fit = _Fitter({}, "o200k_base")
        said: list[str] = []
        for _ in range(rng.randint(1, 4)):
            text = "".join(rng.choice(_ALPHABET) for _ in range(rng.randint(0, 10)))
            fit.say(text)
            said.append(text)
            words = _words(said)
            for _ in range(5):
                fact = "".join(rng.choice(_ALPHABET[:7]) for _ in range(rng.randint(0, 3)))
                assert fit.says(fact) == (fact in words), (said, fact)


def test_says_reads_a_long_summary_by_its_words() -> None:
    fit = _Fitter({}, "o200k_base")
    fit.say("- read src/app.py, then (tests/test_app.py).")
    fit.say("- ran `pytest -x`: ok!")
    assert fit.says("src/app.py") and fit.says("tests/test_app.py") and fit.says("ok")
    assert not fit.says("app.py") and not fit.says("src/app") and not fit.says("pytest -x")
    assert fit.says("tests/test_app.py).") is False  # a break inside: no word


def _folded(text: str) -> str:
    return " ".join(text.split())


def test_one_line_and_head_tail_cut_a_long_text_as_the_folded_whole() -> None:
    rng = random.Random(32)
    pieces = ["a", "bc", " ", "  ", "\n", "\t", "\u00a0", "é", " \n "]
    for _ in range(1000):
        text = "".join(rng.choice(pieces) for _ in range(rng.randint(0, 300)))
        limit = rng.randint(-2, 90)
        line = _folded(text)
        assert one_line(text, limit) == (line if len(line) <= limit else line[: limit - 1] + "…")
        head = limit * 2 // 3
        tail = limit - head - 5
        expected = line if len(line) <= limit else f"{line[:head]} [...] {line[-tail:]}"
        assert head_tail(text, limit) == expected


def test_paths_are_found_word_by_word_as_in_the_whole_text() -> None:
    rng = random.Random(7)
    pieces = ["a", "_", "-", ".", "/", "~", "@", ":", " ", "\n", "py", "rs", "src", "é"]
    for _ in range(1000):
        text = "".join(rng.choice(pieces) for _ in range(rng.randint(0, 30)))
        assert [m.group(0) for m in _path_matches(text)] == [m.group(0) for m in _PATH.finditer(text)]
