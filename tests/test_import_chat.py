"""``noema import-chat`` and ``Mind.import_chat``: a user's chat history as memories.

Real exports of each format are written to files and imported into real stores:
times, threads and order are read back from the store, credentials are looked
for in the database file's bytes, and a bad file must leave the store as it was.
"""

from __future__ import annotations

import io
import json
import os
import subprocess
import sys
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from concepts import Channel, Epistemic, Memory, MemoryKind
from concepts.models import MAX_CONTENT_CHARS
from noema import InvalidInput, Mind, MindConfig, PolicyViolation, WritePolicy
from noema.cli import _render as render, run
from noema.memory.write.chat_exports import parse_chat_export

T0 = datetime(2024, 3, 1, 9, 0, tzinfo=UTC)
# Credentials as the write policy finds them (noema/memory/write/secrets.py), built
# from parts so that no scanner mistakes this file for a leak.
OPENAI_KEY = "sk-" + "proj-" + "Qx7Lm2Np9Rt4Vw8Yz3Bc6Df1Gh5Jk0Ms"
AWS_KEY = "AKIA" + "Z7Q4M2XK9PLR3TWB"
COUNTRIES = ("Portugal", "Norway", "Chile", "Kenya", "Japan", "Canada", "Peru", "Ghana")


def _memories(mind: Mind) -> list[Memory]:
    return mind.timeline(limit=10_000)


def _by_thread(mind: Mind) -> dict[str, list[Memory]]:
    threads: dict[str, list[Memory]] = {}
    for memory in _memories(mind):
        threads.setdefault(memory.thread, []).append(memory)
    return {t: sorted(ms, key=lambda m: (m.position or 0, m.id)) for t, ms in threads.items()}


def _node(
    node_id: str,
    role: str | None,
    text: str | None,
    at: datetime | None,
    parent: str | None,
    children: list[str],
    **message: Any,
) -> dict[str, Any]:
    if role is None:
        return {"id": node_id, "message": None, "parent": parent, "children": children}
    content = message.pop("content", {"content_type": "text", "parts": [text]})
    return {
        "id": node_id,
        "message": {
            "id": node_id,
            "author": {"role": role, "name": None, "metadata": {}},
            "create_time": None if at is None else at.timestamp(),
            "content": content,
            "status": "finished_successfully",
            "recipient": "all",
            **message,
        },
        "parent": parent,
        "children": children,
    }


def chatgpt_conversation(cid: str, title: str, said: list[tuple[str, str, datetime]]) -> Any:
    """A ChatGPT conversation of ``said`` (role, text, time), as the export writes one.

    Beside the messages kept it holds a hidden system message, a regenerated reply
    edited away (a branch off the first answer) and a tool call with its output.
    """
    mapping: dict[str, Any] = {}
    ids = ["root", "system", *(f"{cid}-m{i}" for i in range(len(said)))]
    mapping["root"] = _node("root", None, None, None, None, ["system"])
    mapping["system"] = _node(
        "system",
        "system",
        "",
        None,
        "root",
        [ids[2]],
        metadata={"is_visually_hidden_from_conversation": True},
    )
    for index, (role, text, at) in enumerate(said):
        node_id, parent = ids[index + 2], ids[index + 1]
        children = [ids[index + 3]] if index + 3 < len(ids) else []
        mapping[node_id] = _node(node_id, role, text, at, parent, children)
    # The first answer was regenerated: the old one hangs off the first message, edited away.
    first, answer = ids[2], ids[3]
    mapping[first]["children"] = [f"{cid}-old", answer]
    mapping[f"{cid}-old"] = _node(
        f"{cid}-old", "assistant", f"an answer edited away in {cid}", said[1][2], first, []
    )
    # A tool call and its output: neither is kept.
    last = ids[-1]
    mapping[last]["children"] = [f"{cid}-call"]
    mapping[f"{cid}-call"] = _node(
        f"{cid}-call",
        "assistant",
        None,
        said[-1][2],
        last,
        [f"{cid}-out"],
        content={"content_type": "code", "language": "python", "text": "print(1)"},
        recipient="python",
    )
    mapping[f"{cid}-out"] = _node(
        f"{cid}-out",
        "tool",
        None,
        said[-1][2],
        f"{cid}-call",
        [],
        content={"content_type": "execution_output", "text": "1"},
    )
    return {
        "title": title,
        "create_time": said[0][2].timestamp(),
        "update_time": said[-1][2].timestamp(),
        "mapping": mapping,
        "current_node": f"{cid}-out",
        "id": cid,
        "conversation_id": cid,
        "default_model_slug": "gpt-4o",
    }


