"""TCP transport of one environment: a data server, client connections and the I/O thread
(Flink's ``NettyConnectionManager``).

``ConnectionManager`` is what the environment and its input gates see; it composes three
parts, each with a module of its own:

- ``NetworkEventLoop`` (``event_loop``): the one I/O thread, its selector and wakeup,
  binding and accepting, the handshake timeout and the caps on unauthenticated
  connections; each ``Connection`` (``connection``) reads, writes and does TLS.
- ``PartitionRequestClient`` (``partition_request_client``): the consumer side, which
  connects to producers and requests, credits and cancels subpartitions for the remote
  input channels, and hands what arrives to their gates.
- ``PartitionRequestServer`` (``partition_request_server``): the producer side, which
  answers partition requests and pumps the subpartitions' buffers to their consumers.

One connection is opened per (consumer environment, producer environment) pair and every
channel between them is multiplexed on it by the consumer's channel id. Task threads and
producers post commands (``_run_commands`` names them) that the I/O thread carries out
between its events, so no socket is ever touched by any other thread.

What one connection brings cannot end the thread: a frame the protocol does not allow
(``DataProtocolError``), or any error that one connection's event runs into, closes that
connection alone with one WARNING naming the peer.
"""

from __future__ import annotations

from collections import deque

from weir.core.security import SecurityConfig
from weir.taskmanager.network.api import FatalErrorHandler
from weir.taskmanager.network.connection_admission import AdmissionLimits
from weir.taskmanager.network.event_loop import Command, IoHandlers, NetworkEventLoop
from weir.taskmanager.network.input_channel import RemoteInputChannel
from weir.taskmanager.network.partition_request_client import PartitionRequestClient
from weir.taskmanager.network.partition_request_server import PartitionRequestServer
from weir.taskmanager.network.result_partition_manager import ResultPartitionManager


class ConnectionManager:
    """Owns the I/O thread. Implements the gates' ``RemoteTransport``."""

    def __init__(
        self,
        resource_id: str,
        host: str,
        partitions: ResultPartitionManager,
        security: SecurityConfig | None = None,
        ports: tuple[int, int] = (0, 0),
        *,
        limits: AdmissionLimits | None = None,
    ) -> None:
        security = security or SecurityConfig()
        self._loop = NetworkEventLoop(
            resource_id, host, security, ports, limits or AdmissionLimits()
        )
        self._client = PartitionRequestClient(self._loop, security)
        self._server = PartitionRequestServer(self._loop, partitions, security)
        self._post = self._loop.post

    @property
    def is_running(self) -> bool:
        return self._loop.is_running

    def start(self, on_fatal_error: FatalErrorHandler | None = None) -> int:
        """Bind the data server and start the I/O thread; returns the port. Should the
        thread ever end while ``close`` was not called, ``on_fatal_error(reason)`` is
        called once, on that thread, after its sockets are closed."""
        handlers = IoHandlers(
            accepted=self._server.accepted,
            run_commands=self._run_commands,
            pump=self._server.pump,
            fail=self._client.close_all,
            close_connections=self._close_connections,
        )
        return self._loop.start(handlers, on_fatal_error)

    def close(self) -> None:
        self._loop.close()

    # -- thread-safe API (task threads) ----------------------------------------------

    def request_partition(self, channel: RemoteInputChannel) -> None:
        self._post(("request", channel))

    def announce_credit(self, channel: RemoteInputChannel, credit: int) -> None:
        self._post(("credit", channel, credit))

    def cancel_request(self, channel: RemoteInputChannel) -> None:
        self._post(("cancel", channel))

    # -- on the I/O thread -----------------------------------------------------------

    def _run_commands(self, commands: deque[Command]) -> None:
        """Route what task threads (``request``, ``credit``, ``cancel``) and partitions
        (``available``, ``ready``: see ``PartitionRequestServer``) posted."""
        client = self._client
        server = self._server
        credits: dict[RemoteInputChannel, int] = {}
        while commands:
            command = commands.popleft()
            op = command[0]
            if op == "available":
                server.queue_reader(command[1])
            elif op == "credit":
                channel = command[1]
                credits[channel] = credits.get(channel, 0) + command[2]
            elif op == "ready":
                server.attach_reader(command[1], command[2])
            elif op == "request":
                client.send_request(command[1])
            elif op == "cancel":
                client.cancel(command[1])
        # AddCredits coalesce per channel: a fast consumer returns credits one buffer at a
        # time, the producer only needs the sum.
        if credits:
            client.announce_credits(credits)

    def _close_connections(self) -> None:
        self._client.close_all("the consumer's network environment was closed")
        self._server.close_all()
