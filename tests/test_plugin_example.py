"""The example plugin (``examples/noema-plugin-echo``) and the "Writing a process" guide.

The plugin is installed without network into a temporary directory and found
through its ``noema.processes`` entry point by a fresh interpreter; its
behaviour and its isolation are also tested in this process, loaded by path.
"""

from __future__ import annotations

import asyncio
import contextlib
import importlib.util
import io
import json
import os
import re
import shutil
import subprocess
import sys
from importlib import metadata
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

from concepts import EventKind, Observation, WorkingMemoryItem
from noema import ManualClock, Mind
from processes import Attend, Retrieve
from workspace import AttentionConfig, CycleReport, ProcessContext

ROOT = Path(__file__).resolve().parents[1]
PLUGIN = ROOT / "examples" / "noema-plugin-echo"
GUIDE = ROOT / "docs" / "guides" / "writing-a-process.md"
ALERT = "keyword_watch.alert"
# A python sample, and the output block right after it: what it must print.
SAMPLE = re.compile(r"```python\n(.*?)```\n(?:\n```(?:output|text)\n(.*?)```\n)?", re.DOTALL)


def _cannot_build_offline() -> str | None:
    """Why this interpreter cannot build the example without network; None when it can."""
    try:
        version = metadata.version("setuptools")
    except metadata.PackageNotFoundError:
        return "setuptools is not installed (the dev extras should pull setuptools>=70.1)"
    major, minor = (int(part) for part in re.findall(r"\d+", version)[:2])
    if (major, minor) >= (70, 1) or importlib.util.find_spec("wheel") is not None:
        return None  # setuptools ships bdist_wheel from 70.1; before, it needs `wheel`
    return f"setuptools {version} cannot build wheels without `wheel` (need setuptools>=70.1)"


def _run(*args: str, **kwargs: Any) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, *args], capture_output=True, text=True, timeout=120, check=False, **kwargs
    )


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The example installed with pip into a fresh target directory, offline."""
    reason = _cannot_build_offline()
    if reason is not None:
        pytest.skip(reason)
    work = tmp_path_factory.mktemp("plugin")
    source = work / "src"  # setuptools builds in the source tree: build a copy
    ignore = shutil.ignore_patterns("build", "*.egg-info", "__pycache__")
    shutil.copytree(PLUGIN, source, ignore=ignore)
    target = work / "site"
    installed = _run(
        "-m",
        "pip",
        "install",
        "--no-build-isolation",
        "--no-deps",
        "--no-index",
        "--no-cache-dir",
        "--disable-pip-version-check",
        "--no-input",
        "--quiet",
        "--target",
        str(target),
        str(source),
        env={**os.environ, "PIP_CONFIG_FILE": os.devnull},
    )
    assert installed.returncode == 0, installed.stderr
    return target


CHILD = """
import asyncio, json, sys
from datetime import UTC, datetime
from concepts import Observation
from noema import ManualClock, Mind
from processes import Attend, Retrieve, discover

found = discover()

async def main():
    clock = ManualClock(datetime(2026, 1, 1, 12, 0, tzinfo=UTC))
    with Mind.open(sys.argv[1], "default", clock=clock) as mind:
        workspace = mind.workspace([Attend(), Retrieve(), *found.processes])
        cycles = []
        for text in sys.argv[2:]:
            clock.advance(minutes=1)
            report = await workspace.step([Observation(content=text)])
            cycles.append([[d.candidate.source, d.admitted] for d in report.decisions])
        await workspace.stop()
    return cycles

