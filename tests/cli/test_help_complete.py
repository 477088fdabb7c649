"""Every command's --help is complete: a description, every argument explained, and the exit
statuses; the version is the package's."""

from __future__ import annotations

import argparse
import subprocess
import sys

import pytest

import agentcontext
from agentcontext.cli import _build_parser


def _parsers(parser: argparse.ArgumentParser, name: str) -> list[tuple[str, argparse.ArgumentParser]]:
    found = [(name, parser)]
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for sub_name, sub in action.choices.items():
                found += _parsers(sub, f"{name} {sub_name}")
    return found


PARSERS = _parsers(_build_parser(), "agentcontext")


def test_every_command_is_there() -> None:
    names = {name for name, _ in PARSERS}
    for command in ("inspect", "compact", "eval", "memory index", "memory search", "search", "prompt"):
        assert f"agentcontext {command}" in names
    assert {"agentcontext sessions list", "agentcontext sessions show"} <= names


@pytest.mark.parametrize(("name", "parser"), PARSERS, ids=[n for n, _ in PARSERS])
def test_help_is_complete(name: str, parser: argparse.ArgumentParser) -> None:
    assert parser.description, f"{name} has no description"
    text = parser.format_help()
    assert "exit status:" in text and "  2  bad input" in text, f"{name} --help does not give the exit statuses"
    for action in parser._actions:
        if not isinstance(action, argparse._SubParsersAction):
            assert action.help, f"{name}: {action.dest} has no help"


def test_version() -> None:
    done = subprocess.run(
        [sys.executable, "-m", "agentcontext", "--version"], capture_output=True, text=True, check=True
    )
    assert done.stdout.strip() == f"agentcontext {agentcontext.__version__}"
