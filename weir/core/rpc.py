"""gRPC plumbing every service shares: servers, channels, and the one place where
``grpc.StatusCode`` becomes a Weir error (and back).

Servicers raise Weir errors; ``translate_server_errors`` turns them into status codes
with the message intact. A servicer decodes each request field it turns into one of our
types through ``decode_field``, so a value it cannot decode answers INVALID_ARGUMENT naming
the field, never INTERNAL. Clients call through ``call()``, which maps every status code
to one Weir error class (``raise ... from exc``), so no caller handles ``grpc.RpcError``.
"""

from __future__ import annotations

import asyncio
import errno
import functools
import inspect
import logging
import socket
import sys
import threading
import traceback
import weakref
from collections.abc import Awaitable, Callable, Coroutine
from concurrent import futures
from typing import Any, TypeVar

import grpc

from weir.core import errors
from weir.core.port_range import parse_port_range
from weir.core.security import (
    AioTokenClientInterceptor,
    Endpoint,
    SecurityConfig,
    TokenClientInterceptor,
)

logger = logging.getLogger(__name__)

T = TypeVar("T")

# A JobGraph carries pickled user functions and collections; gRPC's 4 MiB default is
# too small for a from_collection of a few hundred thousand elements.
MAX_MESSAGE_BYTES = 256 * 1024 * 1024
_CHANNEL_OPTIONS = [
    ("grpc.max_send_message_length", MAX_MESSAGE_BYTES),
    ("grpc.max_receive_message_length", MAX_MESSAGE_BYTES),
    # Loopback and LAN peers: fail fast when a peer is gone instead of retrying for 20 s.
    ("grpc.initial_reconnect_backoff_ms", 100),
    ("grpc.max_reconnect_backoff_ms", 1000),
    ("grpc.enable_retries", 0),
]

# Servers own their port: gRPC sets SO_REUSEPORT by default, which lets a second server
# (a second master on jobmanager.rpc.port) bind the same port and take half the calls.
_SERVER_OPTIONS = [*_CHANNEL_OPTIONS, ("grpc.so_reuseport", 0)]

# The slot protocol between JobMasters and the ResourceManager (resourcemanager.proto):
# 2 queues RequestSlots and offers the slots with JobMaster.OfferSlots. Both sides send
# it; a ResourceManager refuses a JobMaster that speaks another.
SLOT_PROTOCOL_VERSION = 2

# Weir error class -> status code on the server side.
_ERROR_TO_CODE: list[tuple[type[BaseException], grpc.StatusCode]] = [
    (errors.InvalidRequestError, grpc.StatusCode.INVALID_ARGUMENT),
    (errors.JobNotFoundError, grpc.StatusCode.NOT_FOUND),
    (errors.TaskManagerNotFoundError, grpc.StatusCode.NOT_FOUND),
    (errors.InvalidJobIdError, grpc.StatusCode.INVALID_ARGUMENT),
    (errors.ConfigurationError, grpc.StatusCode.INVALID_ARGUMENT),
    (errors.JobGraphError, grpc.StatusCode.INVALID_ARGUMENT),
    (errors.JobSubmissionError, grpc.StatusCode.FAILED_PRECONDITION),
    (errors.SlotAllocationError, grpc.StatusCode.RESOURCE_EXHAUSTED),
    (errors.LeaderLostError, grpc.StatusCode.UNAVAILABLE),
    (errors.RemoteTimeoutError, grpc.StatusCode.DEADLINE_EXCEEDED),
    (errors.TaskManagerLostError, grpc.StatusCode.ABORTED),
    (errors.UnknownKvStateKeyGroupLocationError, grpc.StatusCode.UNAVAILABLE),
    (errors.QueryableStateError, grpc.StatusCode.NOT_FOUND),
    (errors.WeirError, grpc.StatusCode.FAILED_PRECONDITION),
]

