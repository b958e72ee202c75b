"""A TaskManager that replaces a killed one where it ran (a SIGKILL inside its pod, whose
executor leases a new TaskManager) binds the same fixed data port
(``taskmanager.data.port``) at once, although the connections the killed one's data
server closed linger in TIME_WAIT on that port for a minute."""

from __future__ import annotations

import socket

from weir.core.security import SecurityConfig
from weir.taskmanager.network import DefaultNetworkEnvironment, NetworkConfig
from weir.taskmanager.network.frames import HEADER, encode_handshake

HOST = "127.0.0.1"
TOKEN = "t"
DEADLINE_S = 20.0


def _free_port() -> int:
    with socket.socket() as s:
        s.bind((HOST, 0))
        return int(s.getsockname()[1])


def test_a_data_server_binds_its_port_while_the_last_ones_connections_linger() -> None:
    port = _free_port()
    config = NetworkConfig(data_ports=(port, port), security=SecurityConfig(token=TOKEN))
    first = DefaultNetworkEnvironment("a" * 8, HOST, config)
    first.start()
    try:
        assert first.data_port == port
        # A peer that breaks the protocol: the data server closes the connection first,
        # which leaves it in TIME_WAIT on the server's port once the peer closes too.
        with socket.create_connection((HOST, port), timeout=DEADLINE_S) as peer:
            peer.sendall(encode_handshake(TOKEN) + HEADER.pack(0, 99, 0, 1, 0))
            try:
                while peer.recv(65536):
                    pass
            except ConnectionResetError:
                pass  # closed with our bytes unread: closed all the same
    finally:
        first.close()
    second = DefaultNetworkEnvironment("b" * 8, HOST, config)
    try:
        second.start()
        assert second.data_port == port
    finally:
        second.close()
