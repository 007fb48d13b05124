"""Schemathesis, a property-based API tester, against ``noema serve`` on loopback.

A real uvicorn server on a real socket serves two minds of one SQLite store
behind tokens: ``ada``, seeded with memories, worlds, a pending proposal, an
episode and a peer, which the token opens, and ``bob``, which it does not.
Schemathesis reads the server's own OpenAPI document, generates requests for
every operation from it (valid and invalid ones, with and without the token)
and runs every check that applies to a single response: no server error, every
status, content type, header and body as documented, schema-valid requests
accepted, schema-invalid ones rejected, auth not ignored, the ``Allow`` of a
405. So the document says what the server accepts and answers.

Generation is deterministic (``derandomize``) and bounded per operation, so
the run is the same on every machine.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import schemathesis
from hypothesis import HealthCheck, settings, strategies as st
from test_http import Live

from concepts.episodes import MAX_EPISODE_TOOLS
from noema import Mind
from noema.http.auth import Tokens

TOKEN = "token-for-ada-only-0123456789"
#: Generated cases per operation and phase (the coverage phase adds its own).
EXAMPLES = 15


class Seeded:
    """What the fixture wrote to ``ada``: ids, world paths and peer names to ask for."""

    def __init__(self, mind: Mind) -> None:
        lisbon = mind.remember(
            "Ada lives in Lisbon", key="user.home_city", tags=["home"], world="personal/places"
        )
        tea = mind.remember("Ada drinks green tea", tags=["habits"])
        retracted = mind.remember("Ada drinks coffee", world="personal")
        mind.retract(retracted.id, reason="she stopped")
        twin = mind.remember("Ada Lovelace drinks green tea", kind="semantic")
        proposal = mind.relate(tea.id, "same_as", twin.id, source="test")
        episode = mind.record_episode(
            {"task": "deploy the site", "outcome": "success", "world": "work"}
        )
        mind.create_world("work/project-x")
        mind.federate("bobs", mind="bob")
        self.ids = [lisbon.id, tea.id, retracted.id, twin.id, proposal.id, episode.id]
        self.paths = ["personal", "personal/places", "work", "work/project-x"]
        self.peers = ["bobs"]
        self.min_confidence = mind.config.policy.min_confidence


@pytest.fixture(scope="module")
def live(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Live, Seeded]]:
    url = f"sqlite:///{Path(tmp_path_factory.mktemp('schemathesis')) / 'noema.db'}"
    minds = {name: Mind.open(url, name) for name in ("ada", "bob")}
    seeded = Seeded(minds["ada"])
    server = Live(minds, Tokens({TOKEN: ["ada"]}))
    yield server, seeded
    server.stop()


@pytest.fixture(scope="module")
def api(live: tuple[Live, Seeded]) -> Any:
    server, seeded = live
    config = schemathesis.Config.from_dict(
        {
            # The document's own security scheme, so `ignored_auth` probes it.
            "auth": {"openapi": {"bearer": {"bearer": TOKEN}}},
            "seed": 45,
            "generation": {"deterministic": True, "database": "none"},
            "operations": [
                {
                    # Whether an MCP message is taken depends on the session an
                    # earlier initialize opened, which a request's schema cannot say.
                    "include-tag": "mcp",
                    "checks": {"positive_data_acceptance": {"enabled": False}},
                }
            ],
        }
    )
    loaded = schemathesis.openapi.from_url(f"{server.url}/openapi.json", config=config)
    world = server.doc["paths"]["/v1/minds/{mind}/worlds/{path}"]["get"]["parameters"]
    path = re.compile(next(p["schema"].get("pattern", ".*") for p in world if p["name"] == "path"))
    choices = {
        "mind": ["ada", "ada", "ada", "bob"],
        "id": seeded.ids,
        "path": seeded.paths,
        "name": seeded.peers,
    }

    @loaded.hook
    def flatmap_path_parameters(context: Any, parameters: dict[str, Any] | None) -> Any:
        # Mostly the served minds and what they hold, so reads find something;
        # sometimes what was generated, which finds nothing (404).
        if not parameters:
            return st.just(parameters)
        drawn: dict[str, Any] = {}
        for name, value in parameters.items():
            known = choices.get(name)
            # A value that breaks its schema stays: it is a negative case's point.
            valid = isinstance(value, str) and (name != "path" or path.fullmatch(value))
            drawn[name] = st.sampled_from([*known, value]) if known and valid else st.just(value)
        return st.fixed_dictionaries(drawn)

    floor = seeded.min_confidence

    @loaded.hook
    def filter_case(context: Any, case: Any) -> bool:
        # What a request's schema cannot say: one field differing from another, how
        # many distinct tools an episode's actions call, and the mind's own write
        # policy (its config), which refuses low confidence.
        body = case.body if isinstance(case.body, dict) else {}
        if case.path.endswith("/memories") and case.method == "POST":
            return _confident(body, floor)
        if case.path.endswith("/memories/batch"):
            return all(_confident(item, floor) for item in _items(body, "memories"))
        if case.path.endswith(("/worlds/link", "/worlds/unlink")) and "src" in body:
            return _world(body["src"]) != _world(body.get("dst"))
        if case.path.endswith("/episodes") and case.method == "POST":
            return _few_tools(body)
        if case.path.endswith("/episodes/batch"):
            return all(_few_tools(item) for item in _items(body, "episodes"))
        if case.path.endswith("/peers") and case.method == "POST":
            return body.get("mind") != (case.path_parameters or {}).get("mind")
        return True

    return loaded


def _items(body: dict[str, Any], field: str) -> list[dict[str, Any]]:
    """The objects of a batch's list ``field`` (none when it is no list)."""
    items = body.get(field)
    return [item for item in items if isinstance(item, dict)] if isinstance(items, list) else []


def _confident(memory: dict[str, Any], floor: float) -> bool:
    """Whether a memory's confidence, if given, meets the write policy's ``floor``."""
    confidence = memory.get("confidence")
    return not (isinstance(confidence, int | float) and confidence < floor)


def _few_tools(episode: dict[str, Any]) -> bool:
    """Whether an episode's actions call at most ``MAX_EPISODE_TOOLS`` distinct tools."""
    actions = episode.get("actions")
    actions = actions if isinstance(actions, list) else []
    tools = {str(a.get("tool")) for a in actions if isinstance(a, dict)}
    return len(tools) <= MAX_EPISODE_TOOLS


def _world(path: Any) -> Any:
    """A world path as the mind reads it (else the value as it is)."""
    return path.strip().strip("/") if isinstance(path, str) else path


schema = schemathesis.pytest.from_fixture("api")


@schema.parametrize()
@settings(
    max_examples=EXAMPLES,
    derandomize=True,
    database=None,
    deadline=None,
    suppress_health_check=list(HealthCheck),
)
def test_the_server_answers_as_its_document_says(case: Any) -> None:
    case.call_and_validate()