cycles = asyncio.run(main())
print(json.dumps({
    "files": {p.name: sys.modules[type(p).__module__].__file__ for p in found.processes},
    "errors": found.errors,
    "cycles": cycles,
}))
"""


def test_the_installed_plugin_runs_from_its_entry_point(site: Path, tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'plugin.db'}"
    observations = ["The garden needs watering", "Urgent: the tax deadline is Friday"]
    child = _run(
        "-c", CHILD, url, *observations, cwd=tmp_path, env={**os.environ, "PYTHONPATH": str(site)}
    )
    assert child.returncode == 0, child.stderr
    seen = json.loads(child.stdout)
    assert seen["errors"] == []
    assert set(seen["files"]) == {"keyword-watch"}
    assert Path(seen["files"]["keyword-watch"]).is_relative_to(site)  # the installed copy
    quiet, loud = seen["cycles"]
    assert all(source != "keyword-watch" for source, _ in quiet)
    assert ["keyword-watch", True] in loud and ["attend", True] in loud

    with Mind.open(url, "default") as mind:
        [alert] = mind.events(kinds=[ALERT])
        received = mind.events(kinds=[EventKind.OBSERVATION_RECEIVED])
        assert alert.origin_event == received[1].id
        assert alert.payload["words"] == ["deadline", "urgent"]
        assert alert.payload["observation"] == observations[1]
        completed = mind.events(kinds=[EventKind.CYCLE_COMPLETED])
        [decision] = [
            d for d in completed[1].payload["decisions"] if d["source"] == "keyword-watch"
        ]
        assert decision["admitted"] and decision["score"] == alert.payload["score"]
        assert mind.stats()["total"] == 2  # attend encoded both observations beside it
        assert mind.verify().ok


def test_the_plugin_readme_runs_as_written(site: Path, tmp_path: Path) -> None:
    [(code, expected)] = SAMPLE.findall((PLUGIN / "README.md").read_text(encoding="utf-8"))
    child = _run("-c", code, cwd=tmp_path, env={**os.environ, "PYTHONPATH": str(site)})
    assert child.returncode == 0, child.stderr
    assert child.stdout == expected


# ---------------------------------------------------------------- in process


@pytest.fixture
def plugin(monkeypatch: pytest.MonkeyPatch) -> ModuleType:
    """The plugin's module, loaded from the source tree (and unloaded afterwards)."""
    path = PLUGIN / "noema_plugin_echo" / "__init__.py"
    spec = importlib.util.spec_from_file_location("noema_plugin_echo", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    monkeypatch.setitem(sys.modules, spec.name, module)
    spec.loader.exec_module(module)
    return module


def _steps(
    mind: Mind,
    clock: ManualClock,
    processes: list[Any],
    observations: list[Observation],
    **options: Any,
) -> tuple[list[CycleReport], set[str]]:
    async def run() -> tuple[list[CycleReport], set[str]]:
        workspace = mind.workspace(processes, **options)
        reports = []
        for observation in observations:
            clock.advance(minutes=1)
            reports.append(await workspace.step([observation]))
        await workspace.stop()
        return reports, workspace.quarantined

    return asyncio.run(run())


def test_keyword_watch_alerts_on_default_and_payload_words(
    mind: Mind, clock: ManualClock, plugin: ModuleType
) -> None:
    observations = [
        Observation(content="The garden needs watering"),
        Observation(content="The garden hose leaks", payload={"watch": "hose"}),
        Observation(content="ASAP please: the deadline moved", payload={"watch": ["garden", 3]}),
    ]
    reports, _ = _steps(mind, clock, [Attend(), plugin.KeywordWatch()], observations)
    words = [
        [d.candidate.payload["words"] for d in r.decisions if d.candidate.source == "keyword-watch"]
        for r in reports
    ]
    assert words == [[], [["hose"]], [["asap", "deadline"]]]
    received = mind.events(kinds=[EventKind.OBSERVATION_RECEIVED])
    alerts = mind.events(kinds=[ALERT])
    assert [(e.origin_event, e.payload["cycle"]) for e in alerts] == [
        (received[1].id, 2),
        (received[2].id, 3),
    ]
    assert mind.verify().ok


def test_an_alert_that_loses_attention_writes_no_event(
    mind: Mind, clock: ManualClock, plugin: ModuleType
) -> None:
    observations = [Observation(content="urgent: the roof leaks")]
    attention = AttentionConfig(threshold=0.99)
    [report], _ = _steps(mind, clock, [plugin.KeywordWatch()], observations, attention=attention)
    assert [(d.candidate.source, d.admitted) for d in report.decisions] == [
        ("keyword-watch", False)
    ]
    assert mind.events(kinds=[ALERT]) == []


def test_a_plugin_raising_in_a_hook_is_isolated_and_quarantined(
    mind: Mind, clock: ManualClock, plugin: ModuleType
) -> None:
    class Unreachable(plugin.KeywordWatch):  # type: ignore[name-defined,misc]
        async def on_broadcast(self, item: WorkingMemoryItem, ctx: ProcessContext) -> None:
            if item.candidate.source == self.name:
                raise OSError("alert sink unreachable")

    observations = [Observation(content=f"urgent item number {n}") for n in range(3)]
    processes = [Attend(), Retrieve(), Unreachable()]
    reports, quarantined = _steps(mind, clock, processes, observations, max_failures=2)
    assert [r.failures for r in reports] == [["keyword-watch"], ["keyword-watch"], []]
    assert quarantined == {"keyword-watch"}
    assert all(d.candidate.source != "keyword-watch" for d in reports[2].decisions)
    failed = mind.events(kinds=[EventKind.PROCESS_FAILED])
    assert [(e.payload["hook"], e.payload["error"]) for e in failed] == [
        ("on_broadcast", "OSError: alert sink unreachable")
    ] * 2
    [jailed] = mind.events(kinds=[EventKind.PROCESS_QUARANTINED])
    assert jailed.payload == {"process": "keyword-watch", "failures": 2}
    assert mind.events(kinds=[ALERT]) == []
    assert mind.stats()["total"] == 3  # attend kept encoding every observation
    assert mind.verify().ok


# ---------------------------------------------------------------- the guide


def test_the_writing_a_process_guide_runs_as_written(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    samples = SAMPLE.findall(GUIDE.read_text(encoding="utf-8"))
    assert len(samples) >= 5
    namespace: dict[str, Any] = {"__name__": "writing_a_process"}
    for code, expected in samples:  # in order: later samples use earlier definitions
        printed = io.StringIO()
        with contextlib.redirect_stdout(printed):
            exec(compile(code, str(GUIDE), "exec"), namespace)
        if expected:
            assert printed.getvalue() == expected
    tests = [value for name, value in namespace.items() if name.startswith("test_")]
    assert tests
    for test in tests:
        test()
