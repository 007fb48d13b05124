"""``noema chat`` and the chat model specs it loads (``noema.chat_models``).

Most tests call ``noema.cli.run`` in-process on a real SQLite file; the ones
about what only a process shows (a restart, stdin from a pipe or a terminal,
stderr, Ctrl-C) run the installed console script, with ``tests/`` on its
``PYTHONPATH`` so that it can load the fake chat models of ``chat_fakes``.
"""

from __future__ import annotations

import importlib.util
import json
import os
import select
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from noema import Mind
from noema.chat_models import chat_model_arguments, load_chat_model, load_tools
from noema.cli import run
from noema.config import Settings
from noema.errors import ConfigError, InvalidInput

NOEMA = Path(sys.executable).parent / "noema"
TESTS = Path(__file__).resolve().parent
REPLY_KEYS = {
    "text",
    "action",
    "memory_id",
    "context",
    "actions",
    "episode_id",
    "cycles",
    "failures",
    "also",
}
BILLING = "The nightly billing import job failed with a timeout on the database."


@dataclass
class Result:
    code: int
    out: str
    err: str

    def err_line(self) -> str:
        """The single line on stderr (asserting there is exactly one, and no traceback)."""
        lines = self.err.strip().splitlines()
        assert len(lines) == 1, f"expected one stderr line, got {self.err!r}"
        assert "Traceback" not in self.err
        return lines[0]

    def turns(self) -> list[dict[str, Any]]:
        return [json.loads(line) for line in self.out.splitlines()]


Cli = Callable[..., Result]


