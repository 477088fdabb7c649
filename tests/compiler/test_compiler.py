"""The working-set compiler offline: real files in temp dirs (nested AGENTS.md, skills good and
broken, a git repo made here), the registry and modes from metadata, reminders, the stateless
entry point, and the tokens per source."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest

from agentcontext import Conversation, count_tokens
from agentcontext.compiler import (
    CommandExited,
    Compiler,
    EvidenceJudge,
    FileContains,
    Goal,
    Registry,
    Reminder,
    ToolSpec,
    WorkingSet,
    compile_request,
    discover_skills,
    environment_section,
    parse_front_matter,
    project_instructions,
)
from agentcontext.errors import ArgumentTypeError, OptionError
from agentcontext.memory import MemoryStore

GIT = shutil.which("git")


def git(cwd: Path, *args: str) -> None:
    env = {**os.environ, "GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@e", "GIT_COMMITTER_NAME": "t"}
    env["GIT_COMMITTER_EMAIL"] = "t@e"
    subprocess.run(["git", *args], cwd=cwd, check=True, capture_output=True, env=env)


def write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path


def tools() -> Registry:
    reg = Registry()
    reg.tool("read_file", "Read a file.", lambda a: "content", read_only=True)
    reg.tool("grep", "Search files.", lambda a: "hits", read_only=True)
    reg.tool("write_file", "Write a file.", lambda a: "written")
    reg.tool("bash", "Run a shell command.", lambda a: "ran")
    reg.tool("spawn_agent", "Delegate a task.", lambda a: "done", read_only=True, execution_domain="delegated")
    reg.add_mcp(
        "github",
        {
            "tools": [
                {
                    "name": "list_issues",
                    "description": "List issues",
                    "inputSchema": {"type": "object", "properties": {"repo": {"type": "string"}}},
                    "annotations": {"readOnlyHint": True},
                },
                {"name": "create_issue", "description": "Create an issue", "inputSchema": {"type": "object"}},
            ]
        },
        call=lambda name, args: f"mcp {name}",
    )
    return reg


# -- project instructions ------------------------------------------------------------------------


def test_nested_agents_md_outermost_first_nearest_last_and_capped(tmp_path: Path) -> None:
    repo = tmp_path / "repo"
    (repo / ".git").mkdir(parents=True)
    write(tmp_path / "AGENTS.md", "OUTSIDE THE REPO")  # above the root: never read
    write(repo / "AGENTS.md", "root rules")
    write(repo / "pkg" / "CLAUDE.md", "pkg rules")
    big = "H" * 20_000 + "MIDDLE" + "T" * 20_000
    write(repo / "pkg" / "sub" / "AGENTS.md", big)
    found = project_instructions(repo / "pkg" / "sub")
    assert [p for p, _ in found.files] == ["AGENTS.md", "pkg/CLAUDE.md", "pkg/sub/AGENTS.md"]
    assert found.cut == ["pkg/sub/AGENTS.md"]
    cut = dict(found.files)["pkg/sub/AGENTS.md"]
    assert len(cut) <= 12_000 and "MIDDLE" not in cut
    # 75% head, 25% tail (the existing fit_project_files cut).
    heads, tails = cut.count("H"), cut.count("T")
    assert heads > 2.5 * tails > 0
    section = found.section()
    assert section is not None
    assert "Files read: AGENTS.md, pkg/CLAUDE.md, pkg/sub/AGENTS.md." in section
    assert "Cut to fit (the middle is left out): pkg/sub/AGENTS.md." in section
    assert "OUTSIDE" not in section
    assert section.index("root rules") < section.index("pkg rules") < section.index("HHH")


def test_instruction_total_cap_and_configurable_names(tmp_path: Path) -> None:
    (tmp_path / ".git").mkdir()
    write(tmp_path / "RULES.md", "x" * 11_000)
    write(tmp_path / "a" / "RULES.md", "y" * 11_000)
    write(tmp_path / "a" / "AGENTS.md", "not looked for")
    found = project_instructions(tmp_path / "a", names=["RULES.md"], total_chars=15_000)
    assert [p for p, _ in found.files] == ["RULES.md", "a/RULES.md"]
    assert sum(len(t) for _, t in found.files) <= 15_000
    assert found.cut == ["RULES.md"] or found.cut == ["a/RULES.md"] or len(found.cut) == 2
    with pytest.raises(OptionError, match="names"):
        project_instructions(tmp_path, names="AGENTS.md")


def test_refresh_reads_the_instruction_names_the_working_set_was_loaded_with(tmp_path: Path) -> None:
    # Compiler.refresh() read AGENTS.md / CLAUDE.md again whatever names WorkingSet.load was given:
    # the project's RULES.md left the prompt and AGENTS.md (never asked for) came in.
    write(tmp_path / "RULES.md", "rules one")
    write(tmp_path / "AGENTS.md", "not looked for")
    compiler = Compiler(WorkingSet.load(tmp_path, instruction_names=["RULES.md"], git=False))
    write(tmp_path / "RULES.md", "rules two")
    compiler.refresh(git=False)
    section = compiler.working_set.instructions.section() if compiler.working_set.instructions else ""
    assert "rules two" in section and "not looked for" not in section
    assert compiler.working_set.instruction_names == ("RULES.md",)
    with pytest.raises(OptionError, match="instruction_names"):
        WorkingSet(instruction_names=["a/RULES.md"])
    with pytest.raises(ArgumentTypeError, match="instruction_names"):
        WorkingSet(instruction_names="RULES.md")


def test_fifo_huge_nonutf8_and_symlinked_instruction_files(tmp_path: Path) -> None:
    (tmp_path / ".git").mkdir()
    os.mkfifo(tmp_path / "AGENTS.md")  # would block a plain open()
    sub = tmp_path / "sub"
    sub.mkdir()
    with open(sub / "AGENTS.md", "wb") as f:  # sparse 5 GB
        f.truncate(5 << 30)
    deeper = sub / "deeper"
    deeper.mkdir()
    (deeper / "AGENTS.md").write_bytes(b"caf\xe9 rules\n")
    os.symlink("AGENTS.md", deeper / "CLAUDE.md")  # the same file twice: read once
    found = project_instructions(deeper)
    assert [p for p, _ in found.files] == ["sub/deeper/AGENTS.md"]
    reasons = dict(found.skipped)
    assert "FIFO" in reasons["AGENTS.md"]
    assert "over the 1,048,576-byte limit" in reasons["sub/AGENTS.md"]
    assert found.replaced == ["sub/deeper/AGENTS.md"]
    section = found.section()
    assert section is not None and "Not read: AGENTS.md is a FIFO (named pipe)" in section
    assert "caf\ufffd rules" in section


def test_outside_a_repository_only_the_workspace_is_read(tmp_path: Path) -> None:
    write(tmp_path / "AGENTS.md", "parent")
    write(tmp_path / "w" / "AGENTS.md", "here")
    found = project_instructions(tmp_path / "w")
    assert [t for _, t in found.files] == ["here"]
    assert project_instructions(tmp_path / "w" / "..").files  # a path with .. resolves
    with pytest.raises(OptionError, match="not a directory"):
        project_instructions(tmp_path / "missing")


# -- environment ---------------------------------------------------------------------------------


@pytest.mark.skipif(GIT is None, reason="git is not installed")
def test_environment_in_a_git_repo_made_here(tmp_path: Path) -> None:
    git(tmp_path, "init", "-q", "-b", "feature-x")
    write(tmp_path / "a.txt", "a")
    git(tmp_path, "add", "a.txt")
    git(tmp_path, "commit", "-qm", "one")
    write(tmp_path / "a.txt", "changed")
    for i in range(30):
        write(tmp_path / f"new{i:02}.txt", "n")
    text = environment_section(tmp_path)
    assert f"Working directory: {tmp_path.resolve()}" in text
    assert "Git branch: feature-x" in text
    assert " M a.txt" in text
    assert "... and 11 more" in text  # 31 entries, 20 shown
    small = environment_section(tmp_path, max_chars=300)
    assert len(small) <= 300 and "more" in small


def test_environment_without_git_or_repo(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    text = environment_section(tmp_path)
    assert "Git" not in text and "Shell:" in text
    monkeypatch.setenv("PATH", str(tmp_path))  # no git binary at all
    assert "Git" not in environment_section(tmp_path)


# -- skills --------------------------------------------------------------------------------------


def make_skills(root: Path) -> Path:
    skills = root / "skills"
    write(
        skills / "pdf" / "SKILL.md",
        "---\nname: pdf\ndescription: >\n  Fill and merge PDF\n  forms.\nallowed-tools: [bash, read_file]\n---\n"
        "# PDF\nRun scripts/fill.py with the form.\n",
    )
    write(skills / "pdf" / "scripts" / "fill.py", "print('fill')\n")
    write(
        skills / "review" / "SKILL.md",
        '---\nname: review\ndescription: "Review a diff"\nallowed-tools:\n  - grep\n  - read_file\n---\nBody of review\n',
    )
    write(skills / "no-front" / "SKILL.md", "just text\n")
    write(skills / "unclosed" / "SKILL.md", "---\nname: x\ndescription: y\n")
    write(skills / "bad-yaml" / "SKILL.md", "---\nname: {a: b}\ndescription: y\n---\n")
    write(skills / "no-desc" / "SKILL.md", "---\nname: nodesc\n---\n")
    write(skills / "zz-dup" / "SKILL.md", "---\nname: pdf\ndescription: again\n---\n")
    (skills / "latin1").mkdir()
    (skills / "latin1" / "SKILL.md").write_bytes(b"---\nname: l\ndescription: caf\xe9\n---\n")
    (skills / "fifo").mkdir()
    os.mkfifo(skills / "fifo" / "SKILL.md")
    os.symlink("loop", skills / "loop")  # a symlink to itself
    os.symlink("..", skills / "pdf" / "up")  # a loop inside a skill directory
    os.symlink(str(skills), skills / "again")  # a loop back to the skills directory
    return skills


def test_skills_good_and_broken_front_matter_reported_per_file(tmp_path: Path) -> None:
    found = discover_skills([make_skills(tmp_path)])
    assert [s.name for s in found.skills] == ["pdf", "review"]
    assert found.get("pdf") is not None and found.get("pdf").allowed_tools == ("bash", "read_file")  # type: ignore[union-attr]
    assert found.get("review").allowed_tools == ("grep", "read_file")  # type: ignore[union-attr]
    assert found.get("pdf").description == "Fill and merge PDF forms."  # type: ignore[union-attr]
    problems = {Path(f).parent.name: why for f, why in found.problems}
    assert "no front matter" in problems["no-front"]
    assert "not closed" in problems["unclosed"]
    assert "unsupported YAML value" in problems["bad-yaml"]
    assert "no description" in problems["no-desc"]
    assert "already taken" in problems["zz-dup"]
    assert "not valid UTF-8" in problems["latin1"]
    assert "FIFO" in problems["fifo"]
    assert any("loop" in f and "cannot be followed" in why for f, why in found.problems)
    # The catalog: a line each, no body.
    section = found.section()
    assert section is not None
    assert "- pdf: Fill and merge PDF forms." in section and "Run scripts" not in section
    # LoadSkill: the body and the files, symlink loops not followed.
    loaded = found.load("pdf")
    assert "Run scripts/fill.py" in loaded and "- scripts/fill.py" in loaded and "- up" in loaded
    assert "Tools this skill uses: bash, read_file" in loaded
    assert found.load("nope").startswith("Error: no skill named 'nope'")


def test_front_matter_subset() -> None:
    fields, body = parse_front_matter("\ufeff---\r\na: 'it''s'\r\nb: x # note\r\nc: |\r\n  one\r\n  two\r\n---\r\nBODY")
    assert fields == {"a": "it's", "b": "x", "c": "one\ntwo"}
    assert body == "BODY"
    for bad, why in [("---\na: 1\na: 2\n---\n", "twice"), ("---\n  x\n---\n", "indented"), ("---\nab\n---\n", "key")]:
        with pytest.raises(ValueError, match=why):
            parse_front_matter(bad)


def test_skill_bodies_never_in_system_prompt(tmp_path: Path) -> None:
    ws = WorkingSet.load(skills=[make_skills(tmp_path)])
    compiled = compile_request([], ws, format="anthropic")
    assert "Body of review" not in compiled.system and "- review: Review a diff" in compiled.system
    assert "LoadSkill" in compiled.visible
    run = Compiler(ws).execute("LoadSkill", json.dumps({"name": "review"}))
    assert run is not None and "Body of review" in run
    with pytest.raises(OptionError, match="not a directory"):
        discover_skills([tmp_path / "missing"])


# -- registry and modes --------------------------------------------------------------------------


def test_mcp_import_metadata_and_bad_lists() -> None:
    reg = tools()
    issues = reg.get("list_issues")
    assert issues is not None and issues.read_only and issues.source == "mcp:github"
    assert issues.execution_domain == "remote"
    assert issues.definition("anthropic")["input_schema"]["properties"]["repo"] == {"type": "string"}
    assert issues.definition("responses")["parameters"]["type"] == "object"
    create = reg.get("create_issue")
    assert create is not None and not create.read_only
    with pytest.raises(OptionError, match="already registered"):
        reg.add_mcp("other", [{"name": "grep"}])
    assert len(reg) == 7  # all or nothing
    with pytest.raises(OptionError, match="tool #0 has no name"):
        reg.add_mcp("x", {"tools": [{"description": "nameless"}]})
    with pytest.raises(OptionError, match="inputSchema"):
        reg.add_mcp("x", [{"name": "t", "inputSchema": "nope"}])
    with pytest.raises(OptionError, match="execution_domain"):
        ToolSpec("t", "d", execution_domain="elsewhere")  # type: ignore[arg-type]
    added = reg.add_mcp("github2", [{"name": "grep"}], prefix="mcp__gh__")
    assert [t.name for t in added] == ["mcp__gh__grep"]


@pytest.mark.parametrize("hiding", ["filter", "deny"])
def test_plan_hides_every_write_tool_and_refuses_forged_calls(hiding: str, tmp_path: Path) -> None:
    ran: list[str] = []
    reg = Registry()
    # Names that look harmless or harmful on purpose: only the metadata counts.
    reg.tool("view", "Looks read-only by name, but writes.", lambda a: ran.append("view") or "x")
    reg.tool("delete_everything", "Read-only despite the name.", lambda a: ran.append("d") or "x", read_only=True)
    reg.tool("subagent", "Delegated.", lambda a: ran.append("s") or "x", read_only=True, execution_domain="delegated")
    reg.tool("fetch", "Remote read.", lambda a: ran.append("f") or "x", read_only=True, execution_domain="remote")
    store = MemoryStore(directory=tmp_path / "mem")
    ws = WorkingSet(registry=reg, memory=store)
    compiler = Compiler(ws, hiding=hiding)
    conv = Conversation([{"role": "user", "content": "plan it"}], format="openai")
    default = compiler.compile(conv)
    compiler.set_mode("plan")
    plan = compiler.compile(conv)
    writes = {"view", "subagent", "memory_write", "memory_delete"}
    assert set(plan.hidden) == writes
    assert set(plan.visible) == {"delete_everything", "fetch", "memory_show", "memory_list", "memory_search"}
    sent = {t["function"]["name"] for t in plan.tools or []}
    if hiding == "filter":
        assert sent == set(plan.visible)
        assert plan.tokens["tools"] < default.tokens["tools"]
    else:
        assert sent == {t["function"]["name"] for t in default.tools or []}
        assert plan.tools == default.tools and plan.system == default.system
        assert "Calls to these tools will be refused" in plan.reminders[0]
    for name in sorted(writes):
        out = compiler.execute(name, json.dumps({"name": "x", "type": "user", "description": "d", "body": "b"}))
        assert out is not None and out.startswith(f"Error: tool {name!r} is not available in plan mode")
        assert out.endswith("The call was not run.")
    assert ran == [] and len(store) == 0
    assert [e["tool"] for e in compiler.events if e["event"] == "tool_refused"] == sorted(writes)
    assert compiler.execute("delete_everything", "{}") == "x" and ran == ["d"]
    compiler.set_mode("default")
    assert compiler.execute("view", "{}") == "x"


def test_bundle_and_subagent_root_only(tmp_path: Path) -> None:
    ws = WorkingSet(
        registry=tools(), memory=MemoryStore(directory=tmp_path / "m"), bundle={"grep", "source:mcp:github"}
    )
    names = [t.name for t in ws.effective()]
    assert names == ["grep", "list_issues", "create_issue"]
    compiler = Compiler(ws)
    out = compiler.execute("bash", "{}")
    assert out is not None and "not in this session's tool bundle" in out
    child = WorkingSet(registry=tools(), memory=MemoryStore(directory=tmp_path / "m"), root=False)
    # A subagent keeps the memory reads, not the writes.
    assert [t.name for t in child.effective() if t.name.startswith("memory_")] == [
        "memory_show",
        "memory_list",
        "memory_search",
    ]


# -- sections, tokens, events --------------------------------------------------------------------


def test_sections_in_order_and_tokens_per_source(tmp_path: Path) -> None:
    (tmp_path / ".git").mkdir()
    write(tmp_path / "AGENTS.md", "Use tabs.")
    store = MemoryStore(directory=tmp_path / "mem")
    store.write("role", description="The user is a data scientist", type="user", body="b")
    goal = Goal("tests pass", EvidenceJudge(CommandExited("pytest")))
    ws = WorkingSet.load(tmp_path, skills=[make_skills(tmp_path)], registry=tools(), memory=store, goal=goal, git=False)
    conv = Conversation(
        [
            {"role": "user", "content": "go"},
            {
                "role": "assistant",
                "content": None,
                "tool_calls": [{"id": "c1", "type": "function", "function": {"name": "bash", "arguments": "{}"}}],
            },
            {"role": "tool", "tool_call_id": "c1", "content": "exit code: 0 " * 50},
        ],
        format="openai",
    )
    r = compile_request(conv, ws, max_output_tokens=1000, reminders=["Mind the tests."])
    assert [s.name for s in r.sections] == ["base", "tools", "skills", "environment", "instructions", "memory", "goal"]
    assert r.system == "\n".join(s.text for s in r.sections)
    for s in r.sections:
        assert s.tokens == count_tokens(s.text)
    assert "## Memory index\n\n- role (user, role.md): The user is a data scientist" in r.system
    t = r.tokens
    assert t["tools"] == count_tokens(json.dumps(r.tools)) and t["system"] == count_tokens(r.system)
    assert t["history"] == {k: v for k, v in conv.tokens_by_role().items() if v}
    assert t["pending_results"] == conv.message_tokens()[2] > 0
    assert t["reserved_output"] == 1000
    assert t["reminders"] > 0 and r.tail[0]["content"].startswith("<system-reminder>\nMind the tests.")
    assert t["input_total"] == t["system"] + t["tools"] + conv.tokens + t["reminders"]
    # Without sources, only what exists appears.
    bare = compile_request([{"role": "user", "content": "hi"}], WorkingSet(base=None), format="openai")
    assert bare.sections == [] and bare.tools is None and bare.system == ""
    with pytest.raises(OptionError, match="mode"):
        compile_request([], ws, mode="yolo", format="openai")
    with pytest.raises(OptionError, match="hiding"):
        compile_request([], ws, hiding="both", format="openai")


def test_section_change_is_an_event_with_its_cache_cost(tmp_path: Path) -> None:
    store = MemoryStore(directory=tmp_path / "mem")
    compiler = Compiler(WorkingSet(registry=tools(), memory=store))
    conv = Conversation([{"role": "user", "content": "hello " * 200}], format="anthropic")
    compiler.compile(conv)
    conv.append({"role": "assistant", "content": "hi"})
    conv.append({"role": "user", "content": "more"})
    compiler.compile(conv)  # nothing changed: the whole previous request is a cached prefix
    replay = compiler.replay()
    assert replay.prefix_tokens[1] == replay.request_tokens[0]
    assert [e for e in compiler.events if e["event"].startswith("section")] == []
    store.write("fact", description="A new fact", type="project", body="b")
    conv.append({"role": "assistant", "content": "ok"})
    compiler.compile(conv)
    changed = [e for e in compiler.events if e["event"] == "section_changed"]
    assert [e["section"] for e in changed] == ["memory"]
    event = changed[0]
    assert event["tokens_after"] > event["tokens_before"]
    # The memory section comes after tools, base: they stay a prefix; the history does not.
    replay = compiler.replay()
    assert event["cache_prefix_tokens"] == replay.prefix_tokens[2]
    assert 0 < replay.prefix_tokens[2] < replay.request_tokens[1]
    assert 0 < replay.cache_stability < 1


# -- reminders -----------------------------------------------------------------------------------


def test_reminders_fire_once_per_event_in_the_next_request_only() -> None:
    compiler = Compiler(
        WorkingSet(registry=tools()),
        reminders=[
            Reminder("tool", "You ran {tool}: check its exit status.", tool="^bash$", arguments="rm "),
            Reminder("turn", "Turn {turn}: summarize progress.", every=2),
            Reminder("pressure", "Context at {share}: save notes.", share=0.5),
            Reminder("mode", "Now in {mode} mode."),
        ],
    )
    conv = Conversation([{"role": "user", "content": "one"}], format="openai")
    assert compiler.compile(conv, context_window=100_000).reminders == []
    compiler.execute("bash", json.dumps({"command": "ls"}))  # no match: no reminder
    compiler.execute("bash", json.dumps({"command": "rm -rf build"}))
    r = compiler.compile(conv, context_window=100_000)
    assert r.reminders == ["You ran bash: check its exit status."]
    assert len(r.request_conversation(conv)) == 2 and len(conv) == 1  # not persisted
    assert compiler.compile(conv, context_window=100_000).reminders == []  # once
    conv.extend([{"role": "assistant", "content": "a"}, {"role": "user", "content": "two"}])
    assert compiler.compile(conv).reminders == ["Turn 2: summarize progress."]
    assert compiler.compile(conv).reminders == []
    big = "word " * 2_000
    conv.extend([{"role": "assistant", "content": big}])
    assert compiler.compile(conv, context_window=4_000).reminders[0].startswith("Context at ")
    assert compiler.compile(conv, context_window=4_000).reminders == []  # still above: no second time
    assert compiler.compile(conv, context_window=1_000_000).reminders == []  # fell below: re-armed
    assert compiler.compile(conv, context_window=4_000).reminders[0].startswith("Context at ")
    compiler.set_mode("plan")
    got = compiler.compile(conv).reminders
    assert got[0].startswith("Plan mode:") and got[1] == "Now in plan mode."
    assert compiler.compile(conv).reminders == []
    fired = [e["text"] for e in compiler.events if e["event"] == "reminder"]
    assert len(fired) == 5


def test_reminder_rules_are_checked() -> None:
    with pytest.raises(OptionError, match="every= or at="):
        Reminder("turn", "x")
    with pytest.raises(OptionError, match="regular expression"):
        Reminder("tool", "x", tool="(")
    with pytest.raises(OptionError, match="share"):
        Reminder("pressure", "x", share=1.5)
    with pytest.raises(OptionError, match='"tool"'):
        Reminder("never", "x")  # type: ignore[arg-type]


# -- evidence judge ------------------------------------------------------------------------------


def test_evidence_judge_reads_the_last_run_and_files(tmp_path: Path) -> None:
    def call(i: int, command: str, out: str) -> list[dict[str, Any]]:
        return [
            {
                "role": "assistant",
                "content": None,
                "tool_calls": [
                    {
                        "id": f"c{i}",
                        "type": "function",
                        "function": {"name": "bash", "arguments": json.dumps({"command": command})},
                    }
                ],
            },
            {"role": "tool", "tool_call_id": f"c{i}", "content": out},
        ]

    conv = Conversation(
        [{"role": "user", "content": "fix"}, *call(1, "pytest -q", "1 failed\nexit code: 1")], format="openai"
    )
    judge = EvidenceJudge(CommandExited("pytest"), FileContains("NOTES.md", "done"), workspace=tmp_path)
    v = judge.judge("tests pass", conv)
    assert not v.met and "exited 1, not 0" in v.missing and "NOTES.md does not exist" in v.missing
    conv.extend(call(2, "pytest -q", "3 passed\nexit code: 0"))
    write(tmp_path / "NOTES.md", "all done")
    v = judge.judge("tests pass", conv)
    assert v.met and v.missing == ""
    assert not EvidenceJudge(CommandExited("cargo test")).judge("g", conv).met


# -- CLI -----------------------------------------------------------------------------------------


def test_cli_prompt_text_json_and_bad_input(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from agentcontext.cli import EXIT_BAD_INPUT, main

    (tmp_path / ".git").mkdir()
    write(tmp_path / "AGENTS.md", "Use tabs.")
    skills = make_skills(tmp_path)
    mcp = write(
        tmp_path / "tools.json",
        json.dumps(
            {
                "tools": [
                    {"name": "get", "inputSchema": {"type": "object"}, "annotations": {"readOnlyHint": True}},
                    {"name": "put", "inputSchema": {"type": "object"}},
                ]
            }
        ),
    )
    args = ["prompt", "--workspace", str(tmp_path), "--skills", str(skills), "--mcp", f"fs={mcp}", "--no-git"]
    assert main([*args, "--mode", "plan"]) == 0
    out = capsys.readouterr().out
    assert "## AGENTS.md\n\nUse tabs." in out and "- pdf: Fill and merge PDF forms." in out
    assert "tools sent in plan mode (filter): get, LoadSkill" in out
    assert "hidden: put: plan mode allows only read-only tools" in out
    assert "skills not loaded (" in out and "no front matter" in out
    assert main([*args, "--mode", "plan", "--hiding", "deny", "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert [t["name"] for t in report["tools"]] == ["get", "put", "LoadSkill"]
    assert report["hidden"] == {"put": "plan mode allows only read-only tools and this one can change state"}
    assert report["instructions"]["read"] == ["AGENTS.md"]
    assert {s["name"] for s in report["sections"]} == {"base", "tools", "skills", "environment", "instructions"}
    assert all(s["tokens"] > 0 for s in report["sections"])
    assert report["reminders"][0].startswith("Plan mode:") and "refused: put" in report["reminders"][0]
    os.mkfifo(tmp_path / "fifo.json")
    bad = [
        ["--mode", "yolo"],
        ["--hiding", "both"],
        ["--workspace", str(tmp_path / "none")],
        ["--skills", str(tmp_path / "AGENTS.md")],
        ["--mcp", "noequals"],
        ["--mcp", f"x={tmp_path / 'fifo.json'}"],
        ["--mcp", "x=/dev/zero"],
        ["--mcp", f"x={tmp_path / 'AGENTS.md'}"],
        ["--memory", str(tmp_path / "none")],
        ["--style", "xml"],
    ]
    for extra in bad:
        assert main(["prompt", "--workspace", str(tmp_path), "--no-git", *extra]) == EXIT_BAD_INPUT, extra
        err = capsys.readouterr().err
        assert err.startswith("agentcontext: error: ") and err.count("\n") == 1, err


def test_bad_arguments_are_option_errors(tmp_path: Path) -> None:
    judge = EvidenceJudge(FileContains("x"))
    conv = Conversation([], format="openai")
    cases: list[Any] = [
        lambda: Goal("", judge),
        lambda: Goal("g", judge, max_continuations=-1),
        lambda: Goal("g", judge, max_continuations=1.5),
        lambda: Goal("g", object()),  # type: ignore[arg-type]
        lambda: EvidenceJudge(),
        lambda: Compiler(mode=1),  # type: ignore[arg-type]
        lambda: Compiler(hiding="FILTER"),
        lambda: Compiler(working_set={}),  # type: ignore[arg-type]
        lambda: Compiler().compile(conv, max_output_tokens=0),
        lambda: Compiler().compile(conv, style="xml"),
        lambda: compile_request(conv, {}),  # type: ignore[arg-type]
        lambda: compile_request(conv, WorkingSet(), reminders="text"),
        lambda: Reminder("turn", "x", every=0),
        lambda: Reminder("turn", "x", every=2, at=3),
        lambda: Reminder("pressure", "x", share=0),
        lambda: Reminder("pressure", "x", share=float("nan")),
        lambda: Reminder("tool", " "),
        lambda: project_instructions(tmp_path, per_file_chars=-1),
        lambda: project_instructions(tmp_path, names=["a/b"]),
        lambda: environment_section(tmp_path, max_chars=0),
        lambda: environment_section(tmp_path, git_timeout=0),
        lambda: environment_section(tmp_path / "none"),
        lambda: WorkingSet.load(tmp_path / "none"),
        lambda: ToolSpec("", "d"),
        lambda: ToolSpec("bad name", "d"),
        lambda: ToolSpec("t", "d", input_schema={"type": "string"}),
        lambda: ToolSpec("t", "d", read_only="yes"),  # type: ignore[arg-type]
        lambda: Registry().add({"name": "t"}),  # type: ignore[arg-type]
        lambda: Registry().add_mcp("", []),
        lambda: Registry().add_mcp("s", "tools"),  # type: ignore[arg-type]
        lambda: Registry().add_mcp("s", [{"name": "t", "annotations": []}]),
        lambda: Registry().add_memory(object()),
        lambda: Registry().bundle("grep"),
    ]
    for i, case in enumerate(cases):
        with pytest.raises(OptionError):
            case()
            pytest.fail(f"case {i} did not raise")


def test_a_tool_name_with_a_trailing_newline_is_refused() -> None:
    # The name pattern ended in `$`, which also matches before a final newline: "read\n" was accepted
    # and sent to the provider as a tool name.
    with pytest.raises(OptionError, match="tool name must be"):
        ToolSpec("read\n", "reads")
    with pytest.raises(OptionError, match="tool name must be"):
        Registry().add_mcp("srv", [{"name": "read\n"}])


def test_mcp_tools_list_naming_a_tool_twice_adds_nothing() -> None:
    # add_mcp is all or nothing, but a name given twice in one tools/list was added once and then
    # refused with "already registered (from mcp:srv)", leaving the registry half-changed.
    registry = Registry()
    with pytest.raises(OptionError, match="tools/list gives tool 'a' twice"):
        registry.add_mcp("srv", [{"name": "a"}, {"name": "b"}, {"name": "a"}])
    assert len(registry) == 0 and registry.version == 0


@pytest.mark.parametrize(
    ("build", "error"),
    [
        (lambda: WorkingSet(registry=5), "WorkingSet registry must be a Registry"),  # type: ignore[arg-type]
        (lambda: WorkingSet(base=5), "WorkingSet base must be a str"),  # type: ignore[arg-type]
        (lambda: WorkingSet(goal="tests pass"), "WorkingSet goal must be a Goal"),  # type: ignore[arg-type]
        (lambda: WorkingSet(skills="skills/"), "WorkingSet skills must be a Skills"),  # type: ignore[arg-type]
        (lambda: WorkingSet(workspace="."), "WorkingSet workspace must be a Path"),  # type: ignore[arg-type]
        (lambda: WorkingSet(bundle=5), "WorkingSet bundle must be a collection"),  # type: ignore[arg-type]
        (lambda: WorkingSet(bundle=[1]), "WorkingSet bundle must be a collection"),  # type: ignore[list-item]
        (lambda: WorkingSet(root="no"), "WorkingSet root must be True or False"),  # type: ignore[arg-type]
        (lambda: WorkingSet.load(5), "workspace must be a path"),  # type: ignore[arg-type]
        (lambda: Registry(5), "Registry takes a sequence of ToolSpec"),  # type: ignore[arg-type]
        (lambda: Registry().bundle(5), "a bundle is a collection of names"),  # type: ignore[arg-type]
        (lambda: Registry().add_mcp("s", [{"name": "a"}], prefix=5), "prefix must be a string"),  # type: ignore[arg-type]
        (lambda: Registry().add_mcp("s", [{"name": "a"}], call=5), "call must be a function"),  # type: ignore[arg-type]
        (lambda: Compiler(WorkingSet()).compile([]), "compile\\(\\) takes a Conversation"),  # type: ignore[arg-type]
        (
            lambda: Compiler(WorkingSet()).compile(Conversation([], format="openai"), context_window="x"),  # type: ignore[arg-type]
            "context_window must be a positive integer",
        ),
    ],
)
def test_wrong_typed_working_set_arguments_are_typed_errors(build: Any, error: str) -> None:
    # These raised AttributeError/TypeError at compile time (e.g. 'int' object has no attribute 'bundle').
    with pytest.raises(ArgumentTypeError, match=error):
        build()


def test_an_evidence_judge_reads_past_arguments_nested_too_deeply(tmp_path: Path) -> None:
    # A model's tool call whose arguments nest 5,000 deep made json.loads raise RecursionError inside
    # the judge (ending the session's run); such arguments are now kept as the raw string.
    deep = "[" * 5000 + "]" * 5000
    conv = Conversation(
        [
            {"role": "user", "content": "fix"},
            {
                "role": "assistant",
                "content": None,
                "tool_calls": [{"id": "c1", "type": "function", "function": {"name": "sh", "arguments": deep}}],
            },
            {"role": "tool", "tool_call_id": "c1", "content": "nothing"},
        ],
        format="openai",
    )
    verdict = EvidenceJudge(CommandExited("pytest"), workspace=tmp_path).judge("tests pass", conv)
    assert not verdict.met


def test_a_skill_name_with_a_trailing_newline_is_a_problem(tmp_path: Path) -> None:
    # `name: "evil\n"` passed the $-anchored name pattern and broke the catalog line ("- evil" / ": fine").
    write(tmp_path / "evil" / "SKILL.md", '---\nname: "evil\\n"\ndescription: fine\n---\nbody\n')
    found = discover_skills([tmp_path])
    assert len(found) == 0
    assert [(Path(f).parent.name, "must be" in why) for f, why in found.problems] == [("evil", True)]


def test_a_judge_that_returns_no_verdict_is_named() -> None:
    # A judge returning True (not a Verdict) failed with AttributeError: 'bool' object has no attribute 'met'.
    class Sloppy:
        def judge(self, goal: str, conversation: Conversation) -> Any:
            return True

    goal = Goal("tests pass", Sloppy())
    with pytest.raises(OptionError, match="judge Sloppy returned bool, not a Verdict"):
        goal.check(Conversation([{"role": "user", "content": "go"}], format="openai"))
    assert goal.verdicts == [] and goal.status == "active"


@pytest.mark.parametrize(
    ("kwargs", "error"),
    [
        ({"messages": -1}, "messages must be a positive integer"),
        ({"messages": "20"}, "messages must be a positive integer"),
        ({"per_message_chars": 0}, "per_message_chars must be a positive integer"),
    ],
)
def test_bad_llm_judge_arguments(kwargs: dict[str, Any], error: str) -> None:
    # messages, per_message_chars and the provider were not checked when the judge was made.
    from agentcontext.compiler import LLMJudge

    with pytest.raises(OptionError, match=error):
        LLMJudge(object(), **kwargs)
    with pytest.raises(OptionError, match="provider must be a Provider"):
        LLMJudge(object())


def test_cli_prompt_mcp_file_nested_too_deeply_is_bad_input(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    # json.loads raised RecursionError: a traceback instead of one line and exit 2.
    from agentcontext.cli import EXIT_BAD_INPUT, main

    deep = write(tmp_path / "deep.json", "[" * 100_000 + "]" * 100_000)
    assert main(["prompt", "--workspace", str(tmp_path), "--no-git", "--mcp", f"srv={deep}"]) == EXIT_BAD_INPUT
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "nested too deeply" in err


def test_an_mcp_tool_with_a_bad_schema_names_the_server() -> None:
    # The ToolSpec error said only "tool 'a': input_schema must be ...", not which MCP server gave it.
    with pytest.raises(OptionError, match="MCP server 'srv': tool #0: tool 'a': input_schema must be"):
        Registry().add_mcp("srv", [{"name": "a", "inputSchema": {"type": "string"}}])
