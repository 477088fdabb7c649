"""MkDocs hooks: the command-line reference is generated from the parser itself, so every command,
flag and exit status in the docs is the one the installed CLI has; and the Sphinx roles the
docstrings use (``:class:`~agentcontext.Session```) render as the code they name."""

from __future__ import annotations

import argparse
import os
import re
from typing import Any

MARKER = "<!-- cli-reference -->"

# A Sphinx role as Markdown renders it: the role's name as text, then its target as code. A leading
# ``~`` shows only the target's last component, as Sphinx does.
_ROLE = re.compile(r":(?:py:)?(?:class|func|meth|attr|mod|exc|data|obj|const):<code>(~?)([^<]*)</code>")


def _parsers(parser: argparse.ArgumentParser, name: str) -> list[tuple[str, argparse.ArgumentParser]]:
    """``parser`` and every subcommand's parser under it, depth first, with their command lines."""
    found = [(name, parser)]
    for action in parser._actions:  # argparse keeps subparsers only here
        if isinstance(action, argparse._SubParsersAction):
            for sub_name, sub in action.choices.items():
                found += _parsers(sub, f"{name} {sub_name}")
    return found


def cli_reference() -> str:
    """Every command's ``--help``, as markdown sections."""
    from agentcontext.cli import _build_parser

    os.environ["COLUMNS"] = "100"  # argparse wraps to the terminal: one width for the docs
    parts = []
    for name, parser in _parsers(_build_parser(), "agentcontext"):
        parts.append(f"### `{name}`\n\n```text\n{parser.format_help().rstrip()}\n```\n")
    return "\n".join(parts)


def on_page_markdown(markdown: str, **kwargs: Any) -> str:
    if MARKER in markdown:
        return markdown.replace(MARKER, cli_reference())
    return markdown


def _role_as_code(match: re.Match[str]) -> str:
    short, target = match.groups()
    return f"<code>{target.rsplit('.', 1)[-1] if short else target}</code>"


def on_page_content(html: str, **kwargs: Any) -> str:
    return _ROLE.sub(_role_as_code, html)
