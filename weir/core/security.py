"""Who may talk to a Weir endpoint: mutual TLS from PEM files and a shared token.

Two kinds of endpoint, as Flink splits them (``SecurityOptions``): ``INTERNAL`` is
everything inside the cluster (ResourceManager, JobMasters, TaskExecutors, the data
plane), with ``security.ssl.internal.*``; ``REST`` is what clients use (the Dispatcher's
gRPC endpoint), with ``security.ssl.rest.*``. ``security.auth.token``, when set, is sent
by every client and cluster process with each call (metadata ``x-weir-token``) and in the
data plane's handshake, and every endpoint refuses a call without it.

A ``SecurityConfig`` is built once per component from its configuration (the PEM files are
read then) and handed to ``weir.core.rpc`` and the data plane, which make every server,
channel and socket from it. Nothing in it changes after it is built; it is safe to share
between threads.
"""

from __future__ import annotations

import enum
import hmac
import logging
import ssl
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, NamedTuple

import grpc

from weir.core import config as cfg
from weir.core.errors import ConfigurationError

logger = logging.getLogger(__name__)

CLUSTER_NAME = "weir-cluster"
"""The name servers are checked against when ``security.ssl.verify-hostname`` is off:
every certificate ``weir certs`` makes carries it."""

TOKEN_METADATA_KEY = "x-weir-token"  # noqa: S105 (the metadata key, not a secret)


class Endpoint(enum.Enum):
    INTERNAL = "internal"
    REST = "rest"


@dataclass(frozen=True, slots=True)
class TlsMaterial:
    """The PEM files of one endpoint kind, read. ``cert`` and ``key`` may be empty on a
    client that presents no certificate (REST without client authentication)."""

    endpoint: Endpoint
    cert_path: str
    key_path: str
    trust_path: str
    cert: bytes
    key: bytes
    trust: bytes

    @property
    def keys(self) -> str:
        prefix = f"security.ssl.{self.endpoint.value}"
        return f"{prefix}.cert, {prefix}.key and {prefix}.trust-cert"


def _read(key: str, path: str, endpoint: Endpoint, *, required: bool) -> bytes:
    if not path:
        if not required:
            return b""
        msg = (
            f"security.ssl.{endpoint.value}.enabled is true but {key} is not set; give the "
            "path of a PEM file (`weir certs --out DIR --hosts ...` makes them)"
        )
        raise ConfigurationError(msg)
    try:
        return Path(path).read_bytes()
    except OSError as exc:
        msg = (
            f"cannot read {key} ({path!r}): {exc.strerror or exc}; the file must exist at that "
            "path on every host of the cluster"
        )
        raise ConfigurationError(msg) from exc


def _material(
    entries: Mapping[str, str],
    endpoint: Endpoint,
    keys: tuple[cfg.ConfigOption[str], cfg.ConfigOption[str], cfg.ConfigOption[str]],
    *,
    cert_required: bool,
) -> TlsMaterial:
    cert_key, key_key, trust_key = keys
    cert_path, key_path = cfg.get(entries, cert_key), cfg.get(entries, key_key)
    trust_path = cfg.get(entries, trust_key)
    required = cert_required or bool(cert_path) or bool(key_path)
    return TlsMaterial(
        endpoint=endpoint,
        cert_path=cert_path,
        key_path=key_path,
        trust_path=trust_path,
        cert=_read(cert_key.key, cert_path, endpoint, required=required),
        key=_read(key_key.key, key_path, endpoint, required=required),
        trust=_read(trust_key.key, trust_path, endpoint, required=True),
    )


