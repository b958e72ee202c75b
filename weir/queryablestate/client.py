"""QueryableStateClient: reads a running job's keyed state for one key (Flink's
``QueryableStateClient``), through the queryable state proxy of the cluster's master
(``queryable-state.proxy.ports``)."""

from __future__ import annotations

import pickle
from typing import Any

import grpc

from weir.core import rpc
from weir.core.completable_future import CompletableFuture
from weir.core.ids import parse_job_id
from weir.core.queryable_keys import encode_key
from weir.core.security import Endpoint, SecurityConfig
from weir.proto import queryablestate_pb2, queryablestate_pb2_grpc
from weir.queryablestate.immutable_state import immutable_state, immutable_state_class

# A query is one proxy call, a location lookup and one read on the task's thread; the
# TaskManager gives up on a blocked task after 10 s, so this leaves room for that answer.
_QUERY_TIMEOUT_S = 30.0


class QueryableStateClient:
    """Client of one cluster's queryable state proxy. A context manager; ``close`` (or
    Flink's ``shutdown_and_wait``) closes its channel.

    Example::

        with QueryableStateClient("127.0.0.1", 9069) as client:
            future = client.get_kv_state(
                job_id, "count-by-word", "hello", Types.STRING(),
                ValueStateDescriptor("count", Types.LONG()),
            )
            print(future.result().value())
    """

    def __init__(
        self,
        remote_hostname: str,
        remote_port: int | None = None,
        security: SecurityConfig | None = None,
    ) -> None:
        """The proxy at ``remote_hostname:remote_port``, or at ``remote_hostname`` given
        as one ``"host:port"``. ``security``: TLS (security.ssl.rest.*) and the token of
        a cluster that has them, e.g. ``SecurityConfig.from_config(...)``; plaintext
        without a token if not given."""
        if remote_port is None:
            host, sep, port = remote_hostname.rpartition(":")
            if not sep or not host or not port.isdigit():
                msg = (
                    f"queryable state proxy address {remote_hostname!r} has no port: give "
                    "QueryableStateClient('host:port') or QueryableStateClient(host, port) "
                    "(the proxy's port is queryable-state.proxy.ports, 9069 by default)"
                )
                raise ValueError(msg)
            remote_hostname, remote_port = host, int(port)
        self.address = f"{remote_hostname}:{remote_port}"
        self._channel = rpc.create_channel(
            self.address, security or SecurityConfig(), Endpoint.REST
        )
        self._stub = queryablestate_pb2_grpc.KvStateClientProxyStub(self._channel)

    def get_kv_state(
        self,
        job_id: Any,
        queryable_state_name: str,
        key: Any,
        key_type_info: Any,
        state_descriptor: Any,
    ) -> CompletableFuture:
        """The state of ``key`` in the queryable state ``queryable_state_name`` of job
        ``job_id``, as a read-only state of ``state_descriptor``'s kind (e.g. an
        ``ImmutableValueState`` whose ``value()`` is the key's current value). The query
        starts at once; ``result()`` waits for it and raises what failed:
        ``JobNotFoundError`` (no such running job), ``UnknownKvStateLocationError`` (no
        state of that name), ``UnknownKeyOrNamespaceError`` (nothing stored for the key),
        ``UnknownKvStateKeyGroupLocationError`` (the job is restarting; ask again).
        ``key_type_info`` is the key's type, as in Flink; the key travels as a basic
        value (None, bool, int, float, str, bytes, or a tuple of them)."""
        del key_type_info  # the job's own key_by decides the key group; kept for Flink
        immutable_state_class(state_descriptor)  # refuse a bad descriptor before asking
        request = queryablestate_pb2.KvStateRequest(
            job_id=parse_job_id(str(job_id)),
            queryable_state_name=queryable_state_name,
            serialized_key=encode_key(key),
        )
        call = self._stub.GetKvState.future(request, timeout=_QUERY_TIMEOUT_S)

        def outcome() -> Any:
            try:
                reply = call.result()
            except grpc.RpcError as exc:
                raise rpc.map_rpc_error(exc, f"GetKvState at {self.address}") from exc
            # The value comes from the cluster this client chose to trust, as collected
            # results do (the server side never unpickles what a client sends).
            value = pickle.loads(reply.serialized_value)
            return immutable_state(state_descriptor, value)

        return CompletableFuture(outcome, call.done)

    def shutdown_and_wait(self) -> None:
        """Flink's name for ``close``."""
        self.close()

    def close(self) -> None:
        self._channel.close()

    def __enter__(self) -> QueryableStateClient:
        return self

    def __exit__(self, *_: object) -> None:
        self.close()
