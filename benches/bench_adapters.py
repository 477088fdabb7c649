"""The adapters in a real agent loop (issue 30): what each call's context hook costs, beside the
hook a LangChain user would write instead, in one run, as ratios.

    python benches/bench_adapters.py              # both frameworks
    python benches/bench_adapters.py --turns 40   # a longer run

A ``create_agent`` agent (and a LangGraph ``create_react_agent`` one) with a fake model that
answers instantly runs ``--turns`` turns of ``--calls`` tool calls each, every tool returning a
file of about 1,000 tokens; the history grows far past the budget. Each variant's hook is timed
on every model call (the hook alone: not the model, not the graph; its thread's CPU time); the figure is the median over
the calls of the second half of the run (the steady state), and the variants run in alternating
rounds (``--rounds``), the median of the rounds' medians reported. Peers:

- ``trim_messages`` (approximate): a middleware (a ``pre_model_hook``) calling LangChain's
  ``trim_messages`` with ``count_tokens_approximately``, ``strategy="last"``, as its docs show;
- ``trim_messages`` (tiktoken): the same with an o200k_base tiktoken counter;
- the same hooks counting approximately (``Budget(encoding="approximate")``), as the
  ``trim_messages`` peers count, beside their exact (o200k_base) default;
- ``SummarizationMiddleware``: LangChain's own, triggered at the budget, keeping 20 messages,
  its summarizer a fake model answering instantly (its ``before_model`` hook timed); it counts
  approximately, so the compacting middleware is also run counting approximately
  (``Budget(encoding="approximate")``) beside its exact (o200k_base) default.

Needs langchain, langgraph and tiktoken (the test extras); Python tiktoken runs offline from the
rank files that ship inside the Rust crates.
"""

from __future__ import annotations

import argparse
import functools
import itertools
import os
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benches"))

import agentcontext as ac

try:
    from langchain.agents import create_agent
    from langchain.agents.middleware import AgentMiddleware, SummarizationMiddleware
    from langchain_core.language_models.fake_chat_models import GenericFakeChatModel
    from langchain_core.messages import AIMessage, BaseMessage, HumanMessage
    from langchain_core.messages import trim_messages as lc_trim
    from langchain_core.messages.utils import count_tokens_approximately
    from langchain_core.tools import tool
except ImportError:
    sys.exit("needs langchain and langgraph: pip install 'agentcontext[langchain,langgraph]'")

from agentcontext.integrations.langchain import AgentContextMiddleware

SYSTEM = "You are a careful reviewer of a large Python code base. " * 20
FILE = "\n".join(f"{k:5d}  def handler_{k}(request, session): return session.load(request.key, {k})" for k in range(55))


@tool
def read_file(path: str) -> str:
    """Read a file."""
    return f"# {path}\n{FILE}"


class FakeModel(GenericFakeChatModel):
    def bind_tools(self, tools: Any, **kwargs: Any) -> FakeModel:
        return self


def script(turns: int, calls: int) -> list[AIMessage]:
    n = itertools.count()
    out = []
    for t in range(turns):
        for _ in range(calls):
            i = next(n)
            out.append(
                AIMessage(
                    f"Reading {i}.", tool_calls=[{"id": f"c{i}", "name": "read_file", "args": {"path": f"m{i}.py"}}]
                )
            )
        out.append(AIMessage(f"Turn {t} done."))
    return out


def tiktoken_counter() -> Callable[[list[BaseMessage]], int]:
    from bench_e2e import langchain_tiktoken_counter, tiktoken_encoding

    return langchain_tiktoken_counter(tiktoken_encoding())


class Timer:
    """The time of each call of a hook: the CPU time of the thread it runs in (a hook runs in one
    thread), so that other processes on a loaded machine do not count."""

    def __init__(self) -> None:
        self.samples: list[float] = []

    def wrap(self, fn: Callable[..., Any]) -> Callable[..., Any]:
        @functools.wraps(fn)  # the signature kept: the frameworks read it to pass runtime, config
        def timed(*args: Any, **kwargs: Any) -> Any:
            t = time.thread_time()
            out = fn(*args, **kwargs)
            self.samples.append(time.thread_time() - t)
            return out

        return timed


class TrimMiddleware(AgentMiddleware):  # type: ignore[type-arg]
    """LangChain's trim_messages as a middleware, the model call's messages trimmed each call."""

    def __init__(self, budget: int, counter: Callable[[list[BaseMessage]], int], timer: Timer) -> None:
        super().__init__()
        self.trim = timer.wrap(
            lambda messages: lc_trim(
                messages,
                max_tokens=budget,
                strategy="last",
                token_counter=counter,
                include_system=True,
                start_on="human",
                end_on=("human", "tool"),
            )
        )

    def wrap_model_call(self, request: Any, handler: Any) -> Any:
        return handler(request.override(messages=self.trim(request.messages)))


def langchain_variant(name: str, budget: int, counter: Any, timer: Timer) -> Any:
    if name == "agentcontext":
        m = AgentContextMiddleware(budget)
        m.compile_request = timer.wrap(m.compile_request)  # type: ignore[method-assign]
        return m
    if name == "agentcontext approximate":
        # Counting as the trim_messages peer does (approximately), not exactly.
        m = AgentContextMiddleware(ac.Budget(budget, encoding="approximate"))
        m.compile_request = timer.wrap(m.compile_request)  # type: ignore[method-assign]
        return m
    if name == "agentcontext compaction":
        m = AgentContextMiddleware(budget, compaction=True)
        m.compile_request = timer.wrap(m.compile_request)  # type: ignore[method-assign]
        return m
    if name == "agentcontext compaction approximate":
        # Counting as SummarizationMiddleware does (approximately), not exactly.
        m = AgentContextMiddleware(ac.Budget(budget, encoding="approximate"), compaction=True)
        m.compile_request = timer.wrap(m.compile_request)  # type: ignore[method-assign]
        return m
    if name == "SummarizationMiddleware":
        summarizer = GenericFakeChatModel(messages=itertools.repeat(AIMessage("The summary so far.")))
        s = SummarizationMiddleware(summarizer, trigger=("tokens", budget), keep=("messages", 20))
        s.before_model = timer.wrap(s.before_model)  # type: ignore[method-assign]
        return s
    return TrimMiddleware(budget, counter, timer)


