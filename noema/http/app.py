"""The Starlette application of ``noema serve``: routes, auth, errors, MCP, lifespan.

``create_app(minds, tokens=...)`` serves minds that are already open (the CLI
opens them, so a bad store or mind name is a one-line error before anything
listens); the application owns them from then on and closes them when it stops.

A request goes: token (401 when missing or unknown) → mind (404 when not
served) → scope (403 when the token does not open that mind) → query string and
body, checked against the route's models (400 for JSON that does not parse, 413
past the size limit, 415 for another content type, 422 for a field that is
missing, of the wrong type, out of range or unknown) → the mind, through
``AsyncMind`` → JSON. Noema's errors map to statuses by :func:`status_of`; every
error is one line of JSON, ``{"error": "...", "field": ...}``, and nothing was
written. Before any of that, on every route, the request's ``Host`` must be one
the server answers to (:class:`~noema.http.auth.AllowedHosts`, else 421), so a
web page cannot reach the server through DNS rebinding; a browser's ``Origin``,
when sent, must name one of those too (else 403).

Each mind's MCP server (``noema.mcp.server.build_server``) is served over
streamable HTTP at ``/v1/minds/{mind}/mcp`` by the SDK's session manager, behind
the same token check; a session is bound to the token that opened it.
"""

from __future__ import annotations

import contextlib
import logging
import re
import signal
import socket
import threading
from collections.abc import AsyncIterator, Callable, Iterable, Iterator, Mapping
from typing import TYPE_CHECKING, Any, get_origin
from urllib.parse import urlsplit

from mcp.server.auth.middleware.bearer_auth import AuthenticatedUser
from mcp.server.auth.provider import AccessToken
from mcp.server.transport_security import TransportSecuritySettings
from pydantic import BaseModel, ValidationError
from starlette.applications import Starlette
from starlette.exceptions import HTTPException
from starlette.requests import ClientDisconnect, Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from noema import __version__, access
from noema.access import NOBODY, Caller
from noema.errors import (
    ConfigError,
    Conflict,
    CrossMindError,
    Forbidden,
    InvalidInput,
    NoemaError,
    NotFound,
    PolicyViolation,
    StorageError,
    TemporalOrderError,
    UsageError,
    from_validation,
)
from noema.http._served import HttpError, Served, ServedMinds, error_response
from noema.http.auth import AllowedHosts, Grant, Tokens, bearer, is_loopback
from noema.http.openapi import MCP_PATH, Endpoint, build_document
from noema.http.routes import ENDPOINTS, Call
from noema.mcp.server import build_server
from noema.mind import Mind

if TYPE_CHECKING:
    import uvicorn

__all__ = [
    "DEFAULT_MAX_BODY",
    "REQUEST_TIMEOUT",
    "create_app",
    "http_server",
    "listen",
    "serve",
    "status_of",
]

logger = logging.getLogger("noema.http")

#: Largest request body, in bytes (a memory's content is at most 100,000 characters).
DEFAULT_MAX_BODY = 1_048_576
#: Seconds a client has to send a whole request (head and body) once its connection is open
#: or it has begun the request; then the connection is closed.
REQUEST_TIMEOUT = 30.0
_OPEN = Grant(minds=frozenset(), client="open", open=True)
_JSON_TYPE = re.compile(r"^application/([\w.+-]+\+)?json\s*(;.*)?$", re.IGNORECASE)


def status_of(exc: NoemaError) -> int:
    """The HTTP status of one of Noema's errors (``noema.errors``)."""
    if isinstance(exc, NotFound):
        return 404
    if isinstance(exc, Forbidden):
        return 403
    if isinstance(exc, TemporalOrderError | Conflict):
        return 409
    if isinstance(exc, InvalidInput | PolicyViolation | CrossMindError | ConfigError):
        return 422
    if isinstance(exc, UsageError):
        return 400
    if isinstance(exc, StorageError):
        return 503
    return 500


