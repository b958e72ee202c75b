"""KvStateServer: answers reads of this TaskManager's queryable states for one key
(Flink's ``KvStateServerImpl``), on ``queryable-state.server.ports``.

Keys arrive as ``weir.core.queryable_keys`` bytes: nothing received from the network is
unpickled. The read itself runs on the task's thread (see
``kv_state_registry``); a server thread waits for it at most ``_READ_TIMEOUT_S``.
"""

from __future__ import annotations

import concurrent.futures
import logging

import grpc

from weir.core import rpc
from weir.core.errors import (
    QueryableStateError,
    RemoteTimeoutError,
    UnknownKeyOrNamespaceError,
    UnknownKvStateIdError,
    UnknownKvStateKeyGroupLocationError,
)
from weir.core.queryable_keys import decode_key
from weir.core.rpc import translate_server_errors
from weir.core.security import SecurityConfig
from weir.proto import queryablestate_pb2, queryablestate_pb2_grpc
from weir.taskmanager.mailbox import MailboxClosedError
from weir.taskmanager.queryablestate.kv_state_registry import KvStateRegistry

logger = logging.getLogger(__name__)

# A task serves its mailbox between batches (at most a batch's time, milliseconds); a
# task that does not answer within this is blocked (back-pressured or waiting on a
# client), and the query fails rather than pile up server threads.
_READ_TIMEOUT_S = 10.0
# Queries are short (one mailbox round trip each); a few threads serve several clients.
_SERVER_WORKERS = 4
_STOP_GRACE_S = 1.0


class KvStateServer(queryablestate_pb2_grpc.KvStateServerServicer):
    """A context manager; ``close`` stops the server."""

    def __init__(
        self,
        registry: KvStateRegistry,
        security: SecurityConfig,
        thread_name: str = "weir-kvstate-server-rpc",
    ) -> None:
        """``thread_name`` names the threads of its calls (its TaskExecutor's)."""
        self.registry = registry
        self._security = security
        self._thread_name = thread_name
        self._server: grpc.Server | None = None
        self.address = ""

    def start(self, host: str, port_spec: str) -> str:
        """Serve on the first free port of ``port_spec`` on ``host``; returns host:port."""
        # Inside the cluster: security.ssl.internal.* and the token, as every TaskExecutor.
        server = rpc.create_server(
            max_workers=_SERVER_WORKERS, security=self._security, name=self._thread_name
        )
        queryablestate_pb2_grpc.add_KvStateServerServicer_to_server(self, server)
        try:
            self.address = rpc.bind_first_free(
                server, host, port_spec, "queryable-state.server.ports"
            )
        except BaseException:
            rpc.stop_server(server, 0)
            raise
        server.start()
        self._server = server
        logger.info("Started the Queryable State Data Server @ %s", self.address)
        return self.address

    @translate_server_errors
    def GetKvState(self, request, context):
        entry = self.registry.lookup(request.kv_state_id)
        try:
            key = decode_key(request.serialized_key)
        except ValueError as exc:
            raise QueryableStateError(str(exc)) from exc
        registration = entry.registration
        key_group = entry.backend.key_group_of(key)
        if key_group not in registration.key_groups:
            msg = (
                f"key {key!r} is in key group {key_group}, which subtask "
                f"{registration.subtask_index} of {registration.operator_id} does not own "
                f"(it owns {registration.key_groups.start}..{registration.key_groups.stop - 1})"
            )
            raise UnknownKvStateKeyGroupLocationError(msg)
        try:
            future = entry.read_on_task_thread(key)
        except MailboxClosedError as exc:
            msg = f"the task serving queryable state {registration.registration_name!r} ended"
            raise UnknownKvStateIdError(msg) from exc
        try:
            value = future.result(timeout=_READ_TIMEOUT_S)
        except concurrent.futures.TimeoutError as exc:
            future.cancel()
            msg = (
                f"the task serving queryable state {registration.registration_name!r} did "
                f"not read it within {_READ_TIMEOUT_S:.0f} s: it is blocked (back-pressure?)"
            )
            raise RemoteTimeoutError(msg) from exc
        if value is None:
            msg = (
                f"queryable state {registration.registration_name!r} holds no state for key {key!r}"
            )
            raise UnknownKeyOrNamespaceError(msg)
        return queryablestate_pb2.KvStateResponse(serialized_value=value)

    def close(self) -> None:
        if self._server is not None:
            rpc.stop_server(self._server, _STOP_GRACE_S)
            self._server = None

    def __enter__(self) -> KvStateServer:
        return self

    def __exit__(self, *_: object) -> None:
        self.close()
