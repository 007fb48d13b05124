"""Chat turn: the loop's own time per turn of a conversation, the model's apart.

    python -m benchmarks.chat_turn --memories 10000 --turns 300 --output docs/benchmarks.md \
        --results benchmarks/results

A SQLite store holds ``--memories`` synthetic memories (the storage benchmark's)
with the deterministic 384-d hash embedder's vectors (e5's width; e5 itself
would add its query time, timed in the semantic section, to each of the four
embeddings a turn makes). Each turn says a new one of the storage benchmark's
queries (one said before is reinforced, not written: cheaper) to the mind
through a chat model that answers at once with a new sentence (a fake, which
converts the tools it is given to their schemas, as a provider's model does),
so a turn's time is the loop's: the user's words logged and remembered,
retrieve's recall, the speaker's recall and prompt, the tools bound, the reply
remembered, two cycles' events and snapshots committed. Turns run through one
open ``Conversation`` (``say``), then through one-shot ``Mind.chat``, which opens
and closes a conversation around each turn. The model's own time is measured
and taken out of each turn; wall and CPU time (the process's, every thread's)
are both reported.

Target: p95 of a turn through an open conversation at most ``TARGET_P95_MS``.
"""

from __future__ import annotations

import argparse
import shlex
import statistics
import sys
import tempfile
import time
from typing import Any

from benchmarks.report import add_options, save, section, verdict, write_section
from benchmarks.storage import _percentile, synthetic_memories, synthetic_queries

BEGIN, END = "<!-- chat-turn:begin -->", "<!-- chat-turn:end -->"
EMBEDDER = "hash:384"
#: The longest the loop may take for one turn at 10,000 memories (p95, the model apart).
TARGET_P95_MS = 50.0
TARGET_SIZE = 10_000
FIGURES = ("p50", "p95", "cpu_p50", "cpu_p95")
#: Turns said first and not timed (the store's caches, the model's tool schemas).
WARM = 20


def instant_model() -> Any:
    """A chat model that answers at once with a new sentence each call, and times itself."""
    from langchain_core.language_models.fake_chat_models import FakeMessagesListChatModel
    from langchain_core.messages import AIMessage, BaseMessage
    from langchain_core.outputs import ChatGeneration, ChatResult
    from langchain_core.utils.function_calling import convert_to_openai_tool
    from pydantic import Field

    class Instant(FakeMessagesListChatModel):
        spent: list[float] = Field(default_factory=list)

        def bind_tools(self, tools: Any, **kwargs: Any) -> Any:
            return self.bind(tools=[convert_to_openai_tool(tool) for tool in tools])

        def _generate(self, messages: list[BaseMessage], *args: Any, **kwargs: Any) -> ChatResult:
            started = time.perf_counter()
            self.i += 1
            answer = AIMessage(f"Noted, and this is answer {self.i}.")
            self.spent.append(time.perf_counter() - started)
            return ChatResult(generations=[ChatGeneration(message=answer)])

    return Instant(responses=[])


def messages(n: int, skip: int = 0) -> list[str]:
    """``n`` distinct user messages (the storage benchmark's queries), after the first ``skip``.

    A message said before would be reinforced, not written: cheaper than a new one.
    """
    seen: dict[str, None] = {}
    draw = 1
    while len(seen) < skip + n:
        seen.update(dict.fromkeys(synthetic_queries(draw=draw)))
        draw += 1
    return list(seen)[skip : skip + n]


def _times(say: Any, model: Any, texts: list[str]) -> tuple[list[float], list[float]]:
    """Milliseconds of each ``say(text)``, less the model's own time: wall, and CPU.

    CPU time is the process's, every thread's: the loop's cost whatever else
    the machine runs.
    """
    wall, cpu = [], []
    for text in texts:
        model.spent.clear()
        started, started_cpu = time.perf_counter(), time.process_time()
        reply = say(text)
        elapsed = time.perf_counter() - started - sum(model.spent)
        elapsed_cpu = time.process_time() - started_cpu - sum(model.spent)
        if reply.text is None:
            raise SystemExit(f"chat_turn: a turn failed: {'; '.join(reply.failures)}")
        wall.append(elapsed * 1000)
        cpu.append(elapsed_cpu * 1000)
    return wall, cpu


