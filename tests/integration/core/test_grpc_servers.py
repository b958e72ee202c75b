"""Every Weir gRPC server owns its port: a second one on the same port fails to start."""

from __future__ import annotations

import pytest

from weir.core import rpc
from weir.core.errors import ServiceUnavailableError


def test_a_second_server_on_a_taken_port_fails_with_port_in_use():
    first = rpc.create_server(max_workers=1)
    second = rpc.create_server(max_workers=1)
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