def _validation(exc: ValidationError, *, where: str) -> HttpError:
    """A 422 naming the first field that failed (``where``: ``body`` or ``query``)."""
    first = exc.errors(include_url=False, include_input=False)[0]
    field = ".".join(str(part) for part in first["loc"]) or None
    message = str(first["msg"]).removeprefix("Value error, ")
    more = f" (and {exc.error_count() - 1} more)" if exc.error_count() > 1 else ""
    return HttpError(422, f"{field or where}: {message}{more}", field=field)


class _Api:
    """Authorises, parses and answers the requests of one application."""

    def __init__(
        self, minds: ServedMinds, tokens: Tokens | None, max_body: int, rights: Caller
    ) -> None:
        self.minds = minds
        self.tokens = tokens
        self.max_body = max_body
        self.rights = rights
        self.document: dict[str, Any] = build_document(ENDPOINTS, version=__version__)

    # ------------------------------------------------------------ who asks

    def grant(self, headers: Mapping[str, str]) -> Grant:
        """What the request's token opens (everything, on a server without tokens).

        Raises:
            HttpError: 401 without a token or with an unknown one.
        """
        if self.tokens is None:
            return _OPEN
        token = bearer(headers.get("authorization"))
        challenge = {"WWW-Authenticate": 'Bearer realm="noema"'}
        if token is None:
            raise HttpError(401, "authorization: a bearer token is needed", headers=challenge)
        grant = self.tokens.grant(token)
        if grant is None:
            raise HttpError(401, "authorization: the token is not known", headers=challenge)
        return grant

    def caller(self, grant: Grant) -> Caller:
        """The caller a grant makes: the server's rights, over the minds its token opens."""
        return self.rights.scoped(None if grant.open else grant.minds)

    def served(self, name: str, grant: Grant) -> Served:
        """The mind ``name``, when it is served and the grant opens it.

        Raises:
            HttpError: 404 when it is not served, 403 when the grant does not open it.
        """
        served = self.minds.get(name)
        if served is None:
            raise HttpError(404, f"mind: no mind {name!r} is served here", field="mind")
        if not grant.allows(name):
            raise HttpError(403, f"mind: the token does not open mind {name!r}", field="mind")
        return served

    # ------------------------------------------------------------ what it asks

    def query(self, model: type[BaseModel] | None, request: Request) -> Any:
        """The query string checked against ``model`` (none allowed without one)."""
        given = request.query_params
        if model is None:
            if given:
                key = next(iter(given.keys()))
                raise HttpError(422, f"{key}: this route takes no parameters", field=key)
            return None
        data: dict[str, Any] = {}
        for key in given:
            values = given.getlist(key)
            info = model.model_fields.get(key)
            if info is None:
                raise HttpError(422, f"{key}: not a parameter of this route", field=key)
            if get_origin(info.annotation) is list:
                data[key] = values
            elif len(values) > 1:
                raise HttpError(422, f"{key}: given more than once", field=key)
            else:
                data[key] = values[0]
        try:
            return model.model_validate(data)
        except ValidationError as exc:
            raise _validation(exc, where="query") from None

    async def body(self, model: type[BaseModel] | None, request: Request) -> Any:
        """The JSON body checked against ``model``; an empty body (no byte) is ``{}``."""
        if model is None:
            return None
        raw = await self.read(request)
        if not raw:  # white space alone is not JSON (400), as the document says
            raw = b"{}"
        else:
            kind = request.headers.get("content-type", "")
            if not _JSON_TYPE.match(kind):
                raise HttpError(
                    415, f"content-type: the body must be application/json, not {kind!r}"
                )
        try:
            return model.model_validate_json(raw)
        except ValidationError as exc:
            first = exc.errors(include_url=False, include_input=False)[0]
            if first["type"] == "json_invalid":
                raise HttpError(400, f"body: not valid JSON ({first['msg']})") from None
            raise _validation(exc, where="body") from None

    async def read(self, request: Request) -> bytes:
        """The whole body, up to ``max_body`` bytes.

        Raises:
            HttpError: 413 past the limit.
            ClientDisconnect: the client went away before the body's end.
        """
        declared = request.headers.get("content-length")
        if declared is not None and declared.isdigit() and int(declared) > self.max_body:
            raise HttpError(413, f"body: larger than {self.max_body} bytes")
        chunks: list[bytes] = []
        size = 0
        async for chunk in request.stream():
            size += len(chunk)
            if size > self.max_body:
                raise HttpError(413, f"body: larger than {self.max_body} bytes")
            chunks.append(chunk)
        return b"".join(chunks)

    # ------------------------------------------------------------ the answer

    def endpoint(self, operations: Mapping[str, Endpoint]) -> Callable[[Request], Any]:
        """The Starlette endpoint of one path: its operations by method (HEAD: GET's).

        One route a path, so a 405's ``Allow`` names every method the path has.
        """

        async def answer(request: Request) -> Response:
            method = "GET" if request.method == "HEAD" else request.method
            operation = operations[method]
            try:
                return await self._answer(operation, request)
            except HttpError as exc:
                return exc.response()
            except ClientDisconnect:  # gone mid-body: nobody to answer, nothing written
                return Response(status_code=400)
            except NoemaError as exc:
                status = status_of(exc)
                if status >= 500:
                    logger.error("%s %s failed: %s", request.method, request.url.path, exc)
                return error_response(status, str(exc), getattr(exc, "field", None))
            except ValidationError as exc:  # raised inside a call, about its input
                problem = from_validation(exc)
                return error_response(422, str(problem), problem.field)
            except Exception:
                logger.exception("%s %s failed", request.method, request.url.path)
                return error_response(500, "internal error: the server's log has the details")

        answer.__name__ = "_".join(op.name for op in operations.values())
        return answer

    async def _answer(self, operation: Endpoint, request: Request) -> Response:
        grant = self.grant(request.headers) if operation.auth else _OPEN
        params = dict(request.path_params)
        mind = params.pop("mind", None)
        served = None if mind is None else self.served(mind, grant)
        query = self.query(operation.query, request)
        body = await self.body(operation.body, request)
        call = Call(
            served=served,
            grant=grant,
            params=params,
            body=body,
            query=query,
            minds=tuple(self.minds.names),
        )
        # A route without auth acts as nobody: it may do nothing a server must allow.
        with access.acting_as(self.caller(grant) if operation.auth else NOBODY):
            result = await operation.handler(call)
        if isinstance(result, Response):
            return result
        return JSONResponse(result, status_code=operation.status)