# Status code -> Weir error class on the client side. Every code has an entry
# (tests/unit/core/test_rpc.py checks this).
CODE_TO_ERROR: dict[grpc.StatusCode, type[errors.RemoteError] | type[errors.WeirError]] = {
    grpc.StatusCode.OK: errors.RemoteError,
    grpc.StatusCode.CANCELLED: errors.RemoteError,
    grpc.StatusCode.UNKNOWN: errors.RemoteError,
    grpc.StatusCode.INVALID_ARGUMENT: errors.JobGraphError,
    grpc.StatusCode.DEADLINE_EXCEEDED: errors.RemoteTimeoutError,
    grpc.StatusCode.NOT_FOUND: errors.JobNotFoundError,
    grpc.StatusCode.ALREADY_EXISTS: errors.JobSubmissionError,
    grpc.StatusCode.PERMISSION_DENIED: errors.RemoteError,
    grpc.StatusCode.RESOURCE_EXHAUSTED: errors.SlotAllocationError,
    grpc.StatusCode.FAILED_PRECONDITION: errors.JobSubmissionError,
    grpc.StatusCode.ABORTED: errors.TaskManagerLostError,
    grpc.StatusCode.OUT_OF_RANGE: errors.RemoteError,
    grpc.StatusCode.UNIMPLEMENTED: errors.RemoteError,
    grpc.StatusCode.INTERNAL: errors.RemoteError,
    grpc.StatusCode.UNAVAILABLE: errors.ServiceUnavailableError,
    grpc.StatusCode.DATA_LOSS: errors.RemoteError,
    grpc.StatusCode.UNAUTHENTICATED: errors.AuthenticationError,
}

# The client-side class for an error the server raised on purpose, by name (so a
# ConfigurationError stays a ConfigurationError, not just "INVALID_ARGUMENT").
_BY_NAME: dict[str, type[errors.WeirError]] = {
    cls.__name__: cls
    for cls in (
        errors.ConfigurationError,
        errors.InvalidRequestError,
        errors.JobGraphError,
        errors.JobSubmissionError,
        errors.JobNotFoundError,
        errors.InvalidJobIdError,
        errors.SlotAllocationError,
        errors.TaskManagerLostError,
        errors.TaskManagerNotFoundError,
        errors.LeaderLostError,
        errors.JobExecutionError,
        errors.DeploymentVersionError,
        errors.CheckpointError,
        errors.StateMigrationError,
        errors.QueryableStateError,
        errors.UnknownKvStateLocationError,
        errors.UnknownKvStateKeyGroupLocationError,
        errors.UnknownKvStateIdError,
        errors.UnknownKeyOrNamespaceError,
    )
}
_NAME_SEPARATOR = ": "


def decode_field(field: str, decode: Callable[[Any], T], value: Any) -> T:
    """``decode(value)`` for the request field at path ``field`` (``options.checkpoint_type``);
    a value ``decode`` refuses (ValueError, or CorruptCheckpointError for an encoded task
    state) becomes an InvalidRequestError naming the field, which answers INVALID_ARGUMENT.
    Other errors pass: a DeploymentVersionError, say, is not about one field's value."""
    try:
        return decode(value)
    except errors.InvalidRequestError:
        raise  # a field inside this one, named already
    except (ValueError, errors.CorruptCheckpointError) as exc:
        msg = (
            f"the request's field {field} cannot be decoded{_shown(value)}: {exc}; is the "
            "caller a Weir process of this version?"
        )
        raise errors.InvalidRequestError(msg, field=field) from exc


def _shown(value: Any) -> str:
    """A short view of a field's value for a message ("" for a message-typed field)."""
    if isinstance(value, bytes | bytearray):
        head = bytes(value[:24])
        return f" ({len(value)} bytes: {head!r}{'...' if len(value) > 24 else ''})"
    if isinstance(value, str | int | float):
        text = repr(value)
        return f" ({text[:80]}{'...' if len(text) > 80 else ''})"
    return ""


