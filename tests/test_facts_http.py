"""``GET /v1/minds/{mind}/facts/{key}``: a key's fact over a real HTTP server, on every backend.

The application runs under uvicorn on a loopback socket, in a thread; httpx asks.
Replies are checked against the route's schema in the server's own OpenAPI
document; errors are one line of JSON naming their field.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from typing import Any
from urllib.parse import quote

import httpx
import pytest
import uvicorn
from jsonschema import Draft202012Validator

from noema import ManualClock, Mind
from noema.http.app import create_app, listen
from noema.http.auth import Tokens

TOKEN = "token-for-ada-only-0123456789"
ROUTE = "/v1/minds/{mind}/facts/{key}"


class Server:
    """The HTTP API serving ``ada``, in a thread, and an httpx client holding ``TOKEN``."""

    def __init__(self, mind: Mind) -> None:
        self.started = threading.Event()
        app = create_app({"ada": mind}, tokens=Tokens({TOKEN: ["ada"]}), on_ready=self.started.set)
        self.sock = listen("127.0.0.1", 0)
        config = uvicorn.Config(
            app, lifespan="on", log_level="warning", access_log=False, ws="none"
        )
        self.server = uvicorn.Server(config)
        self.thread = threading.Thread(
            target=self.server.run, kwargs={"sockets": [self.sock]}, daemon=True
        )
        self.thread.start()
        assert self.started.wait(30), "the server did not start"
        url = f"http://127.0.0.1:{self.sock.getsockname()[1]}"
        self.http = httpx.Client(
            base_url=url, headers={"Authorization": f"Bearer {TOKEN}"}, timeout=30
        )
        self.doc: dict[str, Any] = self.http.get("/openapi.json").json()

    def fact(self, key: str, **params: str) -> httpx.Response:
        reply = self.http.get(f"/v1/minds/ada/facts/{quote(key, safe='/')}", params=params)
        responses = self.doc["paths"][ROUTE]["get"]["responses"]
        assert str(reply.status_code) in responses, (reply.status_code, reply.text)
        schema = responses[str(reply.status_code)]["content"]["application/json"]["schema"]
        Draft202012Validator({**schema, "components": self.doc["components"]}).validate(
            reply.json()
        )
        if reply.status_code >= 400:
            body = reply.json()
            assert set(body) == {"error", "field"} and "\n" not in body["error"], body
        return reply

    def stop(self) -> None:
        self.http.close()
        self.server.should_exit = True
        self.thread.join(30)
        assert not self.thread.is_alive(), "the server did not stop"
        self.sock.close()


@pytest.fixture
def server(mind: Mind) -> Iterator[Server]:
    running = Server(mind)
    yield running
    running.stop()


def test_the_route_is_in_the_openapi_document(server: Server) -> None:
    operation = server.doc["paths"][ROUTE]["get"]
    assert {p["name"] for p in operation["parameters"]} >= {"mind", "key", "as_of", "known_at"}
    assert {"200", "404", "422"} <= set(operation["responses"])


def test_a_keys_fact_now_then_and_as_known_then(
    server: Server, mind: Mind, clock: ManualClock
) -> None:
    lisbon = mind.remember("Ada lives in Lisbon", key="ada.city", epistemic="fact")
    then = clock.advance(days=10).isoformat()
    clock.advance(days=10)
    porto = mind.remember("Ada lives in Porto", key="ada.city", epistemic="fact")
    slashed = mind.remember("The build runs on Fridays", key="team/ci.schedule")

    now = server.fact("ada.city")
    assert now.status_code == 200
    assert (now.json()["id"], now.json()["status"]) == (porto.id, "active")
    assert server.fact("ada.city", as_of=then).json()["id"] == lisbon.id
    known = server.fact("ada.city", known_at=then).json()
    assert (known["id"], known["status"]) == (lisbon.id, "active")
    assert server.fact("team/ci.schedule").json()["id"] == slashed.id


def test_errors_are_one_line_and_name_their_field(server: Server, mind: Mind) -> None:
    mind.remember("Ada lives in Porto", key="ada.city")
    events = len(mind.events())
    for key, params, status, field in (
        ("ada.job", {}, 404, "key"),
        ("ada.city", {"as_of": "2000-01-01T00:00:00Z"}, 404, "key"),
        ("k" * 201, {}, 422, "key"),
        ("ada.city", {"as_of": "someday"}, 422, "as_of"),
        ("ada.city", {"known_at": "someday"}, 422, "known_at"),
        ("ada.city", {"colour": "blue"}, 422, "colour"),
    ):
        reply = server.fact(key, **params)
        assert reply.status_code == status, (key, params, reply.text)
        assert reply.json()["field"] == field, (key, params, reply.json())
    assert "no memory holds key 'ada.job' in mind 'default'" in server.fact("ada.job").text
    assert len(mind.events()) == events  # reading a fact writes nothing
