"""Every Weir gRPC server owns its port: a second one on the same port fails to start, and
scanning a range of ports past taken ones logs no error."""

from __future__ import annotations

import re
import socket

import pytest

from weir.core import rpc
from weir.core.errors import ConfigurationError, ServiceUnavailableError
from weir.core.security import SecurityConfig


def test_a_second_server_on_a_taken_port_fails_with_port_in_use():
    first = rpc.create_server(max_workers=1, security=SecurityConfig())
    second = rpc.create_server(max_workers=1, security=SecurityConfig())
    try:
        address = rpc.bind(first, "127.0.0.1", 0)
        first.start()
        port = int(address.rsplit(":", 1)[1])
        with pytest.raises(ServiceUnavailableError, match="port in use") as info:
            rpc.bind(second, "127.0.0.1", port, port_key="jobmanager.rpc.port")
        assert "jobmanager.rpc.port" in str(info.value)  # says what to change
    finally:
        rpc.stop_server(first, 0)
        rpc.stop_server(second, 0)


# gRPC's C core writes its errors to the process's stderr, as "E<date> <time> <thread>
# <file>:<line>] message" lines, not through Python's logging.
_GRPC_CORE_ERROR = re.compile(r"^E\d{4} ", re.MULTILINE)


def test_scanning_a_port_range_past_a_taken_port_logs_no_error(capfd):
    taken = socket.create_server(("127.0.0.1", 0))
    port = taken.getsockname()[1]
    servers = [rpc.create_server(max_workers=1, security=SecurityConfig()) for _ in range(2)]
    try:
        capfd.readouterr()
        # A range, as taskmanager.rpc.port gives one, and a list, as the queryable state
        # ports do: each skips the taken port to the next free one.
        in_range = rpc.bind_in_range(servers[0], "127.0.0.1", (port, port + 20))
        in_list = rpc.bind_first_free(servers[1], "127.0.0.1", f"{port},0", "some.port")
        assert in_range != f"127.0.0.1:{port}" and in_list != f"127.0.0.1:{port}"
        err = capfd.readouterr().err
        assert not _GRPC_CORE_ERROR.search(err), err
        assert "Failed to add port" not in err
    finally:
        taken.close()
        for server in servers:
            rpc.stop_server(server, 0)


def test_a_taken_port_that_is_the_only_choice_is_refused_with_our_error_alone(capfd):
    taken = socket.create_server(("127.0.0.1", 0))
    port = taken.getsockname()[1]
    server = rpc.create_server(max_workers=1, security=SecurityConfig())
    try:
        capfd.readouterr()
        with pytest.raises(ServiceUnavailableError, match="port in use"):
            rpc.bind_in_range(server, "127.0.0.1", (port, port), port_key="taskmanager.rpc.port")
        with pytest.raises(ConfigurationError, match="no free port"):
            rpc.bind_first_free(server, "127.0.0.1", str(port), "some.port")
        err = capfd.readouterr().err
        assert not _GRPC_CORE_ERROR.search(err), err
    finally:
        taken.close()
        rpc.stop_server(server, 0)