def status_code_for(exc: BaseException) -> grpc.StatusCode:
    for cls, code in _ERROR_TO_CODE:
        if isinstance(exc, cls):
            return code
    return grpc.StatusCode.INTERNAL


def translate_server_errors(method: Callable[..., T]) -> Callable[..., T]:
    """Decorator for servicer methods: a raised Weir error aborts the call with its status
    code and ``"ErrorClass: message"``; anything else is INTERNAL with the traceback logged.
    Coroutine methods (of an ``AsyncioServer``'s servicers) get a coroutine wrapper."""
    if inspect.iscoroutinefunction(method):
        return _translate_async_server_errors(method)  # type: ignore[return-value]

    @functools.wraps(method)
    def wrapper(self: Any, request: Any, context: grpc.ServicerContext) -> T:
        try:
            return method(self, request, context)
        except errors.WeirError as exc:
            context.abort(status_code_for(exc), f"{type(exc).__name__}{_NAME_SEPARATOR}{exc}")
        except Exception as exc:
            logger.exception("%s failed", method.__qualname__)
            context.abort(
                grpc.StatusCode.INTERNAL,
                f"internal error in {method.__qualname__}: {exc!r}\n{traceback.format_exc()}",
            )
        unreachable = "context.abort raises"
        raise AssertionError(unreachable)

    return wrapper


def _translate_async_server_errors(
    method: Callable[..., Awaitable[T]],
) -> Callable[..., Awaitable[T]]:
    @functools.wraps(method)
    async def wrapper(self: Any, request: Any, context: grpc.aio.ServicerContext) -> T:
        try:
            return await method(self, request, context)
        except errors.WeirError as exc:
            await context.abort(status_code_for(exc), f"{type(exc).__name__}{_NAME_SEPARATOR}{exc}")
        except Exception as exc:
            logger.exception("%s failed", method.__qualname__)
            await context.abort(
                grpc.StatusCode.INTERNAL,
                f"internal error in {method.__qualname__}: {exc!r}\n{traceback.format_exc()}",
            )
        unreachable = "context.abort raises"
        raise AssertionError(unreachable)

    return wrapper


def map_rpc_error(exc: grpc.RpcError, what: str) -> errors.WeirError:
    """The Weir error for a failed call; ``what`` names the call for the message."""
    code = exc.code() if hasattr(exc, "code") else grpc.StatusCode.UNKNOWN
    details = (exc.details() if hasattr(exc, "details") else None) or str(exc)
    name, sep, rest = details.partition(_NAME_SEPARATOR)
    if sep and name in _BY_NAME:
        return _BY_NAME[name](rest)
    cls = CODE_TO_ERROR.get(code, errors.RemoteError)
    message = f"{what} failed ({code.name}): {details}"
    if code is grpc.StatusCode.UNAVAILABLE:
        tls_hint = _tls_hint(details)
        if tls_hint and "Socket closed" not in details:
            return errors.AuthenticationError(f"{message}; {tls_hint}", code=code.name)
        # A server that closes at once may be a TLS server or one that just went away:
        # still unavailable (failover treats it so), with both explanations.
        message += f"; {tls_hint or 'is the service running and its address right?'}"
    if issubclass(cls, errors.RemoteError):
        return cls(message, code=code.name)
    return cls(message)


def _tls_hint(details: str) -> str:
    """What to do about a connection that failed for TLS reasons ("" if it did not)."""
    if "WRONG_VERSION_NUMBER" in details:
        return (
            "this side uses TLS and the server does not (or the other way round): turn "
            "security.ssl.internal.enabled (inside the cluster) or security.ssl.rest.enabled "
            "(clients of the Dispatcher) on or off alike on both sides"
        )
    if "CERTIFICATE_VERIFY_FAILED" in details or "Tls handshake failed" in details:
        return (
            "the TLS handshake failed: each side's certificate must be signed by a CA in the "
            "other's trust-cert (security.ssl.*.trust-cert), and name the host it is "
            "reached at unless security.ssl.verify-hostname is off"
        )
    if "Socket closed" in details:
        return (
            "is the service running and its address right? If it has TLS on "
            "(security.ssl.internal.enabled, or security.ssl.rest.enabled for the "
            "Dispatcher), this side needs TLS too, with the cluster's cert, key and "
            "trust-cert"
        )
    return ""


