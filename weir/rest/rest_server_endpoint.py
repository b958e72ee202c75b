"""The master's REST endpoint (Flink's WebMonitorEndpoint): Flink's REST API, the web
dashboard and the OpenAPI description of the API, served by aiohttp.

Threading: the server runs its own event loop on one thread; every handler is a blocking
function (it calls the Dispatcher and the TaskExecutors over gRPC) and runs on a small
pool, so a slow TaskManager never stalls the loop. Every path is served under ``/v1``
too, as Flink serves its current API version.

TLS: ``start`` takes an ``ssl.SSLContext``; the composition root builds it from the
``security.ssl.rest.*`` keys where the cluster has them. A cluster with
``security.auth.token`` asks every request for it: ``Authorization: Bearer <token>``, or
the ``weir-token`` cookie a browser gets by opening the dashboard once as
``/?token=<token>``.
"""

from __future__ import annotations

import asyncio
import json
import logging
import math
import ssl
import threading
from collections.abc import Awaitable, Callable
from concurrent.futures import ThreadPoolExecutor
from importlib import resources
from typing import Any

from aiohttp import BodyPartReader, web
from aiohttp.http_exceptions import HttpProcessingError

from weir.core.errors import ConfigurationError
from weir.core.security import SecurityConfig

# The handler modules register their routes when imported.
from weir.rest import (  # noqa: F401
    handlers_applications,
    handlers_checkpoints,
    handlers_cluster,
    handlers_jars,
    handlers_jobmanager,
    handlers_jobs,
    handlers_savepoints,
    handlers_subtasks,
    handlers_taskmanagers,
    handlers_vertices,
)
from weir.rest.cluster_view import ClusterView
from weir.rest.errors import status_of
from weir.rest.openapi import openapi_description
from weir.rest.routes import ROUTES, RestRequest, RestResponse, Route

__all__ = ["RestServerEndpoint"]

logger = logging.getLogger(__name__)

# Handlers wait on gRPC calls; a few threads serve a dashboard and some clients at once.
_HANDLER_THREADS = 8
# An uploaded job file larger than this is refused (Flink's rest.server.max-content-length
# is 100 MiB; a Python job file is small, its data is read by its sources).
_MAX_UPLOAD_BYTES = 100 * 1024 * 1024
_START_TIMEOUT_S = 30.0
_TOKEN_COOKIE = "weir-token"  # noqa: S105 (the cookie's name, not a secret)
_WEB_PACKAGE = "weir.rest.web"
_CONTENT_TYPES = {".html": "text/html", ".js": "text/javascript", ".css": "text/css"}


def _json_default(value: Any) -> Any:
    return str(value)


def _dumps(body: Any) -> str:
    def clean(value: Any) -> Any:
        if isinstance(value, float) and not math.isfinite(value):
            return None  # JSON has no NaN; Flink sends such metrics as absent
        if isinstance(value, dict):
            return {k: clean(v) for k, v in value.items()}
        if isinstance(value, list):
            return [clean(v) for v in value]
        return value

    return json.dumps(clean(body), default=_json_default)


def _error(status: int, message: str) -> web.Response:
    return web.Response(
        status=status, text=_dumps({"errors": [message]}), content_type="application/json"
    )


