"""First use of the compiled core from threads that exit, each in a fresh interpreter.

The core allocates through mimalloc. A thread that touches it first and then exits once took the
allocator's "main thread" state with it, and the next thread that reused its id (glibc recycles
thread stacks) crashed the process with SIGSEGV. Each case runs in its own process because the
bug needs a core that no thread has used yet, and because a crash must fail the test, not the run.
"""

from __future__ import annotations

import subprocess
import sys
import textwrap

import pytest

CASES = {
    "threads that exit": """
        import threading
        for _ in range(8):
            t = threading.Thread(target=lambda: ac.count_tokens("hello world " * 10))
            t.start(); t.join()
    """,
    "count_tokens_batch in threads": """
        import threading
        for _ in range(8):
            t = threading.Thread(target=lambda: ac.count_tokens_batch(["a b c"] * 50))
            t.start(); t.join()
    """,
    "cl100k in threads": """
        import threading
        for _ in range(8):
            t = threading.Thread(target=lambda: ac.count_tokens("hello " * 10, encoding="cl100k_base"))
            t.start(); t.join()
    """,
    "Conversation in threads": """
        import threading
        def work():
            conv = ac.Conversation([{"role": "user", "content": "hi " * 100}])
            conv.append({"role": "assistant", "content": "hello"})
            assert conv.tokens > 0
        for _ in range(8):
            t = threading.Thread(target=work); t.start(); t.join()
    """,
    "a thread after an executor shut down": """
        import threading
        from concurrent.futures import ThreadPoolExecutor
        with ThreadPoolExecutor(4) as pool:
            assert all(n > 0 for n in pool.map(ac.count_tokens, ["x y z"] * 40))
        t = threading.Thread(target=lambda: ac.count_tokens("after the pool")); t.start(); t.join()
        with ThreadPoolExecutor(2) as pool:
            list(pool.map(ac.count_tokens, ["again"] * 10))
    """,
    "asyncio.to_thread": """
        import asyncio
        async def main():
            for _ in range(8):
                assert await asyncio.to_thread(ac.count_tokens, "from a worker thread") > 0
        asyncio.run(main())
    """,
    "16 threads at first use": """
        import threading
        barrier = threading.Barrier(16)
        def work(i):
            barrier.wait()
            ac.count_tokens(f"thread {i} " * 20)
            ac.Conversation([{"role": "user", "content": "x"}]).tokens
        for _ in range(3):
            threads = [threading.Thread(target=work, args=(i,)) for i in range(16)]
            for t in threads: t.start()
            for t in threads: t.join()
    """,
    "the first count on a thread that exits, then the main thread": """
        import threading
        t = threading.Thread(target=lambda: ac.count_tokens("first use here")); t.start(); t.join()
        for _ in range(8):
            t = threading.Thread(target=lambda: ac.count_tokens("later thread")); t.start(); t.join()
        ac.count_tokens("main thread")
        ac.Conversation([{"role": "user", "content": "and a conversation"}]).tokens
    """,
    # A handoff scan is freed on the core's thread pool: from threads that exit, and pending
    # while the interpreter exits.
    "handoff scans freed from threads that exit, and at exit": """
        import threading
        from agentcontext._core import HandoffScan
        messages = [{"role": "user", "content": f"fix src/m{i}.py"} for i in range(400)]
        conv = ac.Conversation(messages)
        def work():
            for _ in range(20):
                scan = HandoffScan(conv, 0)
                assert scan.handoff()["messages"] == 400
                del scan
        for _ in range(6):
            t = threading.Thread(target=work); t.start(); t.join()
        leftover = [HandoffScan(conv, 0) for _ in range(50)]
        for s in leftover: s.ledger_handoff()
        del leftover
    """,
    # A handoff made ahead on the pool (HandoffScan._facts_ahead) whose scan is freed, by a
    # thread that exits, before or while it is made; and one left in flight at exit.
    "handoffs made ahead, their scans freed first, and at exit": """
        import threading
        from agentcontext._core import HandoffScan
        messages = [{"role": "user", "content": f"fix src/m{i}.py"} for i in range(400)]
        messages += [{"role": "assistant", "content": f"I'll edit src/m{i}.py"} for i in range(400)]
        conv = ac.Conversation(messages)
        def work():
            for k in range(20):
                scan = HandoffScan(conv, 0)
                scan.ledger_handoff(700)
                scan._facts_ahead(700)
                if k % 2:
                    assert scan._facts(700).handoff()["messages"] == 700
                del scan
        for _ in range(6):
            t = threading.Thread(target=work); t.start(); t.join()
        leftover = [HandoffScan(conv, 0) for _ in range(30)]
        for s in leftover:
            s.ledger_handoff(); s._facts_ahead()
    """,
}


@pytest.mark.parametrize("name", list(CASES))
def test_first_use_from_threads_does_not_crash(name: str) -> None:
    code = "import agentcontext as ac\n" + textwrap.dedent(CASES[name]) + "\nprint('done')\n"
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=False)
    assert proc.returncode == 0, f"{name}: exit {proc.returncode}\n{proc.stderr[-2000:]}"
    assert proc.stdout.strip().endswith("done")