@dataclass(frozen=True, slots=True)
class SecurityConfig:
    """See the module docstring. ``SecurityConfig()`` is plaintext without a token."""

    internal: TlsMaterial | None = None
    rest: TlsMaterial | None = None
    rest_client_auth: bool = True
    verify_hostname: bool = True
    token: str = ""

    @classmethod
    def from_config(cls, entries: Mapping[str, str]) -> SecurityConfig:
        """Reads the PEM files now; raises ConfigurationError naming a missing or unreadable
        one. A process that only acts as a client of the Dispatcher (the CLI) needs no
        certificate of its own when the Dispatcher does not ask for one."""
        internal = rest = None
        if cfg.get(entries, cfg.SSL_INTERNAL_ENABLED):
            internal = _material(
                entries,
                Endpoint.INTERNAL,
                (cfg.SSL_INTERNAL_CERT, cfg.SSL_INTERNAL_KEY, cfg.SSL_INTERNAL_TRUST_CERT),
                cert_required=True,
            )
        client_auth = cfg.get(entries, cfg.SSL_REST_AUTHENTICATION_ENABLED)
        if cfg.get(entries, cfg.SSL_REST_ENABLED):
            rest = _material(
                entries,
                Endpoint.REST,
                (cfg.SSL_REST_CERT, cfg.SSL_REST_KEY, cfg.SSL_REST_TRUST_CERT),
                cert_required=False,
            )
        return cls(
            internal=internal,
            rest=rest,
            rest_client_auth=client_auth,
            verify_hostname=cfg.get(entries, cfg.SSL_VERIFY_HOSTNAME),
            token=cfg.get(entries, cfg.AUTH_TOKEN),
        )

    @property
    def enabled(self) -> bool:
        """Whether anything is asked of a peer: TLS of either kind, or the token."""
        return self.internal is not None or self.rest is not None or bool(self.token)

    def tls(self, endpoint: Endpoint) -> TlsMaterial | None:
        return self.internal if endpoint is Endpoint.INTERNAL else self.rest

    def describe(self, endpoint: Endpoint) -> str:
        """How this side talks to ``endpoint``, for error messages."""
        material = self.tls(endpoint)
        tls = f"TLS ({material.keys})" if material else "plaintext"
        return f"{tls}{', with security.auth.token' if self.token else ''}"

    # --- gRPC ------------------------------------------------------------------------
    def server_credentials(self, endpoint: Endpoint) -> grpc.ServerCredentials | None:
        """None: plaintext. Internal endpoints always require a client certificate."""
        material = self.tls(endpoint)
        if material is None:
            return None
        if not material.cert or not material.key:
            prefix = f"security.ssl.{endpoint.value}"
            msg = f"a TLS server needs {prefix}.cert and {prefix}.key; set both"
            raise ConfigurationError(msg)
        require = endpoint is Endpoint.INTERNAL or self.rest_client_auth
        return grpc.ssl_server_credentials(
            [(material.key, material.cert)],
            root_certificates=material.trust,
            require_client_auth=require,
        )

    def channel_credentials(self, endpoint: Endpoint) -> grpc.ChannelCredentials | None:
        material = self.tls(endpoint)
        if material is None:
            return None
        return grpc.ssl_channel_credentials(
            root_certificates=material.trust,
            private_key=material.key or None,
            certificate_chain=material.cert or None,
        )

    def channel_options(self, endpoint: Endpoint) -> list[tuple[str, Any]]:
        if self.tls(endpoint) is not None and not self.verify_hostname:
            return [("grpc.ssl_target_name_override", CLUSTER_NAME)]
        return []

    def token_matches(self, presented: str | bytes | None) -> bool:
        """Constant time, whatever is presented; True when no token is configured."""
        if not self.token:
            return True
        if presented is None:
            presented = b""
        if isinstance(presented, str):
            presented = presented.encode()
        return hmac.compare_digest(presented, self.token.encode())

    def server_interceptors(self, endpoint: Endpoint) -> list[grpc.ServerInterceptor]:
        return [_TokenServerInterceptor(self, endpoint)] if self.token else []

    def aio_server_interceptors(self, endpoint: Endpoint) -> list[grpc.aio.ServerInterceptor]:
        return [_AioTokenServerInterceptor(self, endpoint)] if self.token else []

    def client_metadata(self) -> tuple[tuple[str, str], ...]:
        return ((TOKEN_METADATA_KEY, self.token),) if self.token else ()

    # --- the REST endpoint (HTTP) ----------------------------------------------------------
    def rest_server_context(self) -> ssl.SSLContext | None:
        """The REST API's and dashboard's TLS (security.ssl.rest.*); None: plain HTTP.
        A client certificate is asked for as on the REST gRPC endpoint."""
        material = self.rest
        if material is None:
            return None
        if not material.cert_path or not material.key_path:
            msg = "a TLS server needs security.ssl.rest.cert and security.ssl.rest.key; set both"
            raise ConfigurationError(msg)
        return _server_context(material, require_client_cert=self.rest_client_auth)

    def rest_client_context(self) -> ssl.SSLContext | None:
        """For an HTTPS client of the REST endpoint (tests, tools): trusts
        security.ssl.rest.trust-cert and presents the REST certificate when it has one."""
        material = self.rest
        if material is None:
            return None
        return _client_context(material, check_hostname=self.verify_hostname)

    # --- the data plane (INTERNAL) -------------------------------------------------------
    def data_server_context(self) -> ssl.SSLContext | None:
        material = self.internal
        return None if material is None else _server_context(material, require_client_cert=True)

    def data_client_context(self) -> ssl.SSLContext | None:
        material = self.internal
        return None if material is None else _client_context(material, check_hostname=True)

    def data_server_hostname(self, host: str) -> str:
        """The name a data server's certificate is checked against."""
        return host if self.verify_hostname else CLUSTER_NAME


def _server_context(material: TlsMaterial, *, require_client_cert: bool) -> ssl.SSLContext:
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.minimum_version = ssl.TLSVersion.TLSv1_2
    context.load_cert_chain(material.cert_path, material.key_path)
    context.load_verify_locations(cadata=material.trust.decode())
    context.verify_mode = ssl.CERT_REQUIRED if require_client_cert else ssl.CERT_NONE
    return context