@pytest.fixture(autouse=True)
def _clean_env(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """No NOEMA_* variable from the caller's shell; HOME and the working directory in tmp."""
    monkeypatch.chdir(tmp_path)
    for name in list(os.environ):
        if name.startswith("NOEMA_"):
            monkeypatch.delenv(name)
    monkeypatch.setenv("NOEMA_EMBEDDER", "none")
    monkeypatch.setenv("HOME", str(tmp_path))


@pytest.fixture
def db_path(tmp_path: Path) -> Path:
    return tmp_path / "chat.db"


@pytest.fixture
def url(db_path: Path) -> str:
    return f"sqlite:///{db_path}"


@pytest.fixture
def seeded(url: str) -> str:
    """The mind ``demo``, which knows what broke in the billing import job."""
    with Mind.open(url, "demo") as mind:
        mind.remember(BILLING, channel="tool")
        mind.remember("Maya joined the team as the new data engineer.")
    return url


@pytest.fixture
def noema(url: str, capsys: pytest.CaptureFixture[str]) -> Cli:
    """``noema --db URL --mind demo ARGS`` in-process."""

    def _run(*argv: str) -> Result:
        capsys.readouterr()
        code = run(["--db", url, "--mind", "demo", *argv])
        captured = capsys.readouterr()
        return Result(code, captured.out, captured.err)

    return _run


@pytest.fixture
def env(tmp_path: Path) -> dict[str, str]:
    """A subprocess's environment: HOME in tmp, no NOEMA_*, ``tests/`` importable."""
    clean = {k: v for k, v in os.environ.items() if not k.startswith("NOEMA_")}
    clean["NOEMA_EMBEDDER"] = "none"
    clean["HOME"] = str(tmp_path)
    clean["PYTHONPATH"] = os.pathsep.join(
        p for p in (str(TESTS), os.environ.get("PYTHONPATH", "")) if p
    )
    return clean


def chat(url: str, *argv: str, env: dict[str, str], input: str | None = None) -> Result:
    """``noema --db URL --mind demo chat ARGS`` as a process, ``input`` on its stdin."""
    done = subprocess.run(
        [str(NOEMA), "--db", url, "--mind", "demo", "chat", *argv],
        env=env,
        input=input,
        capture_output=True,
        text=True,
        timeout=90,
        check=False,
    )
    return Result(done.returncode, done.stdout, done.stderr)


# ---------------------------------------------------------------- one message


def test_a_message_without_a_model_is_answered_from_memory(seeded: str, noema: Cli) -> None:
    result = noema("chat", "what broke in the billing import job?")
    assert result.code == 0, result.err
    assert result.err == ""
    assert result.out.startswith("From memory:")
    assert BILLING in result.out
    assert "demo>" not in result.out  # a message's reply is printed bare


def test_the_reply_is_remembered_in_the_conversations_thread(seeded: str, noema: Cli) -> None:
    result = noema("chat", "--json", "what broke in the billing import job?")
    assert result.code == 0, result.err
    (turn,) = result.turns()
    assert set(turn) == REPLY_KEYS
    assert turn["action"] == "reply" and BILLING in turn["text"]
    assert turn["actions"] == [] and turn["episode_id"] is None and turn["failures"] == []
    with Mind.open(seeded, "demo") as mind:
        said = mind.get(turn["memory_id"])
        billing = mind.recall("billing import job timeout", limit=1)[0].memory
    assert said.content == turn["text"]
    assert said.channel == "self" and said.thread == "chat:main" and "reply" in said.tags
    assert billing.id in turn["context"]


def test_a_mind_that_knows_nothing_says_so(noema: Cli) -> None:
    result = noema("chat", "what broke in the billing import job?")
    assert result.code == 0, result.err
    assert result.out.strip() == "I don't remember anything about that."


def test_a_model_answers_a_message(seeded: str, noema: Cli) -> None:
    result = noema("chat", "--model", "chat_fakes:Parrot", "hello there")
    assert result.code == 0, result.err
    assert result.out.strip() == "heard: hello there (after 0 earlier)"


@pytest.mark.parametrize(
    ("spec", "arguments", "said"),
    [
        ("chat_fakes:Parrot", '{"prefix": "class"}', "class: hi"),
        ("chat_fakes:make_parrot", '{"prefix": "factory"}', "factory: hi"),
        ("chat_fakes:make_parrot", None, "made: hi"),
        ("chat_fakes:PARROT", None, "instance: hi"),
    ],
)
def test_a_class_a_factory_or_an_instance(
    noema: Cli, spec: str, arguments: str | None, said: str
) -> None:
    more = ["--model-args", arguments] if arguments else []
    result = noema("chat", "--model", spec, *more, "hi")
    assert result.code == 0, result.err
    assert result.out.startswith(said)


def test_tools_are_called_and_the_turn_is_an_episode(seeded: str, noema: Cli) -> None:
    result = noema(
        "chat", "--model", "chat_fakes:Shouter", "--tool", "chat_fakes:VOICES", "--json", "hey you"
    )
    assert result.code == 0, result.err
    (turn,) = result.turns()
    assert turn["text"] == "the tool said HEY YOU"
    assert [(a["tool"], a["result"], a["failed"]) for a in turn["actions"]] == [
        ("shout", "HEY YOU", False)
    ]
    assert json.loads(turn["actions"][0]["arguments"]) == {"text": "hey you"}
    with Mind.open(seeded, "demo") as mind:
        episode = mind.episode(turn["episode_id"])
    assert [a.tool for a in episode.episode.actions] == ["shout"]


def test_no_tool_calls_when_the_budget_is_none(noema: Cli) -> None:
    result = noema(
        "chat",
        *("--model", "chat_fakes:Shouter", "--tool", "chat_fakes:shout"),
        *("--max-tool-calls", "0", "--json", "hey"),
    )
    assert result.code == 0, result.err
    (turn,) = result.turns()
    assert turn["actions"] == [] and turn["episode_id"] is None


def test_a_world_that_does_not_exist_is_refused(seeded: str, noema: Cli) -> None:
    result = noema("chat", "--world", "nowhere", "hi")
    assert result.code == 2
    assert result.err_line() == "noema: error: no world 'nowhere'"


def test_the_conversation_runs_in_its_world(seeded: str, noema: Cli) -> None:
    with Mind.open(seeded, "demo") as mind:
        mind.create_world("work/billing")
    result = noema("chat", "--world", "work/billing", "--json", "hi")
    assert result.code == 0, result.err
    (turn,) = result.turns()
    assert turn["failures"] == []
    with Mind.open(seeded, "demo") as mind:
        said = mind.get(turn["memory_id"])
        assert mind.world_path(said.world) == "work/billing"


# ---------------------------------------------------------------- many turns, many processes


def test_piped_lines_go_on_in_one_conversation_across_processes(
    seeded: str, env: dict[str, str]
) -> None:
    first = chat(seeded, "--model", "chat_fakes:Parrot", env=env, input="first\n\nsecond\n")
    assert first.code == 0, first.err
    assert first.out.splitlines() == [
        "demo> heard: first (after 0 earlier)",
        "demo> heard: second (after 2 earlier)",
    ]
    # A new process: the conversation goes on where the last one stopped.
    again = chat(
        seeded, "--model", "chat_fakes:Parrot", "--json", env=env, input="third\n/quit\nx\n"
    )
    assert again.code == 0, again.err
    (turn,) = again.turns()
    assert turn["text"] == "heard: third (after 4 earlier)"
    with Mind.open(seeded, "demo") as mind:
        replies = mind.timeline({"tags": ["reply"]})
    assert sorted(m.content for m in replies) == [
        "heard: first (after 0 earlier)",
        "heard: second (after 2 earlier)",
        "heard: third (after 4 earlier)",
    ]
    assert {m.thread for m in replies} == {"chat:main"}
    positions = [m.position for m in sorted(replies, key=lambda m: m.content)]
    assert positions == sorted(positions)


def test_piped_lines_without_a_model(seeded: str, env: dict[str, str]) -> None:
    done = chat(seeded, env=env, input="what broke in the billing import job?\nwho is Maya?\n")
    assert done.code == 0, done.err
    assert done.out.count("demo> From memory:") == 2
    assert BILLING in done.out and "Maya joined the team" in done.out


def test_a_model_that_raises_is_one_line_and_exit_1(seeded: str, env: dict[str, str]) -> None:
    done = chat(seeded, "--model", "chat_fakes:Broken", "hi", env=env)
    assert done.code == 1
    assert done.out == ""
    line = done.err_line()
    assert line.startswith("noema: failed: no reply: speak:")
    assert "ConnectionError: the model server is down" in line


def test_piped_turns_go_on_after_a_failure(seeded: str, env: dict[str, str]) -> None:
    done = chat(seeded, "--model", "chat_fakes:Broken", "--json", env=env, input="a\nb\n")
    assert done.code == 1
    turns = done.turns()
    assert [t["text"] for t in turns] == [None, None]
    assert all("ConnectionError" in t["failures"][0] for t in turns)
    lines = done.err.strip().splitlines()
    assert len(lines) == 2 and all(line.startswith("noema: failed: no reply:") for line in lines)
    assert "Traceback" not in done.err


def test_a_turn_out_of_time_has_no_reply(noema: Cli) -> None:
    result = noema(
        "chat",
        *("--model", "chat_fakes:Slow", "--model-args", '{"seconds": 3}'),
        *("--turn-seconds", "0.5", "hi"),
    )
    assert result.code == 1
    assert result.out == ""
    assert result.err_line() == "noema: failed: no reply: speak: propose: timed out"


# ---------------------------------------------------------------- a terminal


def _terminal(
    argv: list[str],
    env: dict[str, str],
    typed: bytes,
    *,
    interrupt: Callable[[bytes], bool] | None = None,
    wait: float = 0.0,
) -> tuple[int, str, str, float]:
    """Run ``noema ARGS`` with a terminal as stdin and stdout.

    Sends SIGINT ``wait`` seconds after the screen first satisfies ``interrupt``.

    Returns:
        The exit status, the screen, stderr, and the seconds from SIGINT to the exit.
    """
    master, slave = os.openpty()
    proc = subprocess.Popen(
        [str(NOEMA), *argv], stdin=slave, stdout=slave, stderr=subprocess.PIPE, env=env
    )
    os.close(slave)
    os.write(master, typed)
    seen, deadline, sent = b"", time.monotonic() + 60, 0.0
    try:
        while time.monotonic() < deadline:
            ready, _, _ = select.select([master], [], [], 0.05)
            if ready:
                try:
                    chunk = os.read(master, 65536)
                except OSError:  # EIO: no writer is left
                    break
                if not chunk:
                    break
                seen += chunk
            elif proc.poll() is not None:
                break
            if interrupt is not None and interrupt(seen):
                interrupt = None
                time.sleep(wait)
                proc.send_signal(signal.SIGINT)
                sent = time.monotonic()
        code = proc.wait(timeout=30)
        took = time.monotonic() - sent if sent else 0.0
    finally:
        os.close(master)
        if proc.poll() is None:
            proc.kill()
    assert proc.stderr is not None
    err = proc.stderr.read().decode()
    proc.stderr.close()
    return code, seen.decode("utf-8", "replace"), err, took


def test_a_prompt_on_a_terminal(seeded: str, env: dict[str, str]) -> None:
    code, screen, err, _ = _terminal(
        ["--db", seeded, "--mind", "demo", "chat"],
        env,
        b"what broke in the billing import job?\n/quit\n",
    )
    assert code == 0, err
    assert err == ""
    assert "Talking with 'demo' in conversation 'main'" in screen
    assert "you> " in screen
    assert "demo> From memory:" in screen and BILLING in screen


def test_with_initiative_the_mind_speaks_unasked_at_the_prompt(
    seeded: str, env: dict[str, str]
) -> None:
    with Mind.open(seeded, "demo") as mind:
        mind.record_episode(task="deploy the billing fix", outcome="partial")
    code, screen, err, _ = _terminal(
        ["--db", seeded, "--mind", "demo", "chat", "--initiative", "--tick-seconds", "0.02"],
        env,
        b"",
        interrupt=lambda seen: b"deploy the billing fix" in seen,
    )
    assert code == 0, err
    assert "demo> Something needs your attention: Unfinished (partial): deploy the billing fix" in (
        screen
    )
    with Mind.open(seeded, "demo") as mind:
        [action] = mind.events(kinds=["action_taken"])
    assert action.payload["action"] == "message"


def test_a_tick_out_of_range_is_refused(noema: Cli) -> None:
    result = noema("chat", "--initiative", "--tick-seconds", "0", "hello")
    assert result.code == 2
    assert "--tick-seconds: more than 0" in result.err


def test_ctrl_c_at_the_prompt_ends_it_cleanly(seeded: str, env: dict[str, str]) -> None:
    code, screen, err, _ = _terminal(
        ["--db", seeded, "--mind", "demo", "chat", "--model", "chat_fakes:Parrot"],
        env,
        b"hello\n",
        interrupt=lambda seen: b"heard: hello" in seen and seen.rstrip().endswith(b"you>"),
    )
    assert code == 0, err
    assert err == ""
    assert "demo> heard: hello (after 0 earlier)" in screen
    with Mind.open(seeded, "demo") as mind:
        replies = [m.content for m in mind.timeline({"tags": ["reply"]})]
    assert replies == ["heard: hello (after 0 earlier)"]


def test_ctrl_c_in_a_turn_ends_it_at_once(seeded: str, env: dict[str, str]) -> None:
    code, screen, err, took = _terminal(
        ["--db", seeded, "--mind", "demo", "chat", "--model", "chat_fakes:Slow"],
        env,
        b"hello\n",
        interrupt=lambda seen: b"you> " in seen,
        wait=1.0,  # the model is thinking (for 30 seconds)
    )
    assert code == 0, err
    assert err == ""
    assert "heard:" not in screen
    assert took < 15  # not the model's 30 seconds


# ---------------------------------------------------------------- bad input


def _refused(result: Result, db_path: Path, *parts: str) -> None:
    """Exit 2, one line on stderr holding every part, nothing written."""
    assert result.code == 2, result
    line = result.err_line()
    assert line.startswith("noema: error: ")
    for part in parts:
        assert part in line, line
    assert result.out == ""
    assert not db_path.exists()


@pytest.mark.parametrize(
    ("argv", "parts"),
    [
        (["--model", "no_such_module_xyz:Model"], ["no module named 'no_such_module_xyz'"]),
        (["--model", "chat_fakes:Nope"], ["module 'chat_fakes' has no attribute 'Nope'"]),
        (
            ["--model", "json:dumps", "--model-args", '{"obj": 1}'],
            ["dumps(...) gave a str", "BaseChatModel"],
        ),
        (["--model", "json:JSONDecodeError"], ["JSONDecodeError(...) failed: TypeError"]),
        (["--model", "chat_fakes:Refusing"], ["ValueError: an api_key is required"]),
        (["--model", "chat_fakes:BILLING_NOTE"], ["BILLING_NOTE is a str", "chat model class"]),
        (
            ["--model", "chat_fakes:Parrot", "--model-args", '{"prefix": 5}'],
            ["Parrot(...) failed: argument prefix:"],
        ),
        (
            ["--model", "chat_fakes:PARROT", "--model-args", '{"prefix": "x"}'],
            ["PARROT is a chat model already"],
        ),
        (["--model", "chat_fakes"], ["expected module:Class or provider:model"]),
        (["--model", ":Parrot"], ["expected module:Class or provider:model"]),
        (["--model", "chat_fakes:Parrot", "--model-args", "{"], ["--model-args: not valid JSON"]),
        (["--model", "chat_fakes:Parrot", "--model-args", "[1]"], ["expected a JSON object"]),
        (["--model-args", '{"prefix": "x"}'], ["--model-args needs a model"]),
        (["--tool", "json:loads"], ["tool 'json:loads'", "not a LangChain tool"]),
        (["--tool", "chat_fakes:nope"], ["has no attribute 'nope'"]),
        (["--tool", "chat_fakes"], ["tool 'chat_fakes': expected module:attribute"]),
        (["--max-tool-calls", "-1"], ["--max-tool-calls: at least 0"]),
        (["--turn-seconds", "0"], ["--turn-seconds: more than 0"]),
        (["--conversation", " "], ["--conversation: a name, not blank"]),
    ],
)
def test_a_bad_option_is_one_line_before_anything_is_written(
    noema: Cli, db_path: Path, argv: list[str], parts: list[str]
) -> None:
    _refused(noema("chat", *argv, "hi"), db_path, *parts)


def test_a_module_whose_import_fails_is_named(
    noema: Cli, db_path: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "half_installed.py").write_text('raise RuntimeError("missing its config")\n')
    monkeypatch.syspath_prepend(str(tmp_path))
    result = noema("chat", "--model", "half_installed:Model", "hi")
    _refused(result, db_path, "importing half_installed failed: RuntimeError: missing its config")


@pytest.mark.skipif(
    importlib.util.find_spec("langchain") is not None, reason="langchain is installed"
)
def test_the_provider_form_without_langchain(noema: Cli, db_path: Path) -> None:
    result = noema("chat", "--model", "openai:gpt-4o-mini", "hi")
    _refused(
        result,
        db_path,
        "chat model 'openai:gpt-4o-mini': the provider:model form needs the langchain package",
        "pip install langchain",
        "or give module:Class",
    )
    assert "(as module:Class)" not in result.err  # not a Python name: never tried as one


@pytest.mark.skipif(
    importlib.util.find_spec("langchain") is not None, reason="langchain is installed"
)
def test_a_spec_that_is_neither_form_names_both(noema: Cli, db_path: Path) -> None:
    _refused(
        noema("chat", "--model", "chat_fakes:Nope", "hi"),
        db_path,
        "module 'chat_fakes' has no attribute 'Nope' (as module:Class)",
        "the provider:model form needs the langchain package",
    )


# ---------------------------------------------------------------- the environment


def test_the_environment_names_the_model(noema: Cli, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("NOEMA_CHAT_MODEL", "chat_fakes:Parrot")
    monkeypatch.setenv("NOEMA_CHAT_MODEL_ARGS", '{"prefix": "from env"}')
    assert noema("chat", "hi").out.startswith("from env: hi")
    # --model-args replace the environment's; --model takes only its own.
    assert noema("chat", "--model-args", '{"prefix": "opt"}', "hi").out.startswith("opt: hi")
    assert noema("chat", "--model", "chat_fakes:Parrot", "hi").out.startswith("heard: hi")
    # Offline: the earlier "hi"s are the conversation itself, not something it knows.
    assert noema("chat", "--model", "none", "hi").out == "I don't remember anything about that.\n"


def test_bad_arguments_in_the_environment_are_named(
    noema: Cli, db_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("NOEMA_CHAT_MODEL", "chat_fakes:Parrot")
    monkeypatch.setenv("NOEMA_CHAT_MODEL_ARGS", "prefix=x")
    _refused(noema("chat", "hi"), db_path, "NOEMA_CHAT_MODEL_ARGS: not valid JSON")


def test_the_configuration_file_names_the_model(tmp_path: Path) -> None:
    config = tmp_path / "noema.toml"
    config.write_text(
        'chat_model = "chat_fakes:Parrot"\nchat_model_args = { prefix = "file" }\n',
        encoding="utf-8",
    )
    settings = Settings.from_env({"NOEMA_CONFIG": str(config)})
    assert (settings.chat_model, settings.chat_model_args) == (
        "chat_fakes:Parrot",
        {"prefix": "file"},
    )
    # The file's arguments are its model's: another model from the environment drops them.
    other = Settings.from_env({"NOEMA_CONFIG": str(config), "NOEMA_CHAT_MODEL": "m:Other"})
    assert (other.chat_model, other.chat_model_args) == ("m:Other", {})
    both = Settings.from_env(
        {"NOEMA_CONFIG": str(config), "NOEMA_CHAT_MODEL_ARGS": '{"prefix": "env"}'}
    )
    assert (both.chat_model, both.chat_model_args) == ("chat_fakes:Parrot", {"prefix": "env"})
    assert Settings.from_env({}).chat_model is None
    with pytest.raises(ConfigError, match="NOEMA_CHAT_MODEL_ARGS: expected a JSON object"):
        Settings.from_env({"NOEMA_CHAT_MODEL_ARGS": "[1, 2]"})


# ---------------------------------------------------------------- the loader itself


def test_the_loader_in_python() -> None:
    from chat_fakes import VOICES, Parrot, shout

    model = load_chat_model("chat_fakes:Parrot", {"prefix": "py"})
    assert isinstance(model, Parrot) and model.prefix == "py"
    assert load_chat_model(" chat_fakes:Parrot ").prefix == "heard"
    assert load_tools("chat_fakes:shout") == [shout]
    assert load_tools("chat_fakes:VOICES") == VOICES
    assert chat_model_arguments(None) == {} and chat_model_arguments("  ") == {}
    assert chat_model_arguments('{"a": 1}') == {"a": 1}
    with pytest.raises(InvalidInput, match="tool 'chat_fakes:EMPTY': EMPTY is an empty list"):
        load_tools("chat_fakes:EMPTY")
    with pytest.raises(InvalidInput, match="expected module:Class or provider:model"):
        load_chat_model("")


def test_the_help_states_the_budgets_defaults(noema: Cli) -> None:
    from processes.speaker import Budget

    result = noema("chat", "--help")
    assert result.code == 0
    text = " ".join(result.out.split())
    assert f"tool calls per turn (default {Budget().tool_calls})" in text
    assert f"seconds per turn (default {Budget().seconds:g})" in text
