"""What ``NoemaRunRecorder`` costs per run: a fake-model tool loop with and without it.

    python -m benchmarks.recorder_overhead --runs 100 --output docs/benchmarks.md \
        --results benchmarks/results

The agent is the tool loop of ``tests/test_recorder.py``: a fake chat model asks
for ``add``, then ``divide``, then answers (three model turns, two tool calls),
in a ``RunnableLambda``. On a fresh SQLite mind per embedder (none, and the base
install's ``e5``), ``--runs`` rounds (after ``--warmup``) each run the loop under
``invoke`` without the recorder, with it, and with it but ``Mind.record_episode``
skipped (the callbacks alone), then the same under ``ainvoke``. Reports the
median wall time per run of each, the per-run overhead (difference of the
medians), the median time inside ``Mind.record_episode`` and its share of the
overhead, and the cost of the callbacks alone.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import sys
import tempfile
import time
from typing import Any

from benchmarks.report import add_options, save, section, write_section

BEGIN, END = "<!-- recorder:begin -->", "<!-- recorder:end -->"
EMBEDDERS = ("none", "e5")
MODES = ("invoke", "ainvoke")
#: What each round measures: runs without the recorder, with it, with it but no write,
#: and the write itself.
KINDS = ("without", "with", "callbacks", "write")


def make_agent() -> Any:
    """A model → tools → model loop over a fake model that cycles through three turns."""
    from langchain_core.language_models import FakeMessagesListChatModel
    from langchain_core.messages import AIMessage, ToolMessage
    from langchain_core.runnables import RunnableLambda
    from langchain_core.tools import tool

    @tool
    def add(a: int, b: int) -> int:
        """Add two numbers."""
        return a + b

    @tool
    def divide(a: int, b: int) -> float:
        """Divide a by b."""
        return a / b

    tools = {"add": add, "divide": divide}
    model = FakeMessagesListChatModel(
        responses=[
            AIMessage("", tool_calls=[{"name": "add", "args": {"a": 2, "b": 3}, "id": "c1"}]),
            AIMessage("", tool_calls=[{"name": "divide", "args": {"a": 5, "b": 2}, "id": "c2"}]),
            AIMessage("It is 2.5."),
        ]
    )

    def error(exc: Exception, call: Any) -> ToolMessage:
        return ToolMessage(f"error: {exc}", tool_call_id=call["id"], status="error")

    def loop(messages: list[Any]) -> Any:
        history = list(messages)
        while True:
            ai = model.invoke(history)
            history.append(ai)
            if not ai.tool_calls:
                return ai
            for call in ai.tool_calls:
                try:
                    history.append(tools[call["name"]].invoke(call))
                except Exception as exc:
                    history.append(error(exc, call))

    async def aloop(messages: list[Any]) -> Any:
        history = list(messages)
        while True:
            ai = await model.ainvoke(history)
            history.append(ai)
            if not ai.tool_calls:
                return ai
            for call in ai.tool_calls:
                try:
                    history.append(await tools[call["name"]].ainvoke(call))
                except Exception as exc:
                    history.append(error(exc, call))

    return RunnableLambda(loop, afunc=aloop, name="agent")


def measure(embedder: str, runs: int, warmup: int) -> dict[str, dict[str, float]]:
    """Per call style, median ms per run: without the recorder, with it, with it but
    no write, and inside the write.

    One mind per embedder; each round runs, in turn, ``invoke`` without the recorder,
    with it, and with it but the write skipped, then ``ainvoke`` the same, so a busy
    moment of the machine costs every column alike.
    """
    from langchain_core.messages import HumanMessage

    from noema import Mind
    from noema.integrations.recorder import NoemaRunRecorder

    times: dict[tuple[str, str], list[float]] = {
        (mode, kind): [] for mode in MODES for kind in KINDS
    }
    with tempfile.TemporaryDirectory() as directory:
        mind = Mind.open(f"sqlite:///{directory}/recorder.db", "bench", embedder=embedder)
        try:
            record_episode = mind.record_episode
            writes: list[float] = []
            skip: list[Any] = []  # holds the record to return instead of writing

            def timed(*args: Any, **kwargs: Any) -> Any:
                if skip:
                    return skip[0]
                start = time.perf_counter()
                try:
                    return record_episode(*args, **kwargs)
                finally:
                    writes.append((time.perf_counter() - start) * 1000)

            mind.record_episode = timed  # type: ignore[method-assign]
            recorder = NoemaRunRecorder(mind, role="calculator", agent="bench")
            agent = make_agent()
            task = [HumanMessage("What is (2 + 3) / 2?")]
            loop = asyncio.new_event_loop()

            def once(mode: str, config: dict[str, Any]) -> float:
                start = time.perf_counter()
                if mode == "invoke":
                    agent.invoke(task, config=config)
                else:
                    loop.run_until_complete(agent.ainvoke(task, config=config))
                return (time.perf_counter() - start) * 1000

            recorded = {"callbacks": [recorder]}
            try:
                for i in range(warmup + runs):
                    for mode in MODES:
                        writes.clear()
                        without, with_ = once(mode, {}), once(mode, recorded)
                        skip.append(recorder.episodes[-1])
                        callbacks = once(mode, recorded)
                        skip.clear()
                        if i >= warmup:
                            for kind, value in zip(
                                KINDS, (without, with_, callbacks, *writes), strict=True
                            ):
                                times[mode, kind].append(value)
            finally:
                loop.close()
            expected = 2 * (warmup + runs) * len(MODES)
            if recorder.errors or len(recorder.episodes) != expected:
                raise SystemExit(f"the recorder failed: {recorder.errors[:3]}")
            # Each timed write (every other record: the skipped ones repeat the last) is new.
            if len({record.id for record in recorder.episodes[::2]}) != expected // 2:
                raise SystemExit("runs were merged into one episode: the writes were not timed")
        finally:
            mind.close()
    return {mode: {kind: statistics.median(times[mode, kind]) for kind in KINDS} for mode in MODES}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--runs", type=int, default=100)
    parser.add_argument("--warmup", type=int, default=10)
    parser.add_argument("--embedders", nargs="+", default=list(EMBEDDERS))
    add_options(parser)
    args = parser.parse_args(argv)
    load = os.getloadavg()
    figures = []
    for embedder in args.embedders:
        for mode, r in measure(embedder, args.runs, args.warmup).items():
            figures.append({"embedder": embedder, "call": mode, **r})
            print(figures[-1], file=sys.stderr)
    rows = []
    for f in figures:
        overhead = f["with"] - f["without"]
        share = f["write"] / overhead if overhead > 0 else float("nan")
        rows.append(
            f"| {f['embedder']} | `{f['call']}` | {f['without']:.2f} | {f['with']:.2f} | "
            f"{overhead:.2f} | {f['write']:.2f} | {share:.0%} | "
            f"{f['callbacks'] - f['without']:.2f} |"
        )
    command = f"python -m benchmarks.recorder_overhead --runs {args.runs} --warmup {args.warmup}"
    if args.embedders != list(EMBEDDERS):
        command += " --embedders " + " ".join(args.embedders)
    text = section(
        (BEGIN, END),
        "Recording a LangChain run: the overhead of `NoemaRunRecorder`",
        [
            "A fake-model tool loop (three model turns, two tool calls, in a `RunnableLambda`),",
            f"on a fresh SQLite mind per embedder: {args.runs:,} rounds (after {args.warmup} "
            "of warm-up), each running",
            "the loop under `invoke` without the recorder, with it, and with it but the write",
            "skipped, then the same under `ainvoke`. Milliseconds per run, medians. The",
            "overhead is *with* − *without*; `record_episode` is the median time inside",
            "`Mind.record_episode` (one episode per recorded run) and its share is of the",
            "overhead; *callbacks* is the run with the write skipped − *without*: following",
            "the runs, summarising the calls, building the episode and, under `ainvoke`,",
            "LangChain's hop of each callback to its executor thread.",
        ],
        command,
        [
            "| embedder | call | without | with | overhead | `record_episode` | share "
            "| callbacks |",
            "|---|---|---:|---:|---:|---:|---:|---:|",
            *rows,
            "",
            "- The overhead is the write. Inside it, with no embedder, most of the time is the",
            "  reconciler's write-time detection (`noema.memory.write.detect`), which compares",
            "  each new episode with the most similar memories: here every run's episode is",
            "  alike, a worst case. With `e5` the embedding of the rendered episode comes on top.",
            "- Under `ainvoke` the write runs in LangChain's executor thread, off the event",
            "  loop; the run's `await` still waits for it (the recorder's callbacks are",
            "  awaited), so the latency is the same, but other tasks keep running.",
        ],
        setting=f"; load average {load[0]:.1f} before and {os.getloadavg()[0]:.1f} after",
    )
    print(text)
    if args.output:
        write_section(args.output, text, BEGIN, END)
    save(args.results, "recorder-overhead", command, figures)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