def chatgpt_export(messages: int, conversations: int) -> tuple[list[Any], list[list[str]]]:
    """An export of ``messages`` kept messages in ``conversations``; and each one's texts."""
    export: list[Any] = []
    texts: list[list[str]] = []
    per = messages // conversations
    for c in range(conversations):
        count = per if c < conversations - 1 else messages - per * (conversations - 1)
        start = T0 + timedelta(days=c)
        said = [
            (
                "user" if i % 2 == 0 else "assistant",
                f"note {c}-{i}: trip {i} through {COUNTRIES[(c + i) % len(COUNTRIES)]} "
                f"{'asked' if i % 2 == 0 else 'answered'} in chat {c}",
                start + timedelta(minutes=i, seconds=c),
            )
            for i in range(count)
        ]
        export.append(chatgpt_conversation(f"conv-{c}", f"Travel plans {c}", said))
        texts.append([text for _, text, _ in said])
    return export, texts


def _write(path: Path, value: Any) -> Path:
    path.write_text(json.dumps(value), encoding="utf-8")
    return path


# ---------------------------------------------------------------- ChatGPT, 1,000 messages


def test_a_chatgpt_export_of_a_thousand_messages_keeps_times_and_order(
    open_mind: Callable[..., Mind], tmp_path: Path
) -> None:
    export, texts = chatgpt_export(1_000, conversations=7)
    path = _write(tmp_path / "conversations.json", export)
    mind = open_mind()
    done: list[tuple[int, int]] = []

    report = mind.import_chat(str(path), progress=lambda d, t: done.append((d, t)))

    assert (report.format, report.conversations, report.messages) == ("chatgpt", 7, 1_000)
    assert report.memories == 1_000 and report.redacted == 0
    assert report.skipped == 7 * 3  # the hidden system message, the tool call, its output
    assert done[-1] == (1_000, 1_000)
    threads = _by_thread(mind)
    assert set(threads) == {f"chat:conv-{c}" for c in range(7)}
    for c, expected in enumerate(texts):
        thread = threads[f"chat:conv-{c}"]
        assert [m.content for m in thread] == expected  # conversation order
        assert [m.position for m in thread] == list(range(1, len(expected) + 1))
        for i, memory in enumerate(thread):
            assert memory.valid_from == T0 + timedelta(days=c, minutes=i, seconds=c)
            assert (memory.kind, memory.epistemic) == (MemoryKind.EPISODIC, Epistemic.OBSERVATION)
            role = "user" if i % 2 == 0 else "assistant"
            assert memory.channel == (Channel.USER if role == "user" else Channel.SOURCE)
            assert memory.tags == ("chat", "chatgpt", role)
            assert memory.payload["chat"] == {
                "format": "chatgpt",
                "conversation": f"conv-{c}",
                "role": role,
                "title": f"Travel plans {c}",
                "message": f"conv-{c}-m{i}",
            }
    assert not [m for m in _memories(mind) if "edited away" in m.content]
    assert mind.verify().ok


def test_recall_finds_an_imported_message(open_mind: Callable[..., Mind], tmp_path: Path) -> None:
    export, _ = chatgpt_export(1_000, conversations=5)
    said = [
        ("user", "My sister Ines is getting married in Porto next June", T0),
        ("assistant", "Congratulations to her! Do you need help planning the trip?", T0),
    ]
    export.append(chatgpt_conversation("family", "Wedding", said))
    mind = open_mind(embedder="hash:256")
    assert mind.import_chat(_write(tmp_path / "c.json", export)).messages == 1_002
    assert mind.wait_for_embeddings(timeout=120)

    [found] = mind.recall("when is Ines getting married", limit=1)
    assert found.memory.content == said[0][1]
    assert found.memory.thread == "chat:family"
    assert found.components["vector"] > 0