def call(what: str, stub_method: Callable[..., T], request: Any, timeout: float | None = 30.0) -> T:
    """Invoke a unary RPC, mapping failures to Weir errors."""
    try:
        return stub_method(request, timeout=timeout)
    except grpc.RpcError as exc:
        raise map_rpc_error(exc, what) from exc


def create_channel(
    address: str, security: SecurityConfig, endpoint: Endpoint = Endpoint.INTERNAL
) -> grpc.Channel:
    """A channel to an ``endpoint`` of that kind at ``address``, with TLS and the token as
    ``security`` says."""
    options = [*_CHANNEL_OPTIONS, *security.channel_options(endpoint)]
    credentials = security.channel_credentials(endpoint)
    if credentials is None:
        channel = grpc.insecure_channel(address, options=options)
    else:
        channel = grpc.secure_channel(address, credentials, options=options)
    if security.token:
        channel = grpc.intercept_channel(channel, TokenClientInterceptor(security.token))
    return channel


def create_aio_channel(
    address: str, security: SecurityConfig, endpoint: Endpoint = Endpoint.INTERNAL
) -> grpc.aio.Channel:
    """A channel for coroutines of an ``AsyncioServer``'s loop; create it on that loop."""
    options = [*_CHANNEL_OPTIONS, *security.channel_options(endpoint)]
    interceptors = [AioTokenClientInterceptor(security.token)] if security.token else None
    credentials = security.channel_credentials(endpoint)
    if credentials is None:
        return grpc.aio.insecure_channel(address, options=options, interceptors=interceptors)
    return grpc.aio.secure_channel(address, credentials, options=options, interceptors=interceptors)


async def call_async(
    what: str, stub_method: Callable[..., Any], request: Any, timeout: float | None = 30.0
) -> Any:
    """``call()`` for a grpc.aio stub: awaits the answer, maps failures to Weir errors."""
    try:
        return await stub_method(request, timeout=timeout)
    except grpc.RpcError as exc:
        raise map_rpc_error(exc, what) from exc