def run_langchain(name: str, args: argparse.Namespace, counters: dict[str, Any]) -> float:
    timer = Timer()
    middleware = langchain_variant(name, args.budget, counters.get(name), timer)
    model = FakeModel(messages=iter(script(args.turns, args.calls)))
    agent = create_agent(model, [read_file], system_prompt=SYSTEM, middleware=[middleware])
    messages: list[BaseMessage] = []
    for t in range(args.turns):
        messages = agent.invoke({"messages": [*messages, HumanMessage(f"Review group {t}.")]})["messages"]
    steady = timer.samples[len(timer.samples) // 2 :]
    return statistics.median(steady)


def run_langgraph(name: str, args: argparse.Namespace, counters: dict[str, Any]) -> float:
    from langgraph.prebuilt import create_react_agent

    from agentcontext.integrations.langgraph import fit_hook

    timer = Timer()
    if name.startswith("agentcontext fit_hook"):
        budget: Any = ac.Budget(args.budget, encoding="approximate") if name.endswith("approximate") else args.budget
        try:
            hook: Any = fit_hook(budget, prompt=SYSTEM, tools=[read_file])
        except TypeError:  # an agentcontext before issue 30: no prompt= or tools=
            hook = fit_hook(budget)
        inner = hook.func
        hook.func = timer.wrap(inner)
    else:
        counter = counters[name]
        trim = timer.wrap(
            lambda state: {
                "llm_input_messages": lc_trim(
                    state["messages"],
                    max_tokens=args.budget,
                    strategy="last",
                    token_counter=counter,
                    start_on="human",
                    end_on=("human", "tool"),
                )
            }
        )
        hook = trim
    model = FakeModel(messages=iter(script(args.turns, args.calls)))
    agent = create_react_agent(model, [read_file], prompt=SYSTEM, pre_model_hook=hook)
    messages: list[BaseMessage] = []
    for t in range(args.turns):
        messages = agent.invoke({"messages": [*messages, HumanMessage(f"Review group {t}.")]})["messages"]
    return statistics.median(timer.samples[len(timer.samples) // 2 :])


def compare(
    title: str, run: Callable[..., float], variants: list[str], peers: list[tuple[str, str]], args: Any
) -> None:
    if args.no_tiktoken:
        variants = [v for v in variants if "tiktoken" not in v]
        peers = [(a, b) for a, b in peers if "tiktoken" not in b]
    counters = {v: tiktoken_counter() if "tiktoken" in v else count_tokens_approximately for v in variants}
    times: dict[str, list[float]] = {v: [] for v in variants}
    for _ in range(args.rounds):
        for v in variants:  # alternating rounds: every variant once per round
            # Each run starts from a cold count memo, as a new process would: otherwise a variant
            # would find the texts an earlier one counted (the same script) and look faster.
            ac.token_cache_clear()
            times[v].append(run(v, args, counters))
    median = {v: statistics.median(ts) for v, ts in times.items()}
    print(
        f"\n[{title}] {args.turns} turns x {args.calls} tool calls, budget {args.budget:,} tokens, {args.rounds} rounds"
    )
    for v in variants:
        print(f"  {v:<38} {median[v] * 1e3:8.3f} ms per call")
    for ours, peer in peers:
        print(f"  {ours} vs {peer}: {median[peer] / median[ours]:.1f}x")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--turns", type=int, default=30)
    parser.add_argument("--calls", type=int, default=4)
    parser.add_argument("--budget", type=int, default=16_000)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--no-tiktoken", action="store_true", help="leave out the (slow) tiktoken peers")
    parser.add_argument("frameworks", nargs="*", choices=["langchain", "langgraph", []], default=[])
    args = parser.parse_args()
    print(f"agentcontext {ac.__version__}, Python {sys.version.split()[0]}, {os.cpu_count()} cores")
    frameworks = args.frameworks or ["langchain", "langgraph"]
    if "langchain" in frameworks:
        approx, tik = "trim_messages approximate", "trim_messages tiktoken"
        compare(
            "LangChain create_agent middleware",
            run_langchain,
            [
                "agentcontext",
                "agentcontext approximate",
                approx,
                tik,
                "agentcontext compaction",
                "agentcontext compaction approximate",
                "SummarizationMiddleware",
            ],
            [
                ("agentcontext", approx),
                ("agentcontext approximate", approx),
                ("agentcontext", tik),
                ("agentcontext compaction", "SummarizationMiddleware"),
                ("agentcontext compaction approximate", "SummarizationMiddleware"),
            ],
            args,
        )
    if "langgraph" in frameworks:
        approx, tik = "pre_model_hook trim_messages approximate", "pre_model_hook trim_messages tiktoken"
        compare(
            "LangGraph create_react_agent pre_model_hook",
            run_langgraph,
            ["agentcontext fit_hook", "agentcontext fit_hook approximate", approx, tik],
            [
                ("agentcontext fit_hook", approx),
                ("agentcontext fit_hook approximate", approx),
                ("agentcontext fit_hook", tik),
            ],
            args,
        )


if __name__ == "__main__":
    main()