def test_recall_finds_a_message_by_its_meaning(
    open_mind: Callable[..., Mind], tmp_path: Path
) -> None:
    """With the packaged model: the question shares no word with the message."""
    lines = [
        {"role": "user", "content": "My dog Biscuit chews every shoe in the flat", "time": 1},
        {"role": "assistant", "content": "Try giving him a chew toy instead", "time": 2},
        {"role": "user", "content": "The quarterly tax return is due on Friday", "time": 3},
        {"role": "user", "content": "I bought a bicycle to commute to the office", "time": 4},
        {"role": "user", "content": "We repainted the kitchen a pale green colour", "time": 5},
    ]
    path = tmp_path / "history.jsonl"
    path.write_text("".join(json.dumps(line) + "\n" for line in lines), encoding="utf-8")
    mind = open_mind(embedder="e5")
    mind.import_chat(path)
    assert mind.wait_for_embeddings(timeout=120)

    results = mind.recall("which pet do I have at home?", limit=1)
    assert [r.memory.content for r in results] == [lines[0]["content"]]


def test_without_a_current_node_the_longest_chain_is_followed(mind: Mind) -> None:
    said = [("user", "first question", T0), ("assistant", "first answer", T0)]
    said += [("user", "second question", T0), ("assistant", "second answer", T0)]
    conversation = chatgpt_conversation("c", "No head", said)
    del conversation["current_node"]
    # The edited-away branch (one message) is shorter than the kept path.
    report = mind.import_chat(io.BytesIO(json.dumps([conversation]).encode()))
    assert [m.content for m in _by_thread(mind)["chat:c"]] == [t for _, t, _ in said]
    assert report.messages == 4


