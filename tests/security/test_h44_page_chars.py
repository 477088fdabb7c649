"""The recall pager refuses what is not text with a typed error naming it."""

from __future__ import annotations

import pytest

from agentcontext._core import page_chars
from agentcontext.errors import AgentContextError, ArgumentTypeError, OptionError


@pytest.mark.parametrize("pieces", ["a\ud800b", ["ok\n", "a\ud800b"]])
def test_a_lone_surrogate_is_an_option_error_naming_pieces(pieces: object) -> None:
    """It was a bare UnicodeEncodeError out of the core."""
    with pytest.raises(OptionError, match="pieces is not valid Unicode"):
        page_chars(pieces)  # type: ignore[arg-type]


@pytest.mark.parametrize("pieces", [3, ["ok", 3], [b"bytes"]])
def test_a_piece_that_is_not_a_str_is_an_argument_type_error(pieces: object) -> None:
    """It was a bare TypeError (or DowncastError's TypeError) out of the core."""
    with pytest.raises(ArgumentTypeError, match="pieces"):
        page_chars(pieces)  # type: ignore[arg-type]
    assert issubclass(ArgumentTypeError, AgentContextError)