class _McpEndpoint:
    """Each mind's MCP endpoint: the token check, then the mind's session manager."""

    def __init__(self, api: _Api) -> None:
        self.api = api

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        request = Request(scope, receive)
        try:
            grant = self.api.grant(request.headers)
            served = self.api.served(str(request.path_params["mind"]), grant)
            # Read whole here: the SDK logs a traceback for a client gone mid-body.
            body = await self.api.read(request) if scope["method"] == "POST" else None
        except HttpError as exc:
            await exc.response()(scope, receive, send)
            return
        except ClientDisconnect:  # nobody to answer
            return
        if not grant.open:  # the SDK binds a session to the credential that opened it
            token = AccessToken(token=grant.client, client_id=grant.client, scopes=[served.name])
            scope["user"] = AuthenticatedUser(token)
        # The SDK runs each tool call in the context of the request that sent it:
        # the tools act as this token's caller (else as the mind's, NOBODY).
        with access.acting_as(self.api.caller(grant)):
            await served.mcp.handle_request(scope, _replay(body, receive), send)


def _replay(body: bytes | None, receive: Receive) -> Receive:
    """``receive``, with ``body`` (already read; ``None``: not read) as the first message."""
    if body is None:
        return receive
    pending = [body]

    async def replay() -> Message:
        if pending:
            return {"type": "http.request", "body": pending.pop(), "more_body": False}
        return await receive()

    return replay


