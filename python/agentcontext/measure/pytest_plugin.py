"""The ``agentcontext`` pytest plugin: fixtures and a marker to run tests over transcript files.

Installed with the package and loaded by pytest automatically (``-p no:agentcontext`` turns it
off). It is inert unless a test uses it: loading it imports nothing of the library beyond the
package itself, and adds no option, header or hook work to other tests.

The marker ``ac_transcripts(*paths, strategies=None, pattern=None)`` runs a test that takes the
``ac_transcript`` fixture once per conversation in ``paths`` (files, or folders searched
recursively for ``.jsonl``, ``.json``, ``.traj`` and ``.md`` transcripts in any format
:func:`agentcontext.importers.load` reads; relative paths are relative to the test file's
folder; ``pattern`` is a glob on the file names found in folders). The test ids are the
transcript names. With ``strategies``, a test that also takes ``ac_strategy`` runs once per
transcript and strategy::

    import pytest
    from agentcontext.measure.testing import assert_fits, assert_retains, assert_valid

    @pytest.mark.ac_transcripts("transcripts", strategies=["openharness", "pi"])
    def test_compaction(ac_transcript, ac_strategy, ac_compact):
        result = ac_compact(ac_transcript, ac_strategy, budget="50%")
        assert_valid(result)
        assert_fits(result)
        assert_retains(result, kinds=["path", "exception"], min_share=0.8)

Fixtures: ``ac_transcript`` (the :class:`~agentcontext.Conversation`, a fresh copy per test),
``ac_strategy`` (the strategy name; ``"openharness"`` without ``strategies``), ``ac_load``
(``ac_load(path, session=None)``, :func:`agentcontext.importers.load` with paths relative to
the test file), ``ac_compact`` (``ac_compact(conv, strategy="openharness", budget="50%")`` ->
:class:`~agentcontext.CompactionResult`, offline summarizer) and ``ac_evaluate``
(``ac_evaluate(conv, strategy="openharness", budget="50%")`` ->
:class:`~agentcontext.measure.metrics.Evaluation`). The assertion helpers are in
:mod:`agentcontext.measure.testing`.
"""

from __future__ import annotations

import fnmatch
import os
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

if TYPE_CHECKING:
    from agentcontext._core import Conversation
    from agentcontext.compaction import CompactionPolicy, CompactionResult
    from agentcontext.measure.metrics import Evaluation

__all__ = ["ac_compact", "ac_evaluate", "ac_load", "ac_strategy", "ac_transcript"]

MARKER = "ac_transcripts"
DEFAULT_STRATEGY = "openharness"
DEFAULT_BUDGET = "50%"

# No pytest.register_assert_rewrite("agentcontext.measure.testing") here: pytest already marks the whole
# package of a distribution with a pytest11 entry point for assertion rewriting, and the helpers
# raise AssertionError with their own messages anyway.


@dataclass(frozen=True)
class TranscriptParam:
    """One conversation of a transcript file: the ``index``-th of the file (-1: the file is one
    conversation in a library format), named ``name``."""

    path: str
    index: int
    name: str

    def load(self) -> Conversation:
        from agentcontext.importers import load

        # Cached (a copy each time): the parsed file is shared by the tests of every strategy.
        return load(self.path, session=None if self.index < 0 else self.index, cache=True)


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers",
        f"{MARKER}(*paths, strategies=None, pattern=None): run a test that takes the ac_transcript fixture once "
        "per conversation in paths (transcript files or folders, relative to the test file; pattern: a glob on "
        "file names), and, with strategies, once per strategy for a test that takes ac_strategy "
        "(agentcontext plugin).",
    )


class _MarkerError(Exception):
    """A marker whose transcripts cannot be had (missing path, unreadable file, bad arguments)."""


@dataclass(frozen=True)
class _Unavailable:
    """The one parameter of a test whose marker failed: the test fails with ``message`` when it
    runs, and only then, so the other tests of its file (and ``-k`` runs without it) are unaffected."""

    message: str


def _collect_error(where: str, message: str) -> _MarkerError:
    return _MarkerError(f"{where}: @pytest.mark.{MARKER}: {message}")


def _find(paths: list[Path], pattern: str | None, where: str) -> list[TranscriptParam]:
    from agentcontext.errors import AgentContextError
    from agentcontext.measure.evaluation import SUFFIXES, discover

    missing = [str(p) for p in paths if not p.exists()]
    if missing:
        raise _collect_error(where, f"no such file or folder: {', '.join(missing)}")
    try:
        found = discover(paths)
    except AgentContextError as exc:
        raise _collect_error(where, f"cannot read a transcript: {exc}") from None
    if pattern is not None:
        named = {str(p) for p in paths if not p.is_dir()}
        found = [f for f in found if f[0] in named or fnmatch.fnmatch(Path(f[0]).name, pattern)]
    if not found:
        also = f" matching {pattern!r}" if pattern is not None else ""
        raise _collect_error(
            where, f"no transcripts{also} in {', '.join(map(str, paths))} (looked for {', '.join(SUFFIXES)} files)"
        )
    return [TranscriptParam(path, index, name) for path, index, name in found]


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    if "ac_transcript" not in metafunc.fixturenames:
        return
    marker = metafunc.definition.get_closest_marker(MARKER)
    if marker is None:
        return  # the fixture explains the marker when the test runs (unless it is parametrized otherwise)
    try:
        _parametrize(metafunc, marker)
    except _MarkerError as exc:
        metafunc.parametrize("ac_transcript", [_Unavailable(str(exc))], indirect=True, ids=["transcripts-unavailable"])


