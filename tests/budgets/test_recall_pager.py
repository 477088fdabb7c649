"""The recall tool pages through the core's pager: the same pages the Python pager gave."""

from __future__ import annotations

import random
from collections.abc import Iterable

import pytest

from agentcontext.budgets import RecallPage
from agentcontext.budgets.recall import _page
from agentcontext.errors import OptionError


def _python_page(pieces: Iterable[str], offset: int, lines: int, char_offset: int | None, max_chars: int) -> RecallPage:
    """The Python pager recall used before the core's (kept as the reference)."""
    n = newlines = 0  # chars and line breaks seen
    ends_with_newline = False
    # Line mode: the page starts after line break offset - 1 (found while reading); char mode: at char_offset.
    start: int | None = 0 if char_offset is None and offset == 1 else char_offset
    before = 0  # line breaks before start
    kept: list[str] = []  # text[start:start + max_chars]
    room = max_chars
    for piece in pieces:
        if not piece:
            continue
        size = len(piece)
        if start is None:
            need = offset - 1 - newlines
            if piece.count("\n") >= need:
                at = -1
                for _ in range(need):
                    at = piece.index("\n", at + 1)
                start, before = n + at + 1, offset - 1
        elif char_offset is not None and start > n:
            before += piece.count("\n", 0, start - n)
        if start is not None and room and n + size > start:
            lo = max(0, start - n)
            take = piece[lo : lo + room]
            kept.append(take)
            room -= len(take)
        newlines += piece.count("\n")
        n += size
        ends_with_newline = piece.endswith("\n")
    # A final line break ends the last line; it does not start another.
    total_lines = max(1, newlines + (0 if ends_with_newline else 1))
    head = "".join(kept)
    if char_offset is None:
        if offset > total_lines or start is None:
            raise OptionError(f"offset {offset} is past the end (the text has {total_lines:,} lines)")
        at = -1
        for _ in range(lines):
            at = head.find("\n", at + 1)
            if at < 0:
                break
        if at >= 0:
            stop = start + at + 1
        elif start + len(head) == n:
            stop = n
        else:
            # Never more than max_chars: end at the last line break that fits, or mid-line.
            nl = head.rfind("\n", 0, max_chars)
            stop = start + nl + 1 if nl >= 0 else start + max_chars
    else:
        if char_offset > n or (char_offset == n and n > 0):
            raise OptionError(f"char_offset {char_offset:,} is past the end (the text has {n:,} chars)")
        start = char_offset
        stop = min(n, start + max_chars)
    text = head[: stop - start]
    first = before + 1
    last = first + text.count("\n", 0, max(0, len(text) - 1))
    hint = None
    if stop < n:
        if text.endswith("\n"):
            hint = f"[Showing lines {first}-{last} of {total_lines}. Use offset={last + 1} to continue.]"
        else:
            hint = f"[Showing chars {start}-{stop} of {n} (line {last} of {total_lines}). Use char_offset={stop} to continue.]"
    return RecallPage(text, start, stop, n, first, last, total_lines, hint)


def _pieces(text: str, rng: random.Random) -> list[str]:
    out, at = [], 0
    while at < len(text):
        step = rng.randint(0, 9)
        out.append(text[at : at + step])
        at += step
    return out


def _outcome(page: object, *args: object) -> RecallPage | str:
    try:
        return page(*args)  # type: ignore[operator,no-any-return]
    except OptionError as exc:
        return f"OptionError: {exc}"


def test_pages_like_the_python_pager_over_generated_texts_and_splits() -> None:
    rng = random.Random(9)
    alphabet = ["a", "b", "\n", "é", "漢", " ", "\n", "😀"]
    for _ in range(1500):
        text = "".join(rng.choice(alphabet) for _ in range(rng.randint(0, 90)))
        offset, lines, max_chars = rng.randint(1, 12), rng.randint(1, 6), rng.randint(1, 40)
        char_offset = rng.choice([None, rng.randint(0, len(text) + 1)])
        want = _outcome(_python_page, (text,), offset, lines, char_offset, max_chars)
        assert _outcome(_page, text, offset, lines, char_offset, max_chars) == want
        split = _pieces(text, rng)
        assert _outcome(_page, iter(split), offset, lines, char_offset, max_chars) == want, (text, split)


def test_large_counts_in_messages_are_grouped() -> None:
    with pytest.raises(OptionError, match=r"char_offset 12,345 is past the end \(the text has 1,000 chars\)"):
        _page("x" * 1000, 1, 500, 12_345, 20_000)
    with pytest.raises(OptionError, match=r"offset 3 is past the end \(the text has 2 lines\)"):
        _page("a\nb", 3, 500, None, 20_000)


def test_a_piece_that_is_not_text_is_refused() -> None:
    with pytest.raises(TypeError):
        _page(iter(["a", b"b"]), 1, 500, None, 20_000)  # type: ignore[list-item]


def test_store_and_recall_import_without_a_cycle() -> None:
    import ast
    import inspect

    from agentcontext.budgets import recall

    tree = ast.parse(inspect.getsource(recall))
    imported = {node.module for node in ast.walk(tree) if isinstance(node, ast.ImportFrom) and node.module is not None}
    assert "agentcontext.budgets.store" not in imported
