"""Bind and advertised addresses, and port ranges, as configured."""

from __future__ import annotations

import pytest

from weir.core import config as cfg
from weir.core.addresses import local_address_towards, split_address
from weir.core.errors import ConfigurationError


@pytest.mark.parametrize(
    ("text", "expected"),
    [("0", (0, 0)), ("50100", (50100, 50100)), ("50100-50200", (50100, 50200))],
)
def test_ports_and_ranges(text: str, expected: tuple[int, int]) -> None:
    assert cfg.TASKMANAGER_DATA_PORT.from_string(text) == expected


@pytest.mark.parametrize("text", ["50200-50100", "0-10", "70000", "a-b", "-1"])
def test_bad_ports_are_refused_by_key(text: str) -> None:
    with pytest.raises(ConfigurationError, match=r"taskmanager.rpc.port"):
        cfg.TASKMANAGER_RPC_PORT.from_string(text)


def test_the_master_advertises_its_rpc_address_else_its_bind_host() -> None:
    assert cfg.advertised_master_host({}) == "127.0.0.1"
    assert cfg.advertised_master_host({"jobmanager.bind-host": "10.1.2.3"}) == "10.1.2.3"
    assert cfg.advertised_master_host({"jobmanager.bind-host": "0.0.0.0"}) == "127.0.0.1"
    both = {"jobmanager.bind-host": "0.0.0.0", "jobmanager.rpc.address": "master.example"}
    assert cfg.advertised_master_host(both) == "master.example"


def test_the_address_towards_loopback_is_loopback() -> None:
    assert local_address_towards("127.0.0.1:6123") == "127.0.0.1"
    assert split_address("[::1]:80") == ("::1", 80)
    with pytest.raises(ConfigurationError, match="host:port"):
        split_address("nohost")