def run(memories: int, turns: int) -> dict[str, Any]:
    """Seed a store, then time ``turns`` turns each way; the figures."""
    from concepts import MemoryInput
    from noema import Mind
    from noema.config import MindConfig

    warm, texts, others = messages(WARM), messages(turns, WARM), messages(turns, WARM + turns)
    with tempfile.TemporaryDirectory() as tmp:
        url = f"sqlite:///{tmp}/chat.db"
        config = MindConfig(embed_inline_max=1_000_000)
        with Mind.open(url, "bench", embedder=EMBEDDER, config=config) as mind:
            items = [MemoryInput.model_validate(d) for d in synthetic_memories(memories)]
            mind.remember_many(items, batch_size=5_000)
            model = instant_model()
            with mind.conversation(chat_model=model, name="open") as talk:
                _times(talk.say, model, warm)
                open_ms, open_cpu = _times(talk.say, model, texts)
                cycles = talk.workspace.ctx.cycle

            def chat(text: str) -> Any:
                return mind.chat(text, chat_model=model, conversation="one-shot")

            chat_ms, chat_cpu = _times(chat, model, others)
    return {
        "memories": memories,
        "turns": turns,
        "embedder": EMBEDDER,
        "cycles_per_turn": cycles / (len(warm) + turns),
        **_figures("open", open_ms, open_cpu),
        **_figures("chat", chat_ms, chat_cpu),
    }


def _figures(name: str, wall: list[float], cpu: list[float]) -> dict[str, float]:
    return {
        f"{name}_p50_ms": statistics.median(wall),
        f"{name}_p95_ms": _percentile(wall, 0.95),
        f"{name}_cpu_p50_ms": statistics.median(cpu),
        f"{name}_cpu_p95_ms": _percentile(cpu, 0.95),
    }


def _row(label: str, result: dict[str, Any], name: str) -> str:
    cells = [f"{result[f'{name}_{figure}_ms']:.2f} ms" for figure in FIGURES]
    return f"| {label} | {' | '.join(cells)} |"


def render(result: dict[str, Any], command: str) -> str:
    p95 = result["open_p95_ms"]
    return section(
        (BEGIN, END),
        "Chat turn: the loop's time per turn, the model apart",
        [
            f"A SQLite store of {result['memories']:,} synthetic memories with hash vectors",
            f"({result['embedder']}); {result['turns']} turns, each a new one of the storage",
            "benchmark's queries, answered at once by a fake chat model (its time taken out).",
            "A turn: the words logged and remembered, retrieve's and the speaker's recalls, the",
            "prompt, the memory tools bound, the reply remembered, two cycles committed",
            f"({result['cycles_per_turn']:.1f} cycles a turn). `Mind.chat` opens and closes a",
            "conversation around each turn. CPU: the process's CPU time in the turn, every",
            "thread's (what the turn costs, whatever else the machine runs).",
        ],
        command,
        [
            "| turns through | p50 | p95 | CPU p50 | CPU p95 |",
            "|---|---:|---:|---:|---:|",
            _row("an open `Conversation` (`say`)", result, "open"),
            _row("one-shot `Mind.chat`", result, "chat"),
        ],
        [
            f"Target at {TARGET_SIZE:,} memories: a turn through an open conversation at most "
            f"{TARGET_P95_MS:.0f} ms (p95): {p95:.2f} ms, "
            + verdict(p95, TARGET_P95_MS, most=True, unit=" ms", digits=2)
        ],
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--memories", type=int, default=TARGET_SIZE)
    parser.add_argument("--turns", type=int, default=300)
    add_options(parser)
    args = parser.parse_args(argv)
    if args.memories < 1 or args.turns < 1:
        print("chat_turn: --memories and --turns must be at least 1", file=sys.stderr)
        return 2
    result = run(args.memories, args.turns)
    command = shlex.join(
        [
            "python",
            "-m",
            "benchmarks.chat_turn",
            "--memories",
            str(args.memories),
            "--turns",
            str(args.turns),
        ]
    )
    text = render(result, command)
    print(text)
    if args.output:
        write_section(args.output, text, BEGIN, END)
    save(args.results, "chat-turn", command, [result])
    return 0


if __name__ == "__main__":
    sys.exit(main())
