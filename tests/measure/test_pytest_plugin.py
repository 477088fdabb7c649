"""The pytest plugin (``agentcontext.measure.pytest_plugin``, loaded through the ``pytest11`` entry point)
and the assertion helpers of ``agentcontext.measure.testing``.

Plugin tests run pytest in process with ``pytester`` in a temporary folder that has its own
empty ``pytest.ini``, so the project's settings do not apply to the inner runs.
"""

from __future__ import annotations

import importlib.metadata
import json
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest

import agentcontext.importers

# Imported here, before pytester snapshots sys.modules, so that the inner runs share these modules
# (and their classes) instead of importing fresh copies.
import agentcontext.measure.evaluation
import agentcontext.measure.pytest_plugin  # noqa: F401
from agentcontext import CompactionResult, Compactor, Conversation, OptionError
from agentcontext.compaction import PRESETS
from agentcontext.measure import metrics
from agentcontext.measure.testing import assert_cache_stable, assert_fits, assert_retains, assert_valid
from tests.measure.test_calibration import message_texts

LONG = "\n".join(f"line {i}: def handler_{i}(request): return lookup(request['user_id'])" for i in range(80))


def native_messages() -> list[dict[str, Any]]:
    return [
        {"role": "system", "content": "You are a coding agent."},
        {"role": "user", "content": "Fix the failing login test in src/app.py please, keep the public API unchanged."},
        {
            "role": "assistant",
            "content": "Reading the file.",
            "tool_calls": [{"id": "c1", "name": "read_file", "arguments": json.dumps({"path": "src/app.py"})}],
        },
        {"role": "tool", "tool_call_id": "c1", "content": LONG},
        {
            "role": "assistant",
            "content": "Running the tests.",
            "tool_calls": [
                {"id": "c2", "name": "bash", "arguments": json.dumps({"command": "pytest tests/test_login.py"})}
            ],
        },
        {
            "role": "tool",
            "tool_call_id": "c2",
            "content": "FAILED tests/test_login.py::test_login - KeyError: 'user_id'\n" + LONG,
        },
        {"role": "assistant", "content": "The handler reads user_id before login; fixed."},
        {"role": "user", "content": "Now also update the changelog with the login fix details."},
        {"role": "assistant", "content": "Done: CHANGELOG.md updated."},
    ]


def openai_messages() -> list[dict[str, Any]]:
    call = {
        "id": "k1",
        "type": "function",
        "function": {"name": "grep", "arguments": json.dumps({"pattern": "load_config"})},
    }
    return [
        {"role": "user", "content": "Rename the config loader in lib/config.py to load_settings everywhere."},
        {"role": "assistant", "content": None, "tool_calls": [call]},
        {"role": "tool", "tool_call_id": "k1", "content": LONG},
        {"role": "assistant", "content": "Renamed in 3 files."},
    ]


def claude_code_entries() -> list[dict[str, Any]]:
    def entry(kind: str, content: Any, n: int, **extra: Any) -> dict[str, Any]:
        message: dict[str, Any] = {"role": kind, "content": content}
        if "id" in extra:
            message["id"] = extra.pop("id")
        return {"type": kind, "uuid": f"u{n}", "sessionId": "s1", "message": message, **extra}

    read = {"type": "tool_use", "id": "t1", "name": "Read", "input": {"file_path": "net/client.py"}}
    return [
        entry("user", "Add retries to the HTTP client in net/client.py with exponential backoff.", 1, cwd="/repo"),
        entry("assistant", [{"type": "text", "text": "Reading."}], 2, id="m1"),
        entry("assistant", [read], 3, id="m1"),
        entry("user", [{"type": "tool_result", "tool_use_id": "t1", "content": LONG}], 4),
        entry("assistant", [{"type": "text", "text": "Added retries with backoff."}], 5, id="m2"),
    ]