class _HostCheck:
    """Refuses, on every route, a request to a ``Host`` or from an ``Origin`` not answered.

    421 for the ``Host`` (missing, repeated, or not one of :class:`AllowedHosts`),
    403 for an ``Origin`` a browser sends from a page of another host.
    """

    def __init__(self, app: ASGIApp, hosts: AllowedHosts) -> None:
        self.app = app
        self.hosts = hosts

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http":
            refusal = self.refusal(scope["headers"], scope.get("server"))
            if refusal is not None:
                await refusal(scope, receive, send)
                return
        await self.app(scope, receive, send)

    def refusal(
        self, headers: Iterable[tuple[bytes, bytes]], server: tuple[str, int] | None
    ) -> Response | None:
        """The 421 or 403 a request with these headers gets, or ``None`` to answer it."""
        hosts = [value.decode("latin-1") for key, value in headers if key == b"host"]
        origins = [value.decode("latin-1") for key, value in headers if key == b"origin"]
        host = hosts[0] if len(hosts) == 1 else None
        if not self.hosts.allows(host, server):
            given = f"does not answer to {', '.join(hosts)!r}" if hosts else "needs a Host header"
            return error_response(421, f"host: this server {given}")
        for origin in origins:
            if not self.hosts.allows(urlsplit(origin).netloc, server):
                return error_response(403, f"origin: this server does not answer to {origin!r}")
        return None


async def _http_error(request: Request, exc: Exception) -> Response:
    assert isinstance(exc, HTTPException)
    messages = {404: f"path: no route {request.url.path!r}", 405: "method: not allowed here"}
    message = messages.get(exc.status_code, str(exc.detail))
    return error_response(exc.status_code, message, headers=exc.headers)


async def _server_error(request: Request, exc: Exception) -> Response:
    return error_response(500, "internal error: the server's log has the details")


def create_app(
    minds: Mapping[str, Mind],
    *,
    tokens: Tokens | None,
    host: str = "127.0.0.1",
    allow_hosts: Iterable[str] = (),
    max_body: int = DEFAULT_MAX_BODY,
    on_ready: Callable[[], object] | None = None,
    allow_federation: bool = False,
    peer_urls: Iterable[str] = (),
) -> Starlette:
    """The application serving ``minds`` (by name), which it closes when it stops.

    Each request acts as the caller its token makes (``noema.access``): the minds
    it opens, and subscriptions to peers only with ``allow_federation``, to minds
    it opens and to stores at ``peer_urls``. The minds are bound to ``NOBODY``, so
    a call that does not say who asks may do nothing beyond its mind.

    Args:
        minds: open minds by the name their routes use.
        tokens: the grants of the tokens file; ``None`` serves without auth,
            which only a loopback ``host`` may.
        host: the address the server listens on.
        allow_hosts: more ``Host`` names to answer to, ``NAME[:PORT]`` each
            (:class:`~noema.http.auth.AllowedHosts`).
        max_body: the largest request body, in bytes.
        on_ready: called once every mind's MCP endpoint runs.
        allow_federation: let requests subscribe minds to peers (off by default).
        peer_urls: the other stores requests may subscribe to, by URL.

    Raises:
        UsageError: no tokens on a host that is not loopback.
        ConfigError: a mind's name holds a ``/``, which a path cannot carry, or
            an ``allow_hosts`` value is not ``NAME[:PORT]``.
    """
    if tokens is None and not is_loopback(host):
        raise UsageError(
            f"serve: refusing to serve {host} without auth: pass --tokens FILE "
            "(make one with --new-token MIND)"
        )
    for name in minds:
        if "/" in name:
            raise ConfigError(f"serve: the mind {name!r} holds '/', which a URL path cannot carry")
    hosts = AllowedHosts(host, allow_hosts)
    # The SDK's own Host check matches by prefix and cannot know the allowed names: ours runs first.
    security = TransportSecuritySettings(enable_dns_rebinding_protection=False)
    served = ServedMinds(minds)
    for one in served:
        one.amind.mind.caller = NOBODY
        server = build_server(one.amind.mind)
        server.streamable_http_app(host=host, transport_security=security)  # the session manager
        one.mcp = server.session_manager
    rights = access.serving(allow_federation=allow_federation, peer_urls=peer_urls)
    api = _Api(served, tokens, max_body, rights)

    @contextlib.asynccontextmanager
    async def lifespan(app: Starlette) -> AsyncIterator[None]:
        try:
            async with contextlib.AsyncExitStack() as stack:
                for one in served:
                    await stack.enter_async_context(one.mcp.run())
                if on_ready is not None:
                    on_ready()
                yield
        finally:
            await served.aclose()

    async def openapi(request: Request) -> Response:
        return JSONResponse(api.document)

    by_path: dict[str, dict[str, Endpoint]] = {}
    for op in ENDPOINTS:
        by_path.setdefault(op.path, {})[op.method] = op
    routes = [
        Route(path, api.endpoint(ops), methods=list(ops), name=next(iter(ops.values())).name)
        for path, ops in by_path.items()
    ]
    routes.append(Route("/openapi.json", openapi, methods=["GET"], name="openapi"))
    routes.append(Route(MCP_PATH, _McpEndpoint(api), methods=["GET", "POST", "DELETE"], name="mcp"))
    app = Starlette(
        routes=routes,
        lifespan=lifespan,
        exception_handlers={HTTPException: _http_error, Exception: _server_error},
    )
    app.router.redirect_slashes = False  # an API answers the path it was asked, or 404
    app.add_middleware(_HostCheck, hosts=hosts)
    app.state.minds = served
    app.state.document = api.document
    return app