def _client_context(material: TlsMaterial, *, check_hostname: bool) -> ssl.SSLContext:
    """Trusts ``material``'s CA; presents its certificate when it has one."""
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    context.minimum_version = ssl.TLSVersion.TLSv1_2
    if material.cert_path and material.key_path:
        context.load_cert_chain(material.cert_path, material.key_path)
    context.load_verify_locations(cadata=material.trust.decode())
    context.check_hostname = check_hostname
    return context


def refusal_message(endpoint: Endpoint, security: SecurityConfig) -> str:
    return (
        f"refused: this {endpoint.value} endpoint requires security.auth.token and the call "
        "carried none or another; set security.auth.token to the cluster's token"
    )


def _peer_of(context: grpc.ServicerContext | grpc.aio.ServicerContext) -> str:
    try:
        return str(context.peer())
    except (RuntimeError, ValueError):  # the call already ended
        return "an unknown peer"


class _TokenServerInterceptor(grpc.ServerInterceptor):
    """Refuses calls without the token before their request is even decoded."""

    def __init__(self, security: SecurityConfig, endpoint: Endpoint) -> None:
        self._security = security
        self._endpoint = endpoint

    def intercept_service(
        self,
        continuation: Callable[[grpc.HandlerCallDetails], grpc.RpcMethodHandler | None],
        handler_call_details: grpc.HandlerCallDetails,
    ) -> grpc.RpcMethodHandler | None:
        metadata = dict(handler_call_details.invocation_metadata or ())  # type: ignore[attr-defined]
        if self._security.token_matches(metadata.get(TOKEN_METADATA_KEY)):
            return continuation(handler_call_details)
        method = handler_call_details.method  # type: ignore[attr-defined]
        message = refusal_message(self._endpoint, self._security)

        def refuse(_request: bytes, context: grpc.ServicerContext) -> None:
            logger.warning(
                "refused %s from %s: no or a wrong security.auth.token", method, _peer_of(context)
            )
            context.abort(grpc.StatusCode.UNAUTHENTICATED, message)

        return grpc.unary_unary_rpc_method_handler(refuse)


class _AioTokenServerInterceptor(grpc.aio.ServerInterceptor):
    def __init__(self, security: SecurityConfig, endpoint: Endpoint) -> None:
        self._security = security
        self._endpoint = endpoint

    async def intercept_service(
        self,
        continuation: Callable[[grpc.HandlerCallDetails], Awaitable[grpc.RpcMethodHandler]],
        handler_call_details: grpc.HandlerCallDetails,
    ) -> grpc.RpcMethodHandler:
        metadata = dict(handler_call_details.invocation_metadata or ())  # type: ignore[attr-defined]
        if self._security.token_matches(metadata.get(TOKEN_METADATA_KEY)):
            return await continuation(handler_call_details)
        method = handler_call_details.method  # type: ignore[attr-defined]
        message = refusal_message(self._endpoint, self._security)

        async def refuse(_request: bytes, context: grpc.aio.ServicerContext) -> None:
            logger.warning(
                "refused %s from %s: no or a wrong security.auth.token", method, _peer_of(context)
            )
            await context.abort(grpc.StatusCode.UNAUTHENTICATED, message)

        return grpc.unary_unary_rpc_method_handler(refuse)


class _CallDetails(NamedTuple):
    method: str
    timeout: float | None
    metadata: Sequence[tuple[str, str | bytes]] | None
    credentials: grpc.CallCredentials | None
    wait_for_ready: bool | None
    compression: grpc.Compression | None


class TokenClientInterceptor(grpc.UnaryUnaryClientInterceptor):
    """Adds the token to every call of a channel."""

    def __init__(self, token: str) -> None:
        self._entry = (TOKEN_METADATA_KEY, token)

    def intercept_unary_unary(
        self, continuation: Callable[..., Any], client_call_details: Any, request: Any
    ) -> Any:
        details = _CallDetails(
            client_call_details.method,
            client_call_details.timeout,
            [*(client_call_details.metadata or ()), self._entry],
            client_call_details.credentials,
            getattr(client_call_details, "wait_for_ready", None),
            getattr(client_call_details, "compression", None),
        )
        return continuation(details, request)


class AioTokenClientInterceptor(grpc.aio.UnaryUnaryClientInterceptor):
    def __init__(self, token: str) -> None:
        self._entry = (TOKEN_METADATA_KEY, token)

    async def intercept_unary_unary(
        self, continuation: Callable[..., Any], client_call_details: Any, request: Any
    ) -> Any:
        metadata = grpc.aio.Metadata(*(client_call_details.metadata or ()), self._entry)
        details = grpc.aio.ClientCallDetails(
            client_call_details.method,
            client_call_details.timeout,
            metadata,
            client_call_details.credentials,
            client_call_details.wait_for_ready,
        )
        return await continuation(details, request)