def test_a_message_longer_than_a_memory_is_kept_in_parts(mind: Mind) -> None:
    long = " ".join(f"word{i}" for i in range(MAX_CONTENT_CHARS // 5))
    lines = [
        {"role": "user", "content": long, "time": "2024-01-01T10:00:00Z"},
        {"role": "assistant", "content": "that was long", "time": "2024-01-01T10:01:00Z"},
    ]
    data = "\n".join(json.dumps(line) for line in lines)
    report = mind.import_chat(io.StringIO(data))
    thread = _by_thread(mind)["chat:chat"]
    assert (report.messages, report.memories) == (2, 3)
    assert all(len(m.content) <= MAX_CONTENT_CHARS for m in thread)
    assert " ".join(m.content for m in thread[:2]) == long
    assert [m.payload["chat"].get("part") for m in thread] == [1, 2, None]
    assert [m.content for m in thread][-1] == "that was long"


# ---------------------------------------------------------------- Claude and JSONL


def test_a_claude_export(mind: Mind, tmp_path: Path) -> None:
    export = [
        {
            "uuid": "5b8d-claude",
            "name": "Sourdough",
            "created_at": "2024-05-02T08:00:00.000000Z",
            "updated_at": "2024-05-02T08:10:00.000000Z",
            "account": {"uuid": "acct"},
            "chat_messages": [
                {
                    "uuid": "m1",
                    "sender": "human",
                    "text": "How long should my sourdough starter rest?",
                    "content": [{"type": "text", "text": "How long should my sourdough rest?"}],
                    "created_at": "2024-05-02T08:00:05.000000Z",
                    "attachments": [],
                    "files": [],
                },
                {
                    "uuid": "m2",
                    "sender": "assistant",
                    "text": "",
                    "content": [
                        {"type": "text", "text": "Rest it for twelve hours."},
                        {"type": "tool_use", "name": "search", "input": {}},
                        {"type": "text", "text": "Keep it somewhere warm."},
                    ],
                    "created_at": "2024-05-02T08:00:09+00:00",
                },
                {"uuid": "m3", "sender": "human", "text": "", "created_at": None},
                {"uuid": "m4", "sender": "human", "text": "Thanks, I will try tonight"},
            ],
        },
        {"uuid": "empty", "name": "", "created_at": "2024-05-03T00:00:00Z", "chat_messages": []},
    ]
    report = mind.import_chat(_write(tmp_path / "conversations.json", export))

    assert (report.format, report.conversations, report.messages, report.skipped) == (
        "claude",
        1,
        3,
        1,
    )
    thread = _by_thread(mind)["chat:5b8d-claude"]
    assert [m.content for m in thread] == [
        "How long should my sourdough rest?",
        "Rest it for twelve hours.\n\nKeep it somewhere warm.",
        "Thanks, I will try tonight",
    ]
    assert [m.channel for m in thread] == [Channel.USER, Channel.SOURCE, Channel.USER]
    assert [m.valid_from for m in thread] == [
        datetime(2024, 5, 2, 8, 0, 5, tzinfo=UTC),
        datetime(2024, 5, 2, 8, 0, 9, tzinfo=UTC),
        datetime(2024, 5, 2, 8, 0, 9, tzinfo=UTC),  # no time: the one before it
    ]
    assert thread[1].tags == ("chat", "claude", "assistant")
    assert thread[1].payload["chat"]["title"] == "Sourdough"


def test_a_jsonl_history(mind: Mind, tmp_path: Path) -> None:
    lines = [
        {"role": "user", "content": "I start at the bakery on Monday", "time": "2024-06-01T09:00"},
        {"role": "system", "content": "You are helpful", "time": "2024-06-01T09:00"},
        {"role": "assistant", "content": "Good luck at the bakery!", "time": 1717232460},
        {"role": "user", "content": "Book the dentist", "conversation": 42, "title": "Errands"},
        {"role": "user", "content": "  ", "conversation": 42},
        {"role": "user", "content": "and the vet", "conversation": 42, "time": 1717232460},
        {"role": "assistant", "content": "Both booked", "conversation": 42},
    ]
    path = tmp_path / "my-history.jsonl"
    path.write_text("\n\n".join(json.dumps(line) for line in lines) + "\n", encoding="utf-8")

    report = mind.import_chat(path, format="jsonl")

    assert (report.format, report.conversations, report.messages, report.skipped) == (
        "jsonl",
        2,
        5,
        2,
    )
    threads = _by_thread(mind)
    assert [m.content for m in threads["chat:my-history"]] == [
        "I start at the bakery on Monday",
        "Good luck at the bakery!",
    ]
    assert [m.valid_from for m in threads["chat:my-history"]] == [
        datetime(2024, 6, 1, 9, 0, tzinfo=UTC),
        datetime(2024, 6, 1, 9, 1, tzinfo=UTC),
    ]
    errands = threads["chat:42"]
    assert [m.content for m in errands] == ["Book the dentist", "and the vet", "Both booked"]
    assert errands[0].payload["chat"]["title"] == "Errands"
    assert [m.valid_from for m in errands] == [
        mind.clock.now(),  # no time, none before it: when it was written
        datetime(2024, 6, 1, 9, 1, tzinfo=UTC),
        datetime(2024, 6, 1, 9, 1, tzinfo=UTC),  # no time: the one before it
    ]


def test_auto_tells_every_format_apart() -> None:
    chatgpt, _ = chatgpt_export(4, conversations=1)
    claude = [{"uuid": "u", "name": "n", "chat_messages": [{"sender": "human", "text": "hi"}]}]
    jsonl = '{"role": "user", "content": "hi"}\n{"role": "assistant", "content": "hello"}\n'
    one_line = '{"role": "user", "content": "hi"}'
    assert parse_chat_export(json.dumps(chatgpt)).format == "chatgpt"
    assert parse_chat_export(json.dumps(claude).encode("utf-8-sig")).format == "claude"
    assert parse_chat_export(jsonl).format == "jsonl"
    assert parse_chat_export(one_line).format == "jsonl"
    assert parse_chat_export(json.dumps(chatgpt[0])).format == "chatgpt"  # one conversation


# ---------------------------------------------------------------- credentials


@pytest.mark.parametrize("secrets", ["refuse", "allow"])
def test_credentials_never_reach_the_store(
    open_mind: Callable[..., Mind], tmp_path: Path, store_url: str, secrets: str
) -> None:
    said = [
        ("user", f"my OpenAI key is {OPENAI_KEY}, keep it safe", T0),
        ("assistant", f"Do not share keys. Your AWS key {AWS_KEY} should be rotated.", T0),
        ("user", "ok, rotated", T0),
    ]
    export = [chatgpt_conversation("keys", f"Key {OPENAI_KEY} trouble", said)]
    config = MindConfig(policy=WritePolicy(secrets=secrets))  # type: ignore[arg-type]
    mind = open_mind(config=config, embedder="hash:64")

    report = mind.import_chat(_write(tmp_path / "c.json", export))

    assert report.redacted == 3 and report.messages == 3  # the title is in every one
    thread = _by_thread(mind)["chat:keys"]
    assert thread[0].content == "my OpenAI key is [REDACTED:openai-key], keep it safe"
    assert "[REDACTED:aws-access-key]" in thread[1].content
    assert thread[0].payload["chat"]["title"] == "Key [REDACTED:openai-key] trouble"
    [created] = mind.events(memory_id=thread[0].id, kinds=["memory_created"])
    assert created.payload["redacted"] == ["openai-key"]
    assert mind.verify().ok
    mind.close()
    if store_url.startswith("sqlite"):
        stored = b"".join(p.read_bytes() for p in tmp_path.glob("noema.db*"))
        assert stored and OPENAI_KEY.encode() not in stored and AWS_KEY.encode() not in stored


def test_a_credential_in_a_conversation_id_refuses_the_whole_file(
    mind: Mind, tmp_path: Path
) -> None:
    """A thread label is never redacted: the whole import is refused before any write."""
    export, _ = chatgpt_export(300, conversations=3)
    export.append(chatgpt_conversation(f"k-{OPENAI_KEY}", "t", [("user", "a", T0)] * 2))
    with pytest.raises(PolicyViolation, match="thread"):
        mind.import_chat(_write(tmp_path / "c.json", export))
    assert mind.stats()["total"] == 0 and mind.events() == []


# ---------------------------------------------------------------- bad files


def _chatgpt_with(change: Callable[[dict[str, Any]], None]) -> str:
    export, _ = chatgpt_export(6, conversations=2)
    change(export[1])
    return json.dumps(export)


def _drop_content(conversation: dict[str, Any]) -> None:
    del conversation["mapping"]["conv-1-m2"]["message"]["content"]


BAD_FILES: list[tuple[str, bytes | str, str, str]] = [
    ("empty", "", "auto", "empty"),
    ("not json", "this is no export\n", "auto", "not JSON"),
    ("not utf-8", b"\xff\xfe\x00[", "auto", "not UTF-8"),
    ("unknown format", json.dumps([{"messages": []}]), "auto", "not a chat export"),
    ("no conversations", "[]", "auto", "no conversations"),
    (
        "chatgpt: a message without content",
        _chatgpt_with(_drop_content),
        "auto",
        "conversation 2 (conv-1), message conv-1-m2: no content",
    ),
    (
        "chatgpt: current node missing",
        _chatgpt_with(lambda c: c.update(current_node="nowhere")),
        "auto",
        "current_node 'nowhere'",
    ),
    (
        "chatgpt: parents in a circle",
        _chatgpt_with(lambda c: c["mapping"]["root"].update(parent="conv-1-out")),
        "auto",
        "run in a circle",
    ),
    (
        "chatgpt: a bad time",
        _chatgpt_with(lambda c: c["mapping"]["conv-1-m1"]["message"].update(create_time="soon")),
        "auto",
        'message conv-1-m1: time "soon"',
    ),
    (
        "claude: a message without content",
        json.dumps([{"uuid": "u", "chat_messages": [{"sender": "human"}]}]),
        "auto",
        "conversation 1 (u), message 1: no content",
    ),
    (
        "claude: unknown sender",
        json.dumps([{"uuid": "u", "chat_messages": [{"sender": "robot", "text": "x"}]}]),
        "claude",
        "sender 'robot'",
    ),
    (
        "jsonl: a line without content",
        '{"role": "user", "content": "hi"}\n{"role": "assistant"}\n',
        "auto",
        "line 2: no content",
    ),
    (
        "jsonl: a line that is not JSON",
        '{"role": "user", "content": "hi"}\n{"role": \n',
        "jsonl",
        "line 2: not JSON",
    ),
    (
        "jsonl: an unknown field",
        '{"role": "user", "content": "hi", "timestamp": 5}\n',
        "jsonl",
        "unknown field 'timestamp'",
    ),
    (
        "the wrong format named",
        json.dumps(chatgpt_export(4, conversations=1)[0]),
        "claude",
        "no chat_messages",
    ),
]


@pytest.mark.parametrize(
    ("data", "format", "needle"), [c[1:] for c in BAD_FILES], ids=[c[0] for c in BAD_FILES]
)
def test_a_bad_file_is_one_line_and_writes_nothing(
    mind: Mind, tmp_path: Path, data: bytes | str, format: str, needle: str
) -> None:
    path = tmp_path / "bad.json"
    path.write_bytes(data if isinstance(data, bytes) else data.encode())
    with pytest.raises(InvalidInput) as refused:
        mind.import_chat(path, format=format)  # type: ignore[arg-type]
    message = str(refused.value)
    assert message.startswith(f"{path}: ") and needle in message
    assert "\n" not in message
    assert mind.stats()["total"] == 0 and mind.events() == []


def test_a_missing_file_and_a_bad_format_are_refused(mind: Mind, tmp_path: Path) -> None:
    with pytest.raises(InvalidInput, match=r"cannot read .*absent\.json"):
        mind.import_chat(tmp_path / "absent.json")
    with pytest.raises(InvalidInput, match=r"^format: "):
        mind.import_chat(tmp_path / "absent.json", format="xml")  # type: ignore[arg-type]
    with pytest.raises(InvalidInput, match=r"^source: "):
        mind.import_chat(42)  # type: ignore[arg-type]


# ---------------------------------------------------------------- the command line


def _cli(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    capsys.readouterr()
    code = run(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def test_the_command_imports_and_answers_json(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    export, _ = chatgpt_export(38, conversations=2)
    wedding = "My sister Ines is getting married in Porto next June"
    export.append(chatgpt_conversation("w", "Wedding", [("user", wedding, T0), ("user", "!", T0)]))
    path = _write(tmp_path / "conversations.json", export)
    db = f"sqlite:///{tmp_path / 'cli.db'}"

    code, out, err = _cli(capsys, "--db", db, "--mind", "me", "import-chat", str(path), "--json")
    assert (code, err) == (0, "")
    assert json.loads(out) == {
        "format": "chatgpt",
        "conversations": 3,
        "messages": 40,
        "memories": 40,
        "skipped": 9,
        "redacted": 0,
    }
    code, out, _ = _cli(capsys, "--db", db, "--mind", "me", "recall", "Ines married", "--json")
    assert code == 0
    assert json.loads(out)["results"][0]["content"] == wedding

    code, out, err = _cli(capsys, "--db", db, "--mind", "you", "import-chat", str(path))
    assert (code, err) == (0, "")
    assert out == (
        "imported 40 messages of 3 conversations (chatgpt) as 40 memories; "
        "9 skipped, 0 with a credential redacted\n"
    )


@pytest.mark.parametrize(("data", "format", "needle"), [c[1:] for c in BAD_FILES[:6]])
def test_the_command_refuses_a_bad_file_in_one_line_and_creates_nothing(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], data: bytes | str, format: str, needle: str
) -> None:
    path = tmp_path / "bad.json"
    path.write_bytes(data if isinstance(data, bytes) else data.encode())
    fresh = tmp_path / "fresh" / "noema.db"
    argv = ["--db", f"sqlite:///{fresh}", "import-chat", str(path), "--format", format]
    code, out, err = _cli(capsys, *argv)
    assert (code, out) == (2, "")
    assert len(err.strip().splitlines()) == 1 and needle in err and "Traceback" not in err
    assert not fresh.exists()


def test_the_installed_command_reads_standard_input(tmp_path: Path) -> None:
    lines = [
        {"role": "user", "content": f"my key is {AWS_KEY}", "time": "2024-02-02T10:00:00Z"},
        {"role": "assistant", "content": "Please rotate it", "time": "2024-02-02T10:00:03Z"},
    ]
    env = {k: v for k, v in os.environ.items() if not k.startswith("NOEMA_")}
    env |= {"NOEMA_EMBEDDER": "none", "HOME": str(tmp_path)}
    db = f"sqlite:///{tmp_path / 'sub.db'}"
    noema = Path(sys.executable).parent / "noema"
    done = subprocess.run(
        [str(noema), "--db", db, "import-chat", "-", "--json"],
        input="".join(json.dumps(line) + "\n" for line in lines),
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["redacted"] == 1
    with Mind.open(db, embedder="none") as mind:
        thread = _by_thread(mind)["chat:stdin"]
        assert [m.content for m in thread] == [
            "my key is [REDACTED:aws-access-key]",
            lines[1]["content"],
        ]


class _Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_the_progress_bar_names_each_pass() -> None:
    screen = _Terminal()
    bar = render.Progress("importing", "embedding", stream=screen)
    for call in [(5, 10), (10, 10), (0, 0), (4, 10), (10, 10), (10, 10)]:
        bar(*call)
    lines = screen.getvalue().split("\n")
    assert lines[0].endswith("importing [" + "#" * 30 + "] 10/10")
    assert lines[1].endswith("embedding [" + "#" * 30 + "] 10/10")
    assert lines[2:] == [""]  # the repeated end of a pass draws nothing