class RestServerEndpoint:
    """``start`` binds and serves; ``close`` stops. A context manager."""

    def __init__(self, view: ClusterView, security: SecurityConfig | None = None) -> None:
        self._view = view
        self._security = security or SecurityConfig()
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None
        self._runner: web.AppRunner | None = None
        self._pool = ThreadPoolExecutor(_HANDLER_THREADS, thread_name_prefix="weir-rest")
        self.address = ""
        self.url = ""

    # -- the app ---------------------------------------------------------------------------

    def _app(self) -> web.Application:
        app = web.Application(
            middlewares=[self._errors, self._authenticate], client_max_size=_MAX_UPLOAD_BYTES
        )
        # Fixed paths before templated ones: /jobs/overview is not a job id.
        ordered = sorted(ROUTES, key=lambda r: ("{" in r.path, r.path))
        for prefix in ("", "/v1"):
            for r in ordered:
                app.router.add_route(r.method, prefix + r.path, self._handler(r))
            app.router.add_get(prefix + "/openapi.json", self._openapi)
        app.router.add_get("/", self._index)
        app.router.add_get("/web/{name}", self._asset)
        return app

    @web.middleware
    async def _errors(
        self, request: web.Request, handler: Callable[[web.Request], Awaitable[web.StreamResponse]]
    ) -> web.StreamResponse:
        try:
            return await handler(request)
        except web.HTTPNotFound:
            return _error(404, f"Not found: {request.path}")
        except web.HTTPMethodNotAllowed as exc:
            allowed = ", ".join(sorted(exc.allowed_methods))
            return _error(405, f"{request.method} is not allowed on {request.path}: use {allowed}")
        except web.HTTPRequestEntityTooLarge:
            return _error(413, f"the request body is larger than {_MAX_UPLOAD_BYTES} bytes")
        except web.HTTPException:
            raise
        except Exception as exc:
            status = status_of(exc)
            if status >= 500:
                logger.warning("REST %s %s failed", request.method, request.path, exc_info=True)
            return _error(status, str(exc) or type(exc).__name__)

    @web.middleware
    async def _authenticate(
        self, request: web.Request, handler: Callable[[web.Request], Awaitable[web.StreamResponse]]
    ) -> web.StreamResponse:
        security = self._security
        if not security.token:
            return await handler(request)
        scheme, _, bearer = request.headers.get("Authorization", "").partition(" ")
        if scheme.lower() == "bearer" and security.token_matches(bearer.strip()):
            return await handler(request)
        if security.token_matches(request.cookies.get(_TOKEN_COOKIE, "")):
            return await handler(request)
        offered = request.query.get("token")
        if request.path == "/" and offered is not None and security.token_matches(offered):
            # The dashboard opened with its token: remember it in a cookie, drop it from the URL.
            response = web.Response(status=302, headers={"Location": "/"})
            response.set_cookie(
                _TOKEN_COOKIE,
                security.token,
                httponly=True,
                samesite="Strict",
                secure=request.secure,
            )
            return response
        return _error(
            401,
            "this cluster requires security.auth.token: send it as 'Authorization: Bearer "
            "<token>', or open the dashboard once as /?token=<token>",
        )

    def _handler(self, route: Route) -> Callable[[web.Request], Awaitable[web.Response]]:
        async def handle(request: web.Request) -> web.Response:
            body: Any = None
            if route.request_body == "multipart":
                try:
                    body = await _read_upload(request)
                except HttpProcessingError as exc:  # aiohttp's parser refused a part
                    msg = (
                        f"the multipart body cannot be read ({exc.message}): send the file "
                        "as multipart/form-data, its part named 'jobfile' ('jarfile' from "
                        "the dashboard)"
                    )
                    return _error(400, msg)
            elif route.request_body == "json" and request.can_read_body:
                raw = await request.read()
                if raw.strip():
                    body, problem = _decode_json(raw, request.charset or "utf-8")
                    if problem:
                        return _error(400, problem)
            req = RestRequest(
                path_params=dict(request.match_info),
                query=dict(request.query),
                body=body,
                base_url=f"{request.scheme}://{request.host}",
            )
            loop = asyncio.get_running_loop()
            result = await loop.run_in_executor(self._pool, route.handler, self._view, req)
            if not isinstance(result, RestResponse):
                result = RestResponse(result, status=route.status)
            if result.content_type == "application/json":
                return web.Response(
                    status=result.status, text=_dumps(result.body), content_type="application/json"
                )
            return web.Response(
                status=result.status, text=str(result.body), content_type=result.content_type
            )

        return handle

    async def _openapi(self, request: web.Request) -> web.Response:
        spec = openapi_description(ROUTES, handlers_cluster.weir_version())
        return web.Response(text=_dumps(spec), content_type="application/json")

    async def _index(self, request: web.Request) -> web.Response:
        return await self._serve_asset("index.html")

    async def _asset(self, request: web.Request) -> web.Response:
        return await self._serve_asset(request.match_info["name"])

    async def _serve_asset(self, name: str) -> web.Response:
        suffix = name[name.rfind(".") :] if "." in name else ""
        if "/" in name or name.startswith(".") or suffix not in _CONTENT_TYPES:
            raise web.HTTPNotFound
        asset = resources.files(_WEB_PACKAGE).joinpath(name)
        if not asset.is_file():
            raise web.HTTPNotFound
        return web.Response(
            body=asset.read_bytes(),
            content_type=_CONTENT_TYPES[suffix],
            charset="utf-8",
        )

    # -- lifecycle ---------------------------------------------------------------------------

    def start(
        self,
        host: str,
        port: int,
        *,
        advertised_host: str = "",
        ssl_context: ssl.SSLContext | None = None,
    ) -> str:
        """Serve on ``host:port`` (0: any free port); returns the bound ``host:port``."""
        ready = threading.Event()
        failure: list[BaseException] = []
        loop = asyncio.new_event_loop()
        self._loop = loop

        async def serve() -> None:
            runner = web.AppRunner(self._app(), access_log=None)
            await runner.setup()
            site = web.TCPSite(runner, host, port, ssl_context=ssl_context, reuse_address=True)
            await site.start()
            self._runner = runner
            server: Any = site._server  # aiohttp keeps the asyncio server private
            sockets = server.sockets if server is not None else []
            bound = sockets[0].getsockname()[1] if sockets else port
            self.address = f"{advertised_host or host}:{bound}"
            scheme = "https" if ssl_context is not None else "http"
            self.url = f"{scheme}://{self.address}"

        def run() -> None:
            asyncio.set_event_loop(loop)
            try:
                loop.run_until_complete(serve())
            except BaseException as exc:  # reported to start() below
                failure.append(exc)
                ready.set()
                return
            ready.set()
            loop.run_forever()

        self._thread = threading.Thread(target=run, name="weir-rest", daemon=True)
        self._thread.start()
        if not ready.wait(_START_TIMEOUT_S) or failure:
            self.close()
            cause = failure[0] if failure else TimeoutError("the REST endpoint did not start")
            msg = (
                f"the REST endpoint could not listen on {host}:{port} ({cause}); set rest.port "
                "to a free port (0 = any) or rest.bind-address to another interface"
            )
            raise ConfigurationError(msg) from cause
        logger.info("REST endpoint and web dashboard at %s", self.url)
        return self.address

    def close(self) -> None:
        loop, thread, runner = self._loop, self._thread, self._runner
        self._loop = self._thread = self._runner = None
        if loop is not None and thread is not None and thread.is_alive():
            if runner is not None:
                asyncio.run_coroutine_threadsafe(runner.cleanup(), loop).result(10)
            loop.call_soon_threadsafe(loop.stop)
            thread.join(10)
        if loop is not None and not loop.is_running():
            loop.close()
        self._pool.shutdown(wait=False, cancel_futures=True)
        self._view.close()

    def __enter__(self) -> RestServerEndpoint:
        return self

    def __exit__(self, *_: object) -> None:
        self.close()


def _decode_json(raw: bytes, charset: str) -> tuple[Any, str]:
    """A request's JSON body and "", or None and what is wrong with it (for a 400)."""
    try:
        return json.loads(raw.decode(charset)), ""
    except (UnicodeDecodeError, LookupError) as exc:
        return None, f"the request body is not text in {charset}: {exc}; send UTF-8 JSON"
    except json.JSONDecodeError as exc:
        return None, f"the request body is not JSON: {exc}"
    except RecursionError:
        return None, "the request body nests its JSON too deeply to be read"


async def _read_upload(request: web.Request) -> dict[str, Any] | None:
    if not request.content_type.startswith("multipart/"):
        return None
    reader = await request.multipart()
    async for part in reader:
        # POST /jobs names its file part "jobfile"; the dashboard's jar upload "jarfile".
        if isinstance(part, BodyPartReader) and part.name in ("jobfile", "jarfile"):
            content = await part.read()
            return {"filename": part.filename, "content": bytes(content)}
    return None