def write_transcripts(folder: Path) -> Path:
    """Three transcripts: native JSONL (alpha), an OpenAI message list (beta), Claude Code (gamma)."""
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "alpha.jsonl").write_text("".join(json.dumps(m) + "\n" for m in native_messages()), encoding="utf-8")
    (folder / "beta.json").write_text(json.dumps(openai_messages()), encoding="utf-8")
    (folder / "gamma.jsonl").write_text("".join(json.dumps(e) + "\n" for e in claude_code_entries()), encoding="utf-8")
    (folder / "notes.txt").write_text("not a transcript", encoding="utf-8")
    return folder


@pytest.fixture
def project(pytester: pytest.Pytester) -> pytest.Pytester:
    """A pytester folder with an empty ini (isolated from this project's) and ``data/`` transcripts."""
    pytester.makeini("[pytest]\n")
    write_transcripts(pytester.path / "data")
    return pytester


@pytest.fixture
def alpha() -> Conversation:
    return Conversation(native_messages(), format="jsonl")


# ---------------------------------------------------------------------------------------------
# Loading.


def test_entry_point_registered() -> None:
    points = {ep.name: ep.value for ep in importlib.metadata.entry_points(group="pytest11")}
    assert points.get("agentcontext") == "agentcontext.measure.pytest_plugin"


def test_marker_registered_without_p(project: pytest.Pytester) -> None:
    result = project.runpytest("--markers")
    result.stdout.fnmatch_lines(["@pytest.mark.ac_transcripts(*paths, strategies=None, pattern=None):*"])
    assert result.ret == 0


def test_plain_tests_unaffected(project: pytest.Pytester) -> None:
    project.makepyfile(test_plain="def test_one():\n    assert 1 + 1 == 2\n")
    result = project.runpytest("-W", "error")
    result.assert_outcomes(passed=1)
    assert "ac_transcript" not in result.stdout.str()
    project.runpytest("-p", "no:agentcontext").assert_outcomes(passed=1)


