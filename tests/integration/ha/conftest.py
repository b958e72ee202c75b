"""Fixtures for the high-availability suites: ZooKeeper HA services on the session's real
ZooKeeper server, each test under a cluster id of its own."""

from __future__ import annotations

import uuid
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from weir.core.highavailability.zookeeper import ZooKeeperHaServices


@pytest.fixture
def ha_config(zookeeper: object, tmp_path: Path) -> dict[str, str]:
    return {
        "high-availability.type": "zookeeper",
        "high-availability.zookeeper.quorum": zookeeper.address,  # type: ignore[attr-defined]
        "high-availability.cluster-id": f"test-{uuid.uuid4().hex[:8]}",
        "high-availability.storageDir": f"file://{tmp_path}/ha",
        # The shortest session the test server allows (2 ticks of 500 ms is its floor).
        "high-availability.zookeeper.client.session-timeout": "2 s",
        "high-availability.zookeeper.client.retry-wait": "100 ms",
    }


@pytest.fixture
def make_services(
    ha_config: dict[str, str],
) -> Iterator[Callable[[str], ZooKeeperHaServices]]:
    created: list[ZooKeeperHaServices] = []

    def make(identifier: str) -> ZooKeeperHaServices:
        services = ZooKeeperHaServices(ha_config, identifier)
        created.append(services)
        return services

    yield make
    for services in created:
        services.close()
