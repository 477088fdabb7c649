"""Skills: directories holding a ``SKILL.md`` with front matter (``name``, ``description``,
optionally ``allowed-tools``), shown to the model as a catalog of one line each; the body is a
tool result of ``LoadSkill(name)``, never part of the system prompt.

A skills directory is scanned one level deep: ``DIR/<skill>/SKILL.md`` (and ``DIR/SKILL.md`` when
``DIR`` is itself a skill). Only files whose real path lies inside ``DIR`` (as named by the caller,
its own symlinks resolved) are read: a skill directory or a ``SKILL.md`` that is a symlink leading
out of it is not loaded. A file with bad front matter, a name taken by an earlier skill, a special
file, a symlink loop or a symlink out of ``DIR`` is reported in :attr:`Skills.problems` (file and
reason); the other skills still load. The catalog lists at most 200 skills and 25,000 bytes; a
last line says how many are not listed.

The front matter is the YAML subset skills use: ``key: value`` lines with plain, single- or
double-quoted values, ``>``/``|`` block scalars, and lists (``[a, b]`` or ``- item`` lines).
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from agentcontext import _checks
from agentcontext._containment import one_line, opened_inside, outside_reason, read_text, real_root
from agentcontext.compiler.registry import ToolSpec
from agentcontext.errors import ArgumentTypeError, OptionError

__all__ = ["LOAD_SKILL", "Skill", "Skills", "discover_skills", "parse_front_matter"]

#: The name of the tool that loads a skill.
LOAD_SKILL = "LoadSkill"
#: Largest SKILL.md read (bytes).
MAX_SKILL_BYTES = 256 * 1024
#: Longest body LoadSkill returns (characters); a longer one is cut with a note.
MAX_BODY_CHARS = 60_000
#: Files a LoadSkill result lists at most.
MAX_LISTED_FILES = 50
MAX_NAME_CHARS = 64
MAX_DESCRIPTION_CHARS = 1_024
#: Skills the catalog lists at most, and its largest size in bytes (like the memory index).
MAX_CATALOG_LINES = 200
MAX_CATALOG_BYTES = 25_000
_SKILL_NAME = re.compile(r"[a-z0-9][a-z0-9_-]*")
_KEY = re.compile(r"^([A-Za-z0-9_-]+):(.*)$")


@dataclass(frozen=True)
class Skill:
    """One skill: its name, one-line description, the tools it says it needs, and its directory."""

    name: str
    description: str
    path: Path
    allowed_tools: tuple[str, ...] = ()
    #: The real path of the skills directory it was found in: LoadSkill reads only inside it.
    root: str | None = None

    @property
    def directory(self) -> Path:
        return self.path.parent


@dataclass
class Skills:
    """The skills found (in discovery order) and the files that were not usable skills."""

    skills: list[Skill] = field(default_factory=list)
    #: ``(file, reason)`` for every SKILL.md (or directory) that could not be used.
    problems: list[tuple[str, str]] = field(default_factory=list)

    def __len__(self) -> int:
        return len(self.skills)

    def get(self, name: str) -> Skill | None:
        return next((s for s in self.skills if s.name == name), None)

    def section(self) -> str | None:
        """The skill catalog section (name + one line each), or None when there is no skill. At
        most :data:`MAX_CATALOG_LINES` skills and :data:`MAX_CATALOG_BYTES` bytes of lines are
        listed, in discovery order; a last line says how many are not listed."""
        if not self.skills:
            return None
        lines = [
            "# Skills",
            "",
            (
                f"Skills are instructions for specific tasks. Before doing a task a skill covers, call {LOAD_SKILL} "
                "with its name to read it."
            ),
            "",
        ]
        lines += _listed([f"- {s.name}: {_one_line(s.description)}" for s in self.skills])
        return "\n".join(lines) + "\n"

    def load(self, name: str) -> str:
        """What ``LoadSkill(name)`` returns: the body, the tools the skill asks for, and the files
        of its directory (at most 50, each symlink named as one, never followed). Errors are text for the model."""
        skill = self.get(name) if isinstance(name, str) else None
        if skill is None:
            known = ", ".join(s.name for s in self.skills[:MAX_CATALOG_LINES]) or "none"
            if len(self.skills) > MAX_CATALOG_LINES:
                known += f" and {len(self.skills) - MAX_CATALOG_LINES:,} more"
            return f"Error: no skill named {name!r:.200} (skills: {known})"
        got = read_text(skill.path, MAX_SKILL_BYTES, root=skill.root, within="the skills directory")
        if got.text is None:
            return f"Error: skill {name!r}: {skill.path.name} {got.problem}"
        try:
            _, body = parse_front_matter(got.text)
        except ValueError as exc:
            return f"Error: skill {name!r}: {skill.path.name} changed and is no longer valid: {exc}"
        body = body.strip("\n")
        if len(body) > MAX_BODY_CHARS:
            body = body[:MAX_BODY_CHARS] + f"\n[... skill body cut at {MAX_BODY_CHARS:,} characters]"
        parts = [f"# Skill: {skill.name}", "", body]
        if skill.allowed_tools:
            parts += ["", f"Tools this skill uses: {', '.join(skill.allowed_tools)}"]
        files = _files(skill.directory, skill.root)
        if files:
            parts += ["", f"Files in this skill ({one_line(str(skill.directory))}):", *(f"- {f}" for f in files)]
        return "\n".join(parts) + "\n"

    def tool(self) -> ToolSpec:
        """The ``LoadSkill`` tool over these skills (read-only, local)."""
        return ToolSpec(
            LOAD_SKILL,
            "Load a skill: returns its instructions and lists its files. Call it before doing a task a skill in "
            "the skill catalog covers.",
            {
                "type": "object",
                "properties": {"name": {"type": "string", "description": "The skill's name, as the catalog lists it."}},
                "required": ["name"],
            },
            read_only=True,
            source="skill",
            function=self._load_args,
        )

    def _load_args(self, arguments: Any) -> str:
        if isinstance(arguments, dict) and isinstance(arguments.get("name"), str):
            return self.load(arguments["name"])
        if isinstance(arguments, str):
            return self.load(arguments)
        return 'Error: LoadSkill takes {"name": "<skill name>"}'


def _not_listed(unlisted: int, total: int) -> str:
    return f"[... {unlisted:,} of {total:,} skills not listed; {LOAD_SKILL} loads any skill by its name]"


def _listed(lines: list[str]) -> list[str]:
    """``lines`` when all fit in :data:`MAX_CATALOG_LINES` and :data:`MAX_CATALOG_BYTES` (UTF-8, a
    newline each); else the first ones that fit with the line saying how many are not listed."""
    sizes = [len(line.encode("utf-8", "surrogatepass")) + 1 for line in lines]
    if len(lines) <= MAX_CATALOG_LINES and sum(sizes) <= MAX_CATALOG_BYTES:
        return lines
    room = MAX_CATALOG_BYTES - len(_not_listed(len(lines), len(lines))) - 1
    keep = 0
    while keep < min(len(lines), MAX_CATALOG_LINES - 1) and sizes[keep] <= room:
        room -= sizes[keep]
        keep += 1
    return [*lines[:keep], _not_listed(len(lines) - keep, len(lines))]


def _one_line(text: str) -> str:
    line = " ".join(text.split())
    line = line if len(line) <= 200 else line[:197] + "..."
    return _checks.shown_line(line)


#: A LoadSkill listing reads at most this many directory entries, and directories this deep.
MAX_SCANNED_ENTRIES = 10_000
MAX_LISTED_DEPTH = 16
_MORE = "... (more files not listed)"
_DIRECTORY = os.O_RDONLY | getattr(os, "O_DIRECTORY", 0) | getattr(os, "O_NONBLOCK", 0)
_NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)


def _files(directory: Path, root: str | None) -> list[str]:
    """The files of a skill's ``directory`` (``SKILL.md`` aside), sorted, a directory's own before
    its subdirectories', at most :data:`MAX_LISTED_FILES`; a symlink (to a file or a directory, in
    the skill or out of it) is named as one with the path it holds, ``name -> target (a symlink,
    not followed)``, and never followed, not even to tell what it points to. With ``root`` (a real path), nothing is listed unless the directory opened lies
    inside it (:func:`~agentcontext._containment.opened_inside`, after the open: a directory
    swapped for a symlink out after the check is caught), and every subdirectory is opened by its
    name from its parent's descriptor without following a symlink, so one swapped in while the
    listing runs is skipped, never followed out. Neither a FIFO nor a device is opened."""
    real = os.path.realpath(directory) if root is not None else os.fspath(directory)
    if root is not None and outside_reason(directory, root, "", real) is not None:
        return []
    try:
        fd = os.open(real, _DIRECTORY | (_NOFOLLOW if root is not None else 0))
    except OSError:
        return []
    out: list[str] = []
    try:
        if root is not None and not opened_inside(fd, real, root):
            return []
        _list(fd, "", out, [MAX_SCANNED_ENTRIES])
    finally:
        os.close(fd)
    return out


def _list(fd: int, prefix: str, out: list[str], budget: list[int]) -> bool:
    """:func:`_files` of the directory open at ``fd`` (named ``prefix`` in the listing) into
    ``out``; False once the listing is full (``budget``: the entries it may still read)."""
    dirs: list[tuple[str, bool]] = []
    names: list[tuple[str, bool]] = []
    try:
        with os.scandir(fd) as entries:
            for entry in entries:
                budget[0] -= 1
                if budget[0] < 0:
                    out.append(_MORE)
                    return False
                try:
                    link = entry.is_symlink()
                    is_dir = not link and entry.is_dir(follow_symlinks=False)
                except OSError:  # gone
                    link = is_dir = False
                (dirs if is_dir else names).append((entry.name, link))
    except OSError:
        return True
    for name, link in sorted(names):
        rel = one_line(prefix + name)
        if rel != "SKILL.md":
            out.append(f"{rel} -> {_link_target(name, fd)} (a symlink, not followed)" if link else rel)
        if len(out) >= MAX_LISTED_FILES:
            out.append(_MORE)
            return False
    for name, _ in sorted(dirs):
        if prefix.count(os.sep) >= MAX_LISTED_DEPTH:
            break
        try:
            sub = os.open(name, _DIRECTORY | _NOFOLLOW, dir_fd=fd)
        except OSError:  # swapped for a symlink (or a file), or gone: not followed
            continue
        try:
            if not _list(sub, prefix + name + os.sep, out, budget):
                return False
        finally:
            os.close(sub)
    return True


def _link_target(name: str, fd: int) -> str:
    """The path the symlink ``name`` in the directory open at ``fd`` holds (read from the link,
    not followed), on one line and at most 200 characters; ``?`` when it cannot be read."""
    try:
        target = os.readlink(name, dir_fd=fd)
    except (OSError, NotImplementedError):
        return "?"
    target = one_line(target)
    return target if len(target) <= 200 else target[:197] + "..."


def discover_skills(directories: Sequence[str | os.PathLike[str]]) -> Skills:
    """Every skill in ``directories`` (see the module docs). A directory that does not exist or is
    not a directory is an :class:`~agentcontext.errors.OptionError`; a bad skill is a problem."""
    if isinstance(directories, str | bytes | os.PathLike):
        directories = [directories]
    if not isinstance(directories, Iterable):
        raise ArgumentTypeError(f"directories must be a path or a list of paths, got {type(directories).__name__}")
    directories = list(directories)
    for i, d in enumerate(directories):
        _checks.path_argument(f"directories[{i}]", os.fsdecode(d) if isinstance(d, bytes) else d)
    found = Skills()
    for d in directories:
        root = Path(os.fsdecode(d))
        if not root.is_dir():
            raise OptionError(f"skills directory {os.fsdecode(d)!r} is not a directory")
        real = real_root(root)
        candidates: list[Path] = []
        if os.path.lexists(root / "SKILL.md"):
            candidates.append(root / "SKILL.md")
        try:
            entries = sorted(os.scandir(root), key=lambda e: e.name)
        except OSError as exc:
            found.problems.append((str(root), f"cannot be listed: {exc.strerror or exc}"))
            continue
        for entry in entries:
            try:
                is_dir = entry.is_dir()  # follows a symlink one level; a loop raises ELOOP
            except OSError as exc:
                found.problems.append((entry.path, f"cannot be followed: {exc.strerror or exc}"))
                continue
            if not is_dir:
                continue
            skill_md = Path(entry.path) / "SKILL.md"
            try:
                present = os.path.lexists(skill_md)
            except OSError as exc:  # pragma: no cover - lexists swallows OSError on most platforms
                found.problems.append((str(skill_md), f"cannot be read: {exc}"))
                continue
            if not present:
                continue
            why = outside_reason(entry.path, real, "the skills directory")
            if why is not None:
                found.problems.append((entry.path, why.replace("; not read", "; not loaded")))
                continue
            candidates.append(skill_md)
        for path in candidates:
            _add(found, path, real)
    return found


def _add(found: Skills, path: Path, root: str) -> None:
    got = read_text(path, MAX_SKILL_BYTES, root=root, within="the skills directory")
    if got.text is None:
        found.problems.append((str(path), got.problem or "cannot be read"))
        return
    if got.replaced:
        found.problems.append((str(path), "not valid UTF-8"))
        return
    try:
        fields, _ = parse_front_matter(got.text)
        skill = _skill(fields, path, root)
    except ValueError as exc:
        found.problems.append((str(path), str(exc)))
        return
    other = found.get(skill.name)
    if other is not None:
        found.problems.append((str(path), f"skill name {skill.name!r} is already taken by {other.path}"))
        return
    found.skills.append(skill)


def _skill(fields: dict[str, Any], path: Path, root: str) -> Skill:
    name = fields.get("name")
    if not isinstance(name, str) or not name:
        raise ValueError("front matter has no name")
    if len(name) > MAX_NAME_CHARS or not _SKILL_NAME.fullmatch(name):
        raise ValueError(f"name {name[:80]!r} must be 1-{MAX_NAME_CHARS} of a-z, 0-9, - and _")
    description = fields.get("description")
    if not isinstance(description, str) or not description.strip():
        raise ValueError("front matter has no description")
    if len(description) > MAX_DESCRIPTION_CHARS:
        raise ValueError(f"description is {len(description):,} characters, over {MAX_DESCRIPTION_CHARS:,}")
    raw = fields.get("allowed-tools", fields.get("allowed_tools"))
    if raw is None:
        tools: tuple[str, ...] = ()
    elif isinstance(raw, str):
        tools = tuple(t for t in re.split(r"[,\s]+", raw) if t)
    elif isinstance(raw, list) and all(isinstance(t, str) for t in raw):
        tools = tuple(t.strip() for t in raw if t.strip())
    else:
        raise ValueError("allowed-tools must be a list of tool names")
    return Skill(name, description.strip(), path, tools, root)


def parse_front_matter(text: str) -> tuple[dict[str, Any], str]:
    """The front matter fields and the body of a markdown file that starts with ``---``.

    Raises:
        ValueError: no front matter, not closed, or a line that is not part of the supported
            subset; the message names the line.
    """
    text = text.removeprefix("\ufeff")
    lines = text.split("\n")
    if not lines or lines[0].rstrip("\r").rstrip() != "---":
        raise ValueError('no front matter (the file must start with a line "---")')
    fields: dict[str, Any] = {}
    i = 1
    key_of_list: str | None = None
    while True:
        if i >= len(lines):
            raise ValueError('front matter is not closed (no line "---" after it)')
        line = lines[i].rstrip("\r")
        number = i + 1
        i += 1
        if line.rstrip() == "---":
            return fields, "\n".join(lines[i:])
        if not line.strip() or line.lstrip().startswith("#"):
            continue
        if line[0] in " \t-":
            item = line.strip()
            if key_of_list is not None and item.startswith("- "):
                fields[key_of_list].append(_scalar(item[2:].strip(), number))
                continue
            raise ValueError(f"line {number}: unexpected indented line {line.strip()[:60]!r}")
        m = _KEY.match(line)
        if m is None:
            raise ValueError(f'line {number}: expected "key: value", got {line[:60]!r}')
        key, value = m.group(1), m.group(2).strip()
        if key in fields:
            raise ValueError(f"line {number}: {key} appears twice")
        key_of_list = None
        if value in (">", "|", ">-", "|-", ">+", "|+"):
            block: list[str] = []
            while i < len(lines) and (not lines[i].strip() or lines[i][:1] in " \t"):
                block.append(lines[i].rstrip("\r").strip())
                i += 1
            while block and not block[-1]:
                block.pop()
            fields[key] = " ".join(b for b in block if b) if value[0] == ">" else "\n".join(block)
        elif value == "":
            fields[key] = []
            key_of_list = key
        elif value.startswith("["):
            if not value.endswith("]"):
                raise ValueError(f"line {number}: {key}: unterminated list")
            inner = value[1:-1].strip()
            fields[key] = [_scalar(v.strip(), number) for v in inner.split(",")] if inner else []
        else:
            fields[key] = _scalar(value, number)


def _scalar(value: str, number: int) -> str:
    if value.startswith('"'):
        try:
            parsed = json.loads(value)
        except ValueError:
            raise ValueError(f"line {number}: unterminated or invalid double-quoted value") from None
        if not isinstance(parsed, str):
            raise ValueError(f"line {number}: invalid double-quoted value")
        return parsed
    if value.startswith("'"):
        if len(value) < 2 or not value.endswith("'"):
            raise ValueError(f"line {number}: unterminated single-quoted value")
        return value[1:-1].replace("''", "'")
    if value.startswith(("{", "&", "*", "!", "%", "@", "`")):
        raise ValueError(f"line {number}: unsupported YAML value {value[:40]!r}")
    return value.split(" #", 1)[0].strip()
