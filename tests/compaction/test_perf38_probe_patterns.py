"""The constraint patterns' ASCII fast path (`probes._matches`) finds a match exactly when the
case-insensitive pattern does: on random ASCII text, on text with the patterns' words in any
case, and on text with the characters that case-fold into ASCII letters (which take the plain
path)."""

from __future__ import annotations

import re

from hypothesis import given, settings
from hypothesis import strategies as st

from agentcontext import probes

WORDS = ["never", "Don't", "DON\u2019T", "do not", "MUST", "mustn't", "Always", "avoiding", "only", "Instead",
         "rather than", "shouldn't", "should not", "No need to", "not allowed", "use", "NOT", "donut", "nevermind",
         "\u017fhould", "\u212aeep", "İnstead", "x", "_only", "only_", "9use"]  # fmt: skip

PAIRS = [
    (probes._CONSTRAINT, probes._CONSTRAINT_LOWER),
    (probes._CONSTRAINT_HINT, probes._CONSTRAINT_HINT_LOWER),
]

texts = st.one_of(
    st.text(alphabet=st.characters(max_codepoint=127), max_size=120),
    st.lists(
        st.one_of(st.sampled_from(WORDS), st.sampled_from([" ", "\n", ".", "-", "'", "é", "\t"])), max_size=30
    ).map("".join),
)


@settings(max_examples=600, deadline=None)
@given(texts)
def test_the_fast_path_matches_like_the_pattern(text: str) -> None:
    for pattern, lower in PAIRS:
        assert pattern.flags & re.IGNORECASE
        assert probes._matches(pattern, lower, text) == (pattern.search(text) is not None), text


def test_characters_that_fold_into_ascii_take_the_plain_path() -> None:
    # The long s and the Kelvin sign match "s" and "k" ignoring case; the text is not ASCII.
    assert probes._matches(probes._CONSTRAINT, probes._CONSTRAINT_LOWER, "you \u017fhould not do that")
    assert probes._matches(probes._CONSTRAINT_HINT, probes._CONSTRAINT_HINT_LOWER, "ALWAYS \u017fhould")
    assert not probes._matches(probes._CONSTRAINT_HINT, probes._CONSTRAINT_HINT_LOWER, "the cat sat on a mat")
    assert list(probes._constraints("Please NEVER push to main. Thanks")) == ["Please NEVER push to main."]