FORKED = """
import multiprocessing as mp
import agentcontext as ac
from agentcontext._core import HandoffScan

messages = []
for i in range(300):
    messages.append({"role": "assistant", "content": None, "tool_calls": [
        {"id": f"c{i}", "type": "function", "function": {"name": "bash", "arguments": '{"cmd": "pytest"}'}}]})
    messages.append({"role": "tool", "tool_call_id": f"c{i}", "content": f"FAILED test_{i} AssertionError"})
conv = ac.Conversation(messages)
texts = ["x" * 100_000] * 8

def work(q):
    HandoffScan(conv, 0).handoff()
    conv.handoff(0, None)
    ac.count_tokens_batch(texts)
    q.put("ok")

# The parent uses the pool first: its threads do not exist in a forked child.
work(mp.Queue())
ctx = mp.get_context("fork")
for _ in range(2):
    q = ctx.Queue()
    p = ctx.Process(target=work, args=(q,), daemon=True)
    p.start()
    p.join(60)
    if p.is_alive():
        p.kill()
        raise SystemExit("the forked child hung")
    assert p.exitcode == 0 and q.get(timeout=5) == "ok"
print("done")
"""


def test_parallel_work_in_a_forked_child_does_not_hang() -> None:
    """A child forked after the core's thread pool was used (``multiprocessing``'s default start
    method on Linux before Python 3.14) builds a pool of its own: the parent's threads are not in
    it, and work handed to them waited for ever."""
    proc = subprocess.run([sys.executable, "-c", FORKED], capture_output=True, text=True, timeout=180, check=False)
    assert proc.returncode == 0, f"exit {proc.returncode}\n{proc.stderr[-2000:]}"
    assert proc.stdout.strip().endswith("done")


FORK_DURING_FIRST_USE = """
import os, signal, sys, threading
from agentcontext import count_tokens_batch

texts = ["x" * 1000] * 64
hung = 0
for _ in range(12):
    pid = os.fork()
    if pid == 0:
        # A fresh process: no encoding built, no pool. One thread starts counting (building
        # o200k_base and the pool) while this one forks at once.
        t = threading.Thread(target=count_tokens_batch, args=(texts,))
        t.start()
        child = os.fork()
        if child == 0:
            signal.alarm(20)  # a child that waits for ever is killed: counted as hung
            count_tokens_batch(texts)
            os._exit(0)
        _, status = os.waitpid(child, 0)
        t.join()
        os._exit(0 if os.WIFEXITED(status) and os.WEXITSTATUS(status) == 0 else 3)
    _, status = os.waitpid(pid, 0)
    hung += os.WEXITSTATUS(status) != 0
print("hung", hung)
"""


def test_a_fork_while_another_thread_builds_the_encoding_does_not_hang_the_child() -> None:
    """``os.fork`` while another thread is building an encoding (or the core's pool) gave a
    child whose first count waited for ever on a build no thread of its own was doing (38 of 40
    such forks hung). The core now holds its shared locks across each fork
    (``os.register_at_fork``): the fork waits for the build, and the child finds it done."""
    proc = subprocess.run(
        [sys.executable, "-c", FORK_DURING_FIRST_USE], capture_output=True, text=True, timeout=600, check=False
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert proc.stdout.strip() == "hung 0"


FORK_WHILE_OTHERS_HOLD_THE_GIL = """
import os, threading, time
import agentcontext as ac
from agentcontext import _core

msgs = [
    {"role": "user", "content": "hello " * 20},
    {"role": "assistant", "content": None,
     "tool_calls": [{"id": "c1", "type": "function", "function": {"name": "read", "arguments": "{}"}}]},
    {"role": "tool", "tool_call_id": "c1", "content": "x " * 400},
    {"role": "user", "content": "next"},
] * 3
stop = False

def work(f):
    while not stop:
        f()

for f in (_core.token_cache_info, _core.token_cache_clear, lambda: ac.trim_messages(msgs, 200)):
    threading.Thread(target=work, args=(f,), daemon=True).start()
t0 = time.time()
while time.time() - t0 < 3:
    pid = os.fork()
    if pid == 0:
        os._exit(0)
    os.waitpid(pid, 0)
stop = True
print("done")
"""


def test_a_fork_while_other_threads_call_the_core_does_not_hang_the_parent() -> None:
    """The fork hook takes the core's locks without the GIL, then waits for the GIL: a thread
    that took the GIL meanwhile and waits for one of those locks with it held (the fast path's
    placeholder memo, ``token_cache_info``, ``token_cache_clear``) deadlocked the forking process."""
    try:
        proc = subprocess.run(
            [sys.executable, "-W", "ignore", "-c", FORK_WHILE_OTHERS_HOLD_THE_GIL],
            capture_output=True, text=True, timeout=60, check=False,
        )  # fmt: skip
    except subprocess.TimeoutExpired:
        pytest.fail("os.fork hung while other threads called the core")
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert proc.stdout.strip() == "done"
