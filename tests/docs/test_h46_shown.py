"""What the docs show matches what the code does (session 46; each test failed before its fix):
the command-line synopsis names every option, and outputs shown in comments are what is printed."""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from agentcontext.cli import _build_parser
from tests import support
from tests.docs.test_pages import KEYS, blocks_of


def test_the_cli_synopsis_names_every_option_of_every_command() -> None:
    """The synopsis lacked inspect's --by-source/--window/--max-output-tokens/--strategy, eval's
    --workers/--markdown/--schedule/--progress and prompt's --names/--style/--no-git."""

    page = (support.ROOT / "docs" / "reference" / "cli.md").read_text(encoding="utf-8")
    synopsis = page.split("```text\n", 1)[1].split("```", 1)[0]
    lines: dict[str, str] = {}
    for line in synopsis.splitlines():
        if line.startswith("agentcontext "):
            words = line.split()
            key = " ".join(words[1:3]) if words[1] in ("memory", "sessions") else words[1]
            lines[key] = line
        elif key_last := list(lines)[-1] if lines else None:
            lines[key_last] += " " + line.strip()
    missing = []
    for action in _build_parser()._actions:
        if not isinstance(action, argparse._SubParsersAction):
            continue
        for name, sub in action.choices.items():
            subs = [a for a in sub._actions if isinstance(a, argparse._SubParsersAction)]
            commands = [(f"{name} {n}", p) for a in subs for n, p in a.choices.items()] or [(name, sub)]
            for command, parser in commands:
                text = lines.get(command, "")
                for option in (o for a in parser._actions for o in a.option_strings if o.startswith("--")):
                    if option != "--help" and not re.search(rf"(?<![\w-]){re.escape(option)}(?![\w-])", text):
                        missing.append(f"{command} {option}")
    assert missing == []


# -- printed outputs the docs show in a comment: ladder.md said 11413/3013/292, evaluate.md 11 -----

#: ``print(...)  # what it prints``: the comment is the printed line, ``...`` standing for any text
#: and ``: why`` after it allowed. Comments that describe rather than show are on other pages.
SHOWN = re.compile(r"^(\s*)print\((.*)\)  # (.*)$")
OUTPUT_PAGES = [
    "concepts/ladder.md",
    "concepts/surgery.md",
    "concepts/tool-results.md",
    "get-started/tour.md",
    "how-to/evaluate.md",
    "how-to/subagents.md",
]


def _claimed(comment: str, printed: str) -> bool:
    heads = [comment] + [comment[: m.start()] for m in re.finditer(": ", comment)]
    return any(
        re.fullmatch(".*".join(re.escape(part.strip()) for part in head.split("...")), printed, re.DOTALL)
        for head in heads
    )


@pytest.mark.parametrize("page", OUTPUT_PAGES)
def test_the_outputs_a_page_shows_are_what_its_code_prints(page: str, tmp_path: Path) -> None:

    lines = []
    for line in "\n\n".join(blocks_of((support.ROOT / "docs" / page).read_text(encoding="utf-8"))).split("\n"):
        m = SHOWN.match(line)
        if m is None:
            lines.append(line)
            continue
        indent, args, comment = m.groups()
        lines += [
            f"{indent}import contextlib as _cl, io as _io, json as _json, sys as _sys",
            f"{indent}_out = _io.StringIO()",
            f"{indent}with _cl.redirect_stdout(_out): print({args})",
            f"{indent}_sys.stderr.write('SHOWN ' + _json.dumps([{comment!r}, _out.getvalue().strip()]) + '\\n')",
        ]
    script = tmp_path / "page.py"
    script.write_text("\n".join(lines), encoding="utf-8")
    env = {k: v for k, v in os.environ.items() if k not in KEYS} | {"MPLBACKEND": "Agg"}
    done = subprocess.run(
        [sys.executable, str(script)],
        cwd=support.ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    shown = [json.loads(line[6:]) for line in done.stderr.splitlines() if line.startswith("SHOWN ")]
    assert shown, f"docs/{page} shows no output in a comment"
    wrong = [f"comment {c!r}, printed {p!r}" for c, p in shown if not _claimed(c, p)]
    assert wrong == []
