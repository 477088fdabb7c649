"""LoadSkill lists a skill's files only inside the skills directory, even when a directory is
swapped for a symlink out between a check and its read (h46). Before, the skill directory was
checked by its path and then walked by the same path (``os.walk``), and each subdirectory was
checked (``islink``) and then read by its path: a swap in between listed the names of files
outside. Now the directory is opened without following a symlink and checked after the open
(``opened_inside``), and each subdirectory is opened from its parent's descriptor with
``O_NOFOLLOW``."""

from __future__ import annotations

import os
import shutil
import time
from pathlib import Path
from typing import Any

import pytest

import agentcontext.compiler.skills as skills_module
from agentcontext.compiler import discover_skills

pytestmark = pytest.mark.skipif(not hasattr(os, "O_NOFOLLOW"), reason="POSIX descriptors")


def _write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return path


def _skill(tmp_path: Path) -> tuple[Path, Path]:
    """A skills directory with one skill, ``good`` (a file and a subdirectory with a file), and a
    directory outside it whose file names must never be listed."""
    skills = tmp_path / "skills"
    _write(skills / "good" / "SKILL.md", "---\nname: good\ndescription: the good skill\n---\nbody\n")
    _write(skills / "good" / "notes.txt", "x")
    _write(skills / "good" / "sub" / "inner.txt", "x")
    elsewhere = tmp_path / "elsewhere"
    _write(elsewhere / "private-file-name.txt", "x")
    _write(elsewhere / "SKILL.md", "---\nname: good\ndescription: stolen\n---\nstolen\n")
    return skills, elsewhere


def _swap(directory: Path, target: Path) -> None:
    """``directory`` replaced by a symlink to ``target``."""
    shutil.rmtree(directory)
    os.symlink(str(target), directory)


def test_the_listing_is_whole_before_any_swap(tmp_path: Path) -> None:
    skills, _ = _skill(tmp_path)
    answer = discover_skills([skills]).load("good")
    assert answer.endswith(f"- notes.txt\n- sub{os.sep}inner.txt\n"), answer


def test_a_skill_directory_swapped_after_its_check_lists_nothing_outside(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    skills, elsewhere = _skill(tmp_path)
    found = discover_skills([skills])
    checked = skills_module.outside_reason

    def check_then_swap(*args: Any) -> str | None:
        why = checked(*args)
        if Path(args[0]) == skills / "good" and not (skills / "good").is_symlink():
            _swap(skills / "good", elsewhere)  # right after the check passed
        return why

    monkeypatch.setattr(skills_module, "outside_reason", check_then_swap)
    answer = found.load("good")
    assert "body" in answer  # read before the swap, through the safe read
    assert "private-file-name" not in answer and "Files in this skill" not in answer, answer


def test_a_subdirectory_swapped_before_it_is_read_is_not_followed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    skills, elsewhere = _skill(tmp_path)
    found = discover_skills([skills])
    sub = skills / "good" / "sub"
    real_scandir, real_open = os.scandir, os.open

    def swap_once() -> None:
        if not sub.is_symlink():
            _swap(sub, elsewhere)

    def scandir(path: Any = ".") -> Any:
        if isinstance(path, str | os.PathLike) and Path(path) == sub:
            swap_once()  # after the walk's check that it is no symlink, before it is read
        return real_scandir(path)

    def open_(path: Any, flags: int, mode: int = 0o777, *, dir_fd: int | None = None) -> int:
        if dir_fd is not None and path == "sub":
            swap_once()  # right before the subdirectory is opened
        return real_open(path, flags, mode, dir_fd=dir_fd)

    monkeypatch.setattr(os, "scandir", scandir)
    monkeypatch.setattr(os, "open", open_)
    answer = found.load("good")
    assert sub.is_symlink()  # the swap happened
    assert "private-file-name" not in answer and "notes.txt" in answer, answer


def test_fifos_deep_trees_and_huge_directories_are_listed_within_bounds(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    skills, _ = _skill(tmp_path)
    good = skills / "good"
    os.mkfifo(good / "pipe")  # listed by name, never opened
    deep = good / "sub"
    for k in range(40):
        deep = deep / f"d{k}"
    _write(deep / "bottom.txt", "x")
    started = time.perf_counter()
    answer = discover_skills([skills]).load("good")
    assert time.perf_counter() - started < 10
    assert answer.endswith(f"- notes.txt\n- pipe\n- sub{os.sep}inner.txt\n"), answer  # not past the depth cap
    for k in range(60):
        _write(good / "many" / f"f{k:02}.txt", "x")
    answer = discover_skills([skills]).load("good")
    listed = [line for line in answer.splitlines() if line.startswith("- ")]
    assert len(listed) == 51 and listed[-1] == "- ... (more files not listed)", listed
    # Entries read are capped too: a huge directory is not read whole.
    monkeypatch.setattr(skills_module, "MAX_SCANNED_ENTRIES", 5)
    capped = discover_skills([skills]).load("good")
    assert capped.endswith("- ... (more files not listed)\n") and "f59" not in capped, capped


def test_a_skill_directory_that_is_a_symlink_inside_is_listed(tmp_path: Path) -> None:
    skills, _ = _skill(tmp_path)
    os.symlink("good", skills / "alias")
    found = discover_skills([skills])
    skill = found.get("good")
    assert skill is not None
    answer = found.load("good")
    assert "- notes.txt\n" in answer
