"""A LoadSkill listing named a symlink to a file as a plain file, and told a symlink to a
directory by following it (a stat of its target, out of the skill's root too). Every symlink in a
skill is now listed as one, with the path it holds, and never followed."""

from __future__ import annotations

import os
from pathlib import Path

from agentcontext.compiler.skills import discover_skills


def _skill(tmp_path: Path) -> Path:
    skills = tmp_path / "skills"
    (skills / "pdf" / "scripts").mkdir(parents=True)
    (skills / "pdf" / "SKILL.md").write_text("---\nname: pdf\ndescription: Fill PDF forms.\n---\nRun it.\n")
    (skills / "pdf" / "scripts" / "fill.py").write_text("print('fill')\n")
    outside = tmp_path / "outside"
    (outside / "dir").mkdir(parents=True)
    (outside / "secret.txt").write_text("secret\n")
    os.symlink(str(outside / "secret.txt"), skills / "pdf" / "notes.txt")  # a file out of the root
    os.symlink(str(outside / "dir"), skills / "pdf" / "shared")  # a directory out of the root
    os.symlink("scripts/fill.py", skills / "pdf" / "fill.py")  # a file in the skill
    os.symlink("missing", skills / "pdf" / "scripts" / "gone")  # dangling
    return skills


def test_every_symlink_is_listed_as_one(tmp_path: Path) -> None:
    loaded = discover_skills([_skill(tmp_path)]).load("pdf")
    outside = tmp_path / "outside"
    assert f"- notes.txt -> {outside / 'secret.txt'} (a symlink, not followed)" in loaded
    assert f"- shared -> {outside / 'dir'} (a symlink, not followed)" in loaded
    assert "- fill.py -> scripts/fill.py (a symlink, not followed)" in loaded
    assert "- scripts/gone -> missing (a symlink, not followed)" in loaded
    assert "- scripts/fill.py\n" in loaded
    assert "secret\n" not in loaded