def listen(host: str, port: int) -> socket.socket:
    """A TCP socket listening on ``host``:``port`` (0: any free port), for :func:`serve`.

    Made with the protocol named (``IPPROTO_TCP``): asyncio sets ``TCP_NODELAY``
    only on such sockets, and without it each reply's body waits out the
    client's delayed ACK (about 40 ms).

    Raises:
        OSError: the address cannot be bound.
    """
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM, socket.IPPROTO_TCP)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind((host, port))
        sock.listen(128)
    except BaseException:
        sock.close()
        raise
    return sock


def serve(
    app: Starlette,
    sock: socket.socket,
    *,
    log_level: str = "warning",
    access_log: bool = False,
) -> None:
    """Run ``app`` with uvicorn on the listening socket ``sock`` until SIGINT or SIGTERM.

    Either signal stops it cleanly: requests under way finish (for up to 5
    seconds), the minds are closed, and it returns (uvicorn alone would then
    raise the signal again, so the process would die of it).
    """
    http_server(app, log_level=log_level, access_log=access_log).run(sockets=[sock])


def http_server(
    app: Starlette,
    *,
    log_level: str = "warning",
    access_log: bool = False,
    request_timeout: float = REQUEST_TIMEOUT,
) -> uvicorn.Server:
    """The uvicorn server :func:`serve` runs (``run(sockets=[sock])``; ``should_exit`` stops it).

    A connection that has not sent a whole request ``request_timeout`` seconds
    after it opened or began the request is closed (uvicorn alone would hold it
    for ever), as is one idle for 5 seconds between requests.
    """
    import uvicorn

    from noema.http._protocol import timed_protocol

    class Server(uvicorn.Server):
        @contextlib.contextmanager
        def capture_signals(self) -> Iterator[None]:
            if threading.current_thread() is not threading.main_thread():
                yield
                return
            stops = (signal.SIGINT, signal.SIGTERM)
            saved = {sig: signal.signal(sig, self.handle_exit) for sig in stops}
            try:
                yield
            finally:
                for sig, handler in saved.items():
                    signal.signal(sig, handler)

    config = uvicorn.Config(
        app,
        lifespan="on",
        log_level=log_level,
        access_log=access_log,
        timeout_graceful_shutdown=5,
        ws="none",
        http=timed_protocol(request_timeout),
    )
    return Server(config)
