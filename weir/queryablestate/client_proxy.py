"""KvStateClientProxy: the server a ``QueryableStateClient`` talks to (Flink's
``KvStateClientProxyImpl``), on the master at ``queryable-state.proxy.ports``.

For each query it asks the Dispatcher, which forwards to the job's JobMaster, where the
state's key groups are served (``KvStateLocation``), computes the key's key group with
the job's own key hashing, and asks the KvStateServer of the TaskManager whose subtask
owns that group. It reads the cluster only through gRPC, as the REST endpoint does.

Flink's proxy runs on every TaskManager; Weir's TaskManagers live in Spark executors
whose hosts and ports a user neither picks nor sees, so the proxy lives on the master,
the one address clients know. Locations are asked for on every query (two local RPCs):
they change whenever the job restarts, and a stale cache would route to ended tasks.
"""

from __future__ import annotations

import logging
import threading

import grpc

from weir.core import rpc
from weir.core.errors import (
    QueryableStateError,
    ServiceUnavailableError,
    UnknownKvStateKeyGroupLocationError,
)
from weir.core.key_groups import PyFlinkKeyHasher
from weir.core.queryable_keys import decode_key
from weir.core.rpc import translate_server_errors
from weir.core.security import Endpoint, SecurityConfig
from weir.proto import (
    common_pb2,
    dispatcher_pb2_grpc,
    queryablestate_pb2,
    queryablestate_pb2_grpc,
)

logger = logging.getLogger(__name__)

# Each query holds a thread for its two downstream calls; a handful serves many clients.
_PROXY_WORKERS = 8
# A location lookup is answered from the JobMaster's memory; a TaskManager's read waits
# at most 10 s for a blocked task (kv_state_server), so 15 s covers its answer.
_LOCATION_TIMEOUT_S = 10.0
_READ_TIMEOUT_S = 15.0
_STOP_GRACE_S = 1.0


class KvStateClientProxy(queryablestate_pb2_grpc.KvStateClientProxyServicer):
    """A context manager; ``close`` stops the server and its channels."""

    def __init__(self, dispatcher_address: str, security: SecurityConfig) -> None:
        # Clients reach the proxy, and the proxy the Dispatcher, as clients of the cluster
        # (security.ssl.rest.*); the TaskManagers' state servers are inside it (internal).
        self._security = security
        self._dispatcher_channel = rpc.create_channel(dispatcher_address, security, Endpoint.REST)
        self._dispatcher = dispatcher_pb2_grpc.DispatcherStub(self._dispatcher_channel)
        self._lock = threading.Lock()
        self._servers: dict[str, grpc.Channel] = {}
        self._server: grpc.Server | None = None
        self.address = ""

    def start(self, host: str, port_spec: str) -> str:
        """Serve on the first free port of ``port_spec`` on ``host``; returns host:port."""
        server = rpc.create_server(
            max_workers=_PROXY_WORKERS,
            security=self._security,
            endpoint=Endpoint.REST,
            name="weir-kvstate-proxy-rpc",
        )
        queryablestate_pb2_grpc.add_KvStateClientProxyServicer_to_server(self, server)
        try:
            self.address = rpc.bind_first_free(
                server, host, port_spec, "queryable-state.proxy.ports"
            )
        except BaseException:
            rpc.stop_server(server, 0)
            raise
        server.start()
        self._server = server
        logger.info("Started the Queryable State Proxy Server @ %s", self.address)
        return self.address

    @translate_server_errors
    def GetKvState(self, request, context):
        try:
            key = decode_key(request.serialized_key)
        except ValueError as exc:
            raise QueryableStateError(str(exc)) from exc
        location = rpc.call(
            "Dispatcher.RequestKvStateLocation",
            self._dispatcher.RequestKvStateLocation,
            common_pb2.KvStateLocationRequest(
                job_id=request.job_id, registration_name=request.queryable_state_name
            ),
            timeout=_LOCATION_TIMEOUT_S,
        )
        hasher = PyFlinkKeyHasher(location.key_type)
        key_group = hasher.key_group(key, location.num_key_groups)
        for entry in location.entries:
            if entry.start_key_group <= key_group <= entry.end_key_group:
                break
        else:
            msg = (
                f"no running subtask of job {request.job_id} serves key group {key_group} "
                f"of queryable state {request.queryable_state_name!r} now (the job is "
                "starting or restarting); ask again"
            )
            raise UnknownKvStateKeyGroupLocationError(msg)
        stub = queryablestate_pb2_grpc.KvStateServerStub(self._channel(entry.server_address))
        try:
            return rpc.call(
                f"KvStateServer.GetKvState at {entry.server_address}",
                stub.GetKvState,
                queryablestate_pb2.KvStateServerRequest(
                    kv_state_id=entry.kv_state_id, serialized_key=request.serialized_key
                ),
                timeout=_READ_TIMEOUT_S,
            )
        except ServiceUnavailableError:
            self._forget(entry.server_address)  # that TaskManager is gone
            raise

    def _forget(self, address: str) -> None:
        with self._lock:
            channel = self._servers.pop(address, None)
        if channel is not None:
            channel.close()

    def _channel(self, address: str) -> grpc.Channel:
        with self._lock:
            channel = self._servers.get(address)
            if channel is None:
                channel = rpc.create_channel(address, self._security)
                self._servers[address] = channel
            return channel

    def close(self) -> None:
        if self._server is not None:
            rpc.stop_server(self._server, _STOP_GRACE_S)
            self._server = None
        with self._lock:
            channels, self._servers = list(self._servers.values()), {}
        for channel in channels:
            channel.close()
        self._dispatcher_channel.close()

    def __enter__(self) -> KvStateClientProxy:
        return self

    def __exit__(self, *_: object) -> None:
        self.close()