class AsyncioServer:
    """A grpc.aio server on an event loop in a thread of its own, for a service whose
    calls may wait (long polls): a waiting call is a coroutine, so any number of them
    hold no thread. Its servicers' methods are coroutines; blocking work goes to
    ``run_blocking`` (a thread pool of ``max_workers``), never onto the loop.

    Thread-safe: ``start``, ``bind``, ``stop`` and ``call_soon`` may be called from any
    thread other than the loop's."""

    def __init__(
        self,
        name: str,
        max_workers: int = 16,
        *,
        security: SecurityConfig,
        endpoint: Endpoint = Endpoint.REST,
    ) -> None:
        self.security = security
        self._credentials = security.server_credentials(endpoint)
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._loop.run_forever, name=name, daemon=True)
        self._thread.start()
        self._pool = futures.ThreadPoolExecutor(max_workers, thread_name_prefix=f"{name}-worker")
        self._stopped = False

        async def create() -> grpc.aio.Server:
            return grpc.aio.server(
                options=_SERVER_OPTIONS, interceptors=security.aio_server_interceptors(endpoint)
            )

        self.server: grpc.aio.Server = self._run(create())

    def _run(self, coroutine: Coroutine[Any, Any, T], timeout: float | None = None) -> T:
        return asyncio.run_coroutine_threadsafe(coroutine, self._loop).result(timeout)

    @property
    def loop(self) -> asyncio.AbstractEventLoop:
        return self._loop

    def call_soon(self, callback: Callable[[], None]) -> None:
        """Run ``callback`` on the loop (from any thread); a no-op once stopped."""
        if not self._stopped:
            try:
                self._loop.call_soon_threadsafe(callback)
            except RuntimeError:  # the loop closed meanwhile
                return

    async def run_blocking(self, function: Callable[..., T], *args: Any) -> T:
        """Run a blocking ``function(*args)`` on the pool and await its result."""
        return await self._loop.run_in_executor(self._pool, functools.partial(function, *args))

    def bind(self, host: str, port: int = 0, *, port_key: str = "", advertise: str = "") -> str:
        """As ``bind()`` for a server of the thread pool kind."""
        return _advertised(_bind(self.server, self._credentials, host, port, port_key), advertise)

    def start(self) -> None:
        self._run(self.server.start())

    def stop(self, grace_s: float) -> None:
        """Stop serving (in-flight calls get ``grace_s``), end the loop, its thread and the
        pool. Idempotent; bounded as ``stop_server`` is."""
        if self._stopped:
            return
        self._stopped = True
        try:
            self._run(self.server.stop(grace_s), timeout=grace_s + 5.0)
        except futures.TimeoutError:
            logger.warning("a gRPC server did not stop within %.0f s", grace_s + 5.0)
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(5.0)
        if not self._thread.is_alive():
            self._loop.close()
        self._pool.shutdown(wait=not sys.is_finalizing())


# gRPC never shuts down the thread pool a server was built with, so its idle workers
# would outlive the server (and pile up in a reused Spark Python worker). We keep each
# server's pool to shut it down in stop_server().
_server_pools: weakref.WeakKeyDictionary[grpc.Server, futures.ThreadPoolExecutor] = (
    weakref.WeakKeyDictionary()
)


# The credentials each server binds its ports with (None: plaintext), for bind().
_server_credentials: weakref.WeakKeyDictionary[grpc.Server, grpc.ServerCredentials | None] = (
    weakref.WeakKeyDictionary()
)


def create_server(
    max_workers: int = 16,
    *,
    security: SecurityConfig,
    endpoint: Endpoint = Endpoint.INTERNAL,
    name: str = "grpc",
) -> grpc.Server:
    """A server for an ``endpoint`` of that kind: its ports use TLS and its calls need the
    token as ``security`` says (the token is checked before a request is decoded). Its
    worker threads are named ``<name>_<n>``, so a thread dump tells the services apart."""
    credentials = security.server_credentials(endpoint)
    pool = futures.ThreadPoolExecutor(max_workers=max_workers, thread_name_prefix=name)
    server = grpc.server(
        pool, options=_SERVER_OPTIONS, interceptors=security.server_interceptors(endpoint)
    )
    _server_pools[server] = pool
    _server_credentials[server] = credentials
    return server


def stop_server(server: grpc.Server, grace_s: float) -> None:
    """Stop ``server`` (in-flight calls get ``grace_s``) and end its worker threads.

    Waits are bounded: at interpreter exit gRPC's own threads may already be gone, and a
    process that is going down must not hang on them.
    """
    if not server.stop(grace=grace_s).wait(timeout=grace_s + 5.0):
        logger.warning("a gRPC server did not stop within %.0f s", grace_s + 5.0)
    pool = _server_pools.pop(server, None)
    if pool is not None:
        pool.shutdown(wait=not sys.is_finalizing())


def bind(
    server: grpc.Server, host: str, port: int = 0, *, port_key: str = "", advertise: str = ""
) -> str:
    """Bind ``server`` (made by ``create_server``) to ``host:port`` (0 picks a free port,
    race-free) and return the address others reach it at: ``advertise`` (else ``host``)
    with the bound port. ``port_key`` names the configuration key the port came from, for
    the error."""
    address = _bind(server, _server_credentials.get(server), host, port, port_key)
    return _advertised(address, advertise)