def _parametrize(metafunc: pytest.Metafunc, marker: pytest.Mark) -> None:
    where = metafunc.definition.nodeid
    unknown = sorted(set(marker.kwargs) - {"strategies", "pattern"})
    if unknown:
        raise _collect_error(where, f"unknown arguments {unknown} (expected strategies= and pattern=)")
    if not marker.args:
        raise _collect_error(where, "give at least one transcript file or folder")
    if not all(isinstance(a, (str, os.PathLike)) for a in marker.args):
        raise _collect_error(where, f"paths must be strings or os.PathLike, got {marker.args!r}")
    pattern = marker.kwargs.get("pattern")
    if pattern is not None and not isinstance(pattern, str):
        raise _collect_error(where, f"pattern must be a glob string, got {pattern!r}")
    strategies = marker.kwargs.get("strategies")
    if isinstance(strategies, str):
        strategies = [strategies]
    if strategies is not None:
        from agentcontext.compaction import PRESETS

        strategies = list(strategies)
        bad = [s for s in strategies if s not in PRESETS]
        if bad or not strategies:
            raise _collect_error(where, f"unknown strategies {bad} (expected some of: {', '.join(PRESETS)})")
    base = Path(metafunc.definition.path).parent
    paths = [base / Path(os.path.expanduser(os.fspath(a))) for a in marker.args]
    params = _find(paths, pattern, where)
    metafunc.parametrize("ac_transcript", params, indirect=True, ids=[p.name for p in params])
    if strategies is not None and "ac_strategy" in metafunc.fixturenames:
        metafunc.parametrize("ac_strategy", strategies, indirect=True, ids=strategies)


@pytest.fixture
def ac_transcript(request: pytest.FixtureRequest) -> Conversation:
    """The conversation this test runs on, from the ``ac_transcripts`` marker (a fresh copy)."""
    param = getattr(request, "param", None)
    if param is None:
        pytest.fail(
            f"{request.node.nodeid} uses the ac_transcript fixture but has no @pytest.mark.{MARKER}(...) marker: "
            f'mark it (or its class or module) with @pytest.mark.{MARKER}("path/to/transcripts") to run it once '
            "per conversation in those files or folders",
            pytrace=False,
        )
    if isinstance(param, TranscriptParam):
        return param.load()
    if isinstance(param, _Unavailable):
        pytest.fail(param.message, pytrace=False)
    from agentcontext._core import Conversation

    if isinstance(param, Conversation):
        return param.slice(0)
    if isinstance(param, (str, os.PathLike)):
        return _loader(request)(param)
    from agentcontext.errors import ArgumentTypeError

    raise ArgumentTypeError(
        f"ac_transcript parameters are transcript paths or Conversations, got {type(param).__name__}"
    )


@pytest.fixture
def ac_strategy(request: pytest.FixtureRequest) -> str:
    """The compaction strategy of this test: one of the marker's ``strategies`` (default ``"openharness"``)."""
    return str(getattr(request, "param", DEFAULT_STRATEGY))


def _loader(request: pytest.FixtureRequest) -> Callable[..., Conversation]:
    base = Path(request.node.path).parent

    def load(path: str | os.PathLike[str], session: str | int | None = None) -> Conversation:
        from agentcontext.importers import load as load_file

        return load_file(base / Path(os.path.expanduser(os.fspath(path))), session=session)

    return load


@pytest.fixture
def ac_load(request: pytest.FixtureRequest) -> Callable[..., Conversation]:
    """``ac_load(path, session=None)``: one conversation from a transcript file in any format
    (:func:`agentcontext.importers.load`); a relative path is relative to the test file's folder."""
    return _loader(request)


@pytest.fixture
def ac_compact() -> Callable[..., CompactionResult]:
    """``ac_compact(conv, strategy="openharness", budget="50%")``: compact ``conv`` under a budget
    in tokens or a share of its tokens, with the offline summarizer and no environment overrides."""

    def compact(
        conv: Conversation, strategy: str | CompactionPolicy = DEFAULT_STRATEGY, budget: str | int = DEFAULT_BUDGET
    ) -> CompactionResult:
        from agentcontext.compaction import Compactor, parse_budget

        return Compactor(strategy, environ={}).compact(conv, budget=parse_budget(budget, conv.tokens))

    return compact


@pytest.fixture
def ac_evaluate(request: pytest.FixtureRequest) -> Callable[..., Evaluation]:
    """``ac_evaluate(conv, strategy="openharness", budget="50%", name=<test id>)``: every measure of
    one strategy on ``conv`` (:func:`agentcontext.measure.metrics.evaluate`, offline)."""
    default_name = getattr(getattr(request.node, "callspec", None), "id", "") or request.node.name

    def evaluate(
        conv: Conversation,
        strategy: str | CompactionPolicy = DEFAULT_STRATEGY,
        budget: str | int = DEFAULT_BUDGET,
        *,
        name: str | None = None,
        **kwargs: Any,
    ) -> Evaluation:
        from agentcontext.measure.metrics import evaluate as run

        return run(conv, strategy, budget, name=default_name if name is None else name, **kwargs)

    return evaluate