def _imported_by_plugin() -> set[str]:
    code = (
        "import sys; before = set(sys.modules); import agentcontext.measure.pytest_plugin; "
        "print(' '.join(sorted(set(sys.modules) - before)))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    return set(out.split())


def test_loading_the_plugin_imports_no_submodule_it_uses() -> None:
    new = _imported_by_plugin()
    assert "agentcontext.measure.pytest_plugin" in new
    for module in (
        "agentcontext.measure.testing",
        "agentcontext.importers",
        "agentcontext.measure.metrics",
        "agentcontext.measure.evaluation",
    ):
        assert module not in new


def test_loading_the_plugin_does_not_import_the_core() -> None:
    assert "agentcontext._core" not in _imported_by_plugin()


# ---------------------------------------------------------------------------------------------
# The ac_transcripts marker.


def test_one_item_per_transcript(project: pytest.Pytester) -> None:
    project.makepyfile(
        test_corpus="""
        import pytest
        from agentcontext import Conversation
        from agentcontext.measure.testing import assert_valid

        @pytest.mark.ac_transcripts("data")
        def test_each(ac_transcript, ac_strategy):
            assert isinstance(ac_transcript, Conversation)
            assert_valid(ac_transcript)
            assert ac_strategy == "openharness"
            ac_transcript.append({"role": "user", "content": "mutated"})  # a copy: the next test sees none of it
            assert ac_transcript[-1]["content"] == "mutated"
            assert all(m.get("content") != "mutated" for m in ac_transcript.to_jsonl()[:-1])
        """
    )
    result = project.runpytest("-v")
    result.assert_outcomes(passed=3)
    result.stdout.fnmatch_lines(
        ["*test_corpus.py::test_each?alpha? PASSED*", "*test_each?beta? PASSED*", "*test_each?gamma? PASSED*"]
    )


def test_strategies_multiply_items(project: pytest.Pytester) -> None:
    project.makepyfile(
        test_strategies="""
        import pytest
        from agentcontext.measure.testing import assert_fits, assert_valid

        pytestmark = pytest.mark.ac_transcripts("data", strategies=["openharness", "pi"])

        def test_compacts(ac_transcript, ac_strategy, ac_compact):
            result = ac_compact(ac_transcript, ac_strategy, budget="50%")
            assert result.budget == max(1, ac_transcript.tokens // 2)
            assert_valid(result)
            assert_fits(result)
            assert_fits(result, "50%")

        def test_no_strategy_fixture(ac_transcript):
            pass
        """
    )
    result = project.runpytest("-v")
    result.assert_outcomes(passed=9)
    result.stdout.fnmatch_lines(
        [
            "*test_compacts?alpha-openharness? PASSED*",
            "*test_compacts?alpha-pi? PASSED*",
            "*test_compacts?gamma-pi? PASSED*",
            "*test_no_strategy_fixture?gamma? PASSED*",
        ]
    )


def test_pattern_and_files(project: pytest.Pytester) -> None:
    project.makepyfile(
        test_pattern="""
        import pytest

        @pytest.mark.ac_transcripts("data", pattern="*.json")
        def test_json_only(ac_transcript):
            assert len(ac_transcript) == 4

        @pytest.mark.ac_transcripts("data/alpha.jsonl", "data/gamma.jsonl")
        def test_files(ac_transcript):
            pass

        @pytest.mark.parametrize("ac_transcript", ["data/beta.json"], indirect=True)
        def test_parametrized_by_hand(ac_transcript):
            assert len(ac_transcript) == 4
        """
    )
    result = project.runpytest("-v")
    result.assert_outcomes(passed=4)
    result.stdout.fnmatch_lines(
        ["*test_json_only?beta? PASSED*", "*test_files?alpha? PASSED*", "*test_files?gamma? PASSED*"]
    )


def test_paths_are_relative_to_the_test_file(project: pytest.Pytester) -> None:
    sub = project.mkpydir("sub")
    write_transcripts(sub / "more")
    (sub / "test_sub.py").write_text(
        textwrap.dedent(
            """
            import pytest

            @pytest.mark.ac_transcripts("more", pattern="alpha*")
            def test_here(ac_transcript, ac_load):
                assert len(ac_transcript) == len(ac_load("more/alpha.jsonl")) == 9
            """
        ),
        encoding="utf-8",
    )
    result = project.runpytest("-v", "sub")
    result.assert_outcomes(passed=1)
    result.stdout.fnmatch_lines(["*test_here?alpha? PASSED*"])


def test_load_and_evaluate_fixtures(project: pytest.Pytester) -> None:
    project.makepyfile(
        test_fixtures="""
        import pytest
        from agentcontext.measure.metrics import Evaluation

        def test_load(ac_load, ac_compact):
            conv = ac_load("data/gamma.jsonl")
            assert len(conv) == 4
            assert ac_compact(conv).fits

        @pytest.mark.ac_transcripts("data", pattern="beta*", strategies=["pi"])
        def test_evaluate(ac_transcript, ac_strategy, ac_evaluate):
            row = ac_evaluate(ac_transcript, ac_strategy, "50%")
            assert isinstance(row, Evaluation)
            assert (row.transcript, row.strategy, row.budget) == ("beta-pi", "pi", ac_transcript.tokens // 2)
            assert ac_evaluate(ac_transcript, name="x", with_replay=False).transcript == "x"
        """
    )
    project.runpytest().assert_outcomes(passed=2)


def test_helper_failures_are_reported(project: pytest.Pytester) -> None:
    project.makepyfile(
        test_failing="""
        import pytest
        from agentcontext.measure.testing import assert_fits, assert_retains, assert_valid

        @pytest.mark.ac_transcripts("data", pattern="beta*")
        def test_retains(ac_transcript):
            assert_retains(ac_transcript.slice(1), original=ac_transcript)  # the user's ask is gone

        def test_valid():
            assert_valid([{"role": "user", "content": "hi"}, {"role": "tool", "tool_call_id": "x", "content": "r"}])

        @pytest.mark.ac_transcripts("data", pattern="alpha*")
        def test_fits(ac_transcript):
            assert_fits(ac_transcript, 1000)
        """
    )
    result = project.runpytest()
    result.assert_outcomes(failed=3)
    out = result.stdout.str()
    result.stdout.fnmatch_lines(
        [
            "*AssertionError: working set lost 3 of 3 facts: kept 0.0%, required 100.0%*",
            "*latest_ask: 'Rename the config loader in lib/config.py to load_settings everywhere.' (message 0)",
            "*user_path: 'lib/config.py' (message 0)",
            "*AssertionError: conversation is not valid: 1 protocol violation in 2 messages",
            "*message 1: orphan_result (id 'x'): tool result without an earlier tool call of this id",
            "*AssertionError: working set is over budget: 2,865 tokens > 1,000 (over by 1,865 tokens, 186.5%)",
        ]
    )
    # The tracebacks stop at the test's own line, not inside the helpers.
    assert "def assert_retains" not in out and "agentcontext/testing.py" not in out


def test_missing_folder_fails_only_the_tests_that_use_it(project: pytest.Pytester) -> None:
    project.makepyfile(
        test_missing="""
        import pytest

        @pytest.mark.ac_transcripts("nowhere")
        def test_x(ac_transcript):
            pass

        def test_y():
            pass

        @pytest.mark.ac_transcripts("data")
        def test_z(ac_transcript):
            pass
        """
    )
    result = project.runpytest()
    result.assert_outcomes(passed=4, errors=1)  # an error at set-up of that one test
    result.stdout.fnmatch_lines(
        ["*test_missing.py::test_x: @pytest.mark.ac_transcripts: no such file or folder: */nowhere"]
    )
    assert "Traceback" not in result.stdout.str()
    assert "ERROR collecting" not in result.stdout.str()
    # Deselected, the test with the missing folder costs nothing.
    project.runpytest("-k", "not test_x").assert_outcomes(passed=4)


@pytest.mark.parametrize(
    ("marker", "message"),
    [
        ('"data", strategies=["nope"]', "unknown strategies ?'nope'? (expected some of: openharness, pi, *)"),
        ('"data", pattern="*.none"', "no transcripts matching '*.none' in */data"),
        ('"data", budget="5%"', "unknown arguments ?'budget'? (expected strategies= and pattern=)"),
        ("", "give at least one transcript file or folder"),
        ('"data/notes.txt"', "cannot read a transcript: *notes.txt*"),
    ],
)
def test_bad_marker_fails_its_test(project: pytest.Pytester, marker: str, message: str) -> None:
    project.makepyfile(
        test_bad=f"import pytest\n\n@pytest.mark.ac_transcripts({marker})\ndef test_x(ac_transcript):\n    pass\n\n"
        "def test_y():\n    pass\n"
    )
    result = project.runpytest()
    result.assert_outcomes(passed=1, errors=1)
    result.stdout.fnmatch_lines([f"*test_bad.py::test_x: @pytest.mark.ac_transcripts: {message}*"])


def test_fixture_without_marker_explains_it(project: pytest.Pytester) -> None:
    project.makepyfile(test_unmarked="def test_x(ac_transcript):\n    pass\n\ndef test_y():\n    pass\n")
    result = project.runpytest()
    result.assert_outcomes(passed=1, errors=1)
    result.stdout.fnmatch_lines(
        ["*test_unmarked.py::test_x uses the ac_transcript fixture but has no @pytest.mark.ac_transcripts(...) marker*"]
    )


# ---------------------------------------------------------------------------------------------
# agentcontext.measure.testing, used directly.


def compacted(conv: Conversation, strategy: str = "openharness", share: float = 0.5) -> CompactionResult:
    return Compactor(strategy, environ={}).compact(conv, budget=int(conv.tokens * share))


def test_assert_valid_passes(alpha: Conversation) -> None:
    assert_valid(alpha)
    assert_valid(compacted(alpha))
    assert_valid(openai_messages())
    assert_valid(alpha.to_anthropic_params())
    assert_valid(alpha.to_responses(), format="responses")


def test_assert_valid_fails() -> None:
    broken = [
        {"role": "user", "content": "go"},
        {"role": "assistant", "content": "", "tool_calls": [{"id": "a", "name": "f", "arguments": "{}"}]},
        {"role": "user", "content": "next"},
        {"role": "tool", "tool_call_id": "zz", "content": "r"},
    ]
    with pytest.raises(AssertionError) as info:
        assert_valid(broken, format="jsonl")
    assert str(info.value).splitlines() == [
        "conversation is not valid: 2 protocol violations in 4 messages",
        "  message 1: missing_result (id 'a'): tool call a (f) has no result",
        "  message 3: orphan_result (id 'zz'): tool result without an earlier tool call of this id",
    ]
    with pytest.raises(AssertionError, match="not a valid conversation: message 1: missing `role`"):
        assert_valid([{"role": "user", "content": "hi"}, {"content": "no role"}], format="jsonl")
    with pytest.raises(TypeError, match="got int"):
        assert_valid(3)  # type: ignore[arg-type]


def test_assert_fits(alpha: Conversation) -> None:
    result = compacted(alpha)
    assert result.fits and result.tokens_after > alpha.tokens // 10
    assert_fits(result)
    assert_fits(result, "50%")
    assert_fits(result, result.budget)
    assert_fits(alpha, alpha.tokens)
    assert_fits(alpha, "100%", original=alpha)
    with pytest.raises(AssertionError) as info:
        assert_fits(result, "10%")
    lines = str(info.value).splitlines()
    limit = alpha.tokens // 10
    over = result.tokens_after - limit
    assert lines[0] == (
        f"working set is over budget: {result.tokens_after:,} tokens > {limit:,} "
        f"(over by {over:,} tokens, {over / limit:.1%})"
    )
    assert lines[1] == f"  budget: 10% of {alpha.tokens:,} original tokens = {limit:,}"
    with pytest.raises(AssertionError, match=r"(?s)2,865 tokens > 2,000 .*message 3 \(tool\): 1,\d\d\d tokens"):
        assert_fits(alpha, "2,000")
    with pytest.raises(OptionError, match="share of the original"):
        assert_fits(alpha, "50%")
    with pytest.raises(TypeError, match="needs a budget"):
        assert_fits(alpha)


def test_assert_fits_says_why_a_result_does_not_fit(alpha: Conversation) -> None:
    result = Compactor("openharness", environ={}).compact(alpha, budget=5)  # nothing fits in 5 tokens
    assert not result.fits and result.reason
    with pytest.raises(AssertionError) as info:
        assert_fits(result)
    assert f"  why: {result.reason}" in str(info.value).splitlines()


def test_assert_retains_strings_and_probes(alpha: Conversation) -> None:
    result = Compactor("openharness", environ={}).compact(alpha, budget=2 * alpha.tokens)  # nothing to do
    assert_retains(result)  # every probe of result.original
    assert_retains(result, ["src/app.py", "KeyError: 'user_id'", "pytest tests/test_login.py"])
    assert_retains(result, "src/app.py")
    assert_retains(alpha, original=alpha)
    with pytest.raises(AssertionError) as info:
        assert_retains(result, ["src/app.py", "not/there.py", 'with "quotes"'])
    assert str(info.value).splitlines() == [
        f"working set lost 2 of 3 facts: kept 33.3%, required 100.0% (9 messages, {alpha.tokens:,} tokens)",
        "  text: 'not/there.py'",
        "  text: 'with \"quotes\"'",
        "  kept by kind: text 1/3",
    ]
    assert_retains(result, ["src/app.py", "not/there.py"], min_share=0.5)


def test_assert_retains_lost_probes(alpha: Conversation) -> None:
    working = alpha.slice(3)  # without the ask and the read of src/app.py
    facts = metrics.probes(alpha)
    kept = metrics.retention(facts, working)
    assert kept.lost and kept.kept
    with pytest.raises(AssertionError) as info:
        assert_retains(working, original=alpha)
    text = str(info.value)
    assert text.startswith(f"working set lost {len(kept.lost)} of {kept.total} facts: kept {kept.share:.1%}")
    for p in kept.lost:
        assert f"  {p.kind}: '{p.text[:20]}" in text
    assert "  user_path: 'src/app.py' (message 1)" in text  # where it first appears, not the last message
    messages = alpha.to_jsonl()
    located = [p for p in facts if p.kind in ("user_path", "call_path", "identifier", "test")]
    assert located
    for p in located:  # each fact is reported at the first message that holds it (for its kind)
        holds = [
            i
            for i, m in enumerate(messages)
            if p.text in "\n".join(message_texts(m))
            and (p.kind not in ("user_path", "call_path") or (m["role"] == "user") == (p.kind == "user_path"))
        ]
        assert p.index == holds[0], p
    assert_retains(working, original=alpha, min_share=kept.share)
    assert_retains(working, facts, min_share=kept.share)
    path_kept, path_total = kept.by_kind["user_path"]
    with pytest.raises(AssertionError, match=f"kept by kind: user_path {path_kept}/{path_total}, call_path"):
        assert_retains(working, original=alpha, kinds="path")  # a group: user_path and call_path
    assert_retains(working, [p for p in facts if p not in kept.lost], kinds=["path", "exception"])
    with pytest.raises(OptionError, match="unknown probe kinds"):
        assert_retains(working, original=alpha, kinds=["paths"])
    with pytest.raises(OptionError, match="min_share"):
        assert_retains(working, original=alpha, min_share=2)
    with pytest.raises(TypeError, match="needs facts"):
        assert_retains(alpha)
    with pytest.raises(TypeError, match=r"a fact is a string or a metrics\.Probe"):
        assert_retains(alpha, [1])  # type: ignore[list-item]


def test_assert_retains_default_original_of_a_result(alpha: Conversation) -> None:
    result = compacted(alpha, "pi", 0.2)
    kept = metrics.retention(metrics.probes(alpha), result.conversation)
    assert_retains(result, min_share=kept.share)
    if kept.lost:
        with pytest.raises(AssertionError, match=f"lost {len(kept.lost)} of {kept.total} facts"):
            assert_retains(result)
    else:
        assert_retains(result)


def test_assert_retains_lists_at_most_twenty(alpha: Conversation) -> None:
    with pytest.raises(AssertionError) as info:
        assert_retains(alpha, [f"missing-{i}" for i in range(25)])
    lines = str(info.value).splitlines()
    assert lines[20] == "  text: 'missing-19'"
    assert lines[21] == "  ... and 5 more"


def test_assert_cache_stable(alpha: Conversation) -> None:
    limit = alpha.tokens // 2
    rep = metrics.replay(alpha, Compactor(metrics.replay_policy(PRESETS["openharness"].compaction, limit), environ={}))
    assert rep.compactions and rep.cache_stability < 0.99
    assert_cache_stable(alpha, "openharness", "50%", min_share=rep.cache_stability)
    assert_cache_stable(alpha, "openharness", limit, min_share=0.0)
    with pytest.raises(AssertionError) as info:
        assert_cache_stable(alpha, "openharness", "50%", min_share=0.99)
    lines = str(info.value).splitlines()
    assert lines[0] == (
        f"prompt cache stability {rep.cache_stability:.1%} < required 99.0% with openharness under {limit:,} tokens: "
        f"{len(rep.compactions)} compactions in {rep.turns} calls"
    )
    call = rep.compactions[-1]
    r, p = rep.request_tokens[call], rep.prefix_tokens[call]
    assert f"  call {call}: {p:,} of {r:,} tokens cached ({p / r:.0%}) after a compaction" in lines
    with pytest.raises(OptionError, match="unknown strategy"):
        assert_cache_stable(alpha, "nope", min_share=0.5)