def bind_in_range(
    server: grpc.Server,
    host: str,
    ports: tuple[int, int],
    *,
    port_key: str = "",
    advertise: str = "",
) -> str:
    """As ``bind`` on the first free port of ``ports`` (``(0, 0)``: any free port)."""
    first, last = ports
    for port in range(first, last):  # all but the last: their failure is not the answer
        try:
            return bind(server, host, port, advertise=advertise)
        except errors.ServiceUnavailableError:
            continue
    return bind(server, host, last, port_key=port_key, advertise=advertise)


def bind_first_free(server: grpc.Server, host: str, port_spec: str, port_key: str) -> str:
    """As ``bind`` on the first free port of ``port_spec``, in Flink's port syntax
    (``9067``, ``9067-9077`` or a list of both; see ``weir.core.port_range``) read from
    configuration key ``port_key``. No free port: ConfigurationError naming the key and
    asking for a range (several processes on one host each need a port of their own)."""
    for port in parse_port_range(port_spec, port_key):
        try:
            return bind(server, host, port)
        except errors.ServiceUnavailableError:
            continue
    msg = (
        f"no free port in {port_spec!r} ({port_key}) on {host}: every port is in use; give "
        f"{port_key} a range such as 9067-9077, one port for each process on the host, or 0 "
        "for any"
    )
    raise errors.ConfigurationError(msg)


def _advertised(address: str, advertise: str) -> str:
    if not advertise:
        return address
    return f"{advertise}:{address.rpartition(':')[2]}"


def _port_in_use(host: str, port: int) -> bool:
    """Whether ``port`` is taken on every address of ``host``, so that gRPC could bind
    none of them (it binds every address a host resolves to and fails only when none
    binds). Probed with a socket bound the way gRPC binds its listeners (SO_REUSEADDR, no
    SO_REUSEPORT) and closed at once.

    Why probe before gRPC tries: its C core writes an ERROR line to stderr ("Failed to add
    port to server ... Address already in use") for every port it cannot bind, outside
    Python's logging, so no logging filter can hold it back. A port that is taken is the
    expected case of scanning a range, not an error. Anything else the probe meets (an
    address not of this host, a name that does not resolve) is left to gRPC to report.
    A port taken between the probe and gRPC's bind still fails as before, with its line."""
    try:
        addresses = socket.getaddrinfo(
            host.strip("[]") or None, port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE
        )
    except (OSError, UnicodeError):
        return False
    for family, kind, proto, _, sockaddr in addresses:
        with socket.socket(family, kind, proto) as probe:
            probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            try:
                probe.bind(sockaddr)
            except OSError as exc:
                if exc.errno == errno.EADDRINUSE:
                    continue
            return False  # bound (gRPC can too) or failed otherwise (gRPC says why)
    return bool(addresses)


def _bind(
    server: grpc.Server | grpc.aio.Server,
    credentials: grpc.ServerCredentials | None,
    host: str,
    port: int,
    port_key: str,
) -> str:
    where = f" ({port_key})" if port_key else ""
    if port != 0 and _port_in_use(host, port):
        msg = (
            f"cannot bind a gRPC server to {host}:{port}: port in use; stop what listens "
            f"there (another Weir master?) or choose another port{where}"
        )
        raise errors.ServiceUnavailableError(msg)
    try:
        if credentials is None:
            bound = server.add_insecure_port(f"{host}:{port}")
        else:
            bound = server.add_secure_port(f"{host}:{port}", credentials)
    except RuntimeError:  # grpcio raises where older versions returned 0
        bound = 0
    if bound == 0:
        msg = (
            f"cannot bind a gRPC server to {host}:{port}: port in use, or {host} is not an "
            f"address of this host; stop what listens there (another Weir master?) or "
            f"choose another port{where}"
        )
        raise errors.ServiceUnavailableError(msg)
    return f"{host}:{bound}"
