"""A TCP forwarder on 127.0.0.1 that can cut the network between its clients and their
server and heal it again: what a switch failing between one master and ZooKeeper does.

While partitioned, nothing crosses in either direction and new connections are accepted
but carry nothing (bytes wait in the kernel, as a partition delays TCP segments); the
server sees its client go silent, the client sees its server go silent. ``heal()`` lets
whatever is still connected flow again.

Two finer cuts decide what became of a request sent into them: ``withhold_replies()``
lets requests reach the server but no answer come back (a write applied, its answer
lost), and ``sever()`` closes every connection, dropping what waits in them (a request
that never arrived).

    with PartitionProxy("127.0.0.1", zookeeper_port) as proxy:
        ...  # give the master proxy.address as its quorum
        proxy.partition()
        proxy.heal()
"""

from __future__ import annotations

import select
import socket
import threading

# How often a blocked forwarder looks at the partition switch and the stop request.
_POLL_S = 0.05


class PartitionProxy:
    def __init__(self, host: str, port: int) -> None:
        self._target = (host, port)
        self._listener = socket.create_server(("127.0.0.1", 0))
        self.address = f"127.0.0.1:{self._listener.getsockname()[1]}"
        self._flowing = threading.Event()
        self._flowing.set()
        self._replying = threading.Event()
        self._replying.set()
        self._generation = 0
        """Bumped by ``sever()``: a forwarder of an older generation forwards nothing more."""
        self._stopped = threading.Event()
        self._sockets: list[socket.socket] = []
        self._lock = threading.Lock()
        self._threads = [threading.Thread(target=self._accept, daemon=True, name="proxy-accept")]
        self._threads[0].start()

    def partition(self) -> None:
        self._flowing.clear()

    def withhold_replies(self) -> None:
        """Requests still reach the server; nothing comes back until ``heal()``."""
        self._replying.clear()

    def sever(self) -> None:
        """Close every connection now, forwarding nothing that waits in them; clients
        connect anew (the cut goes on until ``heal()``)."""
        with self._lock:
            self._generation += 1
            sockets = list(self._sockets)
        for sock in sockets:
            try:
                sock.shutdown(socket.SHUT_RDWR)  # wakes the forwarders; they close it
            except OSError:
                pass

    def heal(self) -> None:
        self._replying.set()
        self._flowing.set()

    def _accept(self) -> None:
        self._listener.settimeout(_POLL_S)
        while not self._stopped.is_set():
            try:
                client, _ = self._listener.accept()
            except TimeoutError:
                continue
            except OSError:
                return
            try:
                server = socket.create_connection(self._target, timeout=5)
            except OSError:
                client.close()
                continue
            with self._lock:
                self._sockets += [client, server]
                generation = self._generation
            for source, sink, gate in (
                (client, server, self._flowing),
                (server, client, self._replying),
            ):
                thread = threading.Thread(
                    target=self._pump,
                    args=(source, sink, gate, generation),
                    daemon=True,
                    name="proxy-pump",
                )
                thread.start()
                self._threads.append(thread)

    def _pump(
        self,
        source: socket.socket,
        sink: socket.socket,
        gate: threading.Event,
        generation: int,
    ) -> None:
        def open_() -> bool:
            return self._flowing.is_set() and gate.is_set()

        while not self._stopped.is_set() and generation == self._generation:
            if not (self._flowing.wait(_POLL_S) and gate.wait(_POLL_S)):
                continue
            try:
                readable, _, _ = select.select([source], [], [], _POLL_S)
                if not readable or not open_():
                    continue
                data = source.recv(65536)
                if not data or generation != self._generation:
                    break
                sink.sendall(data)
            except OSError:
                break
        for sock in (source, sink):
            try:
                sock.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass  # the other pump closed it first

    def close(self) -> None:
        self._stopped.set()
        self._flowing.set()
        self._listener.close()
        # The forwarders see the stop within a poll; their sockets are closed after, never
        # under a select of theirs.
        for thread in self._threads:
            thread.join(timeout=5)
        with self._lock:
            sockets, self._sockets = self._sockets, []
        for sock in sockets:
            sock.close()

    def __enter__(self) -> PartitionProxy:
        return self

    def __exit__(self, *_: object) -> None:
        self.close()
