"""The Kubernetes leader elector's rules of time, with an in-memory API server and a clock
the test moves: a leader's leadership ends at its renew deadline by its own clock, with no
thread having run; a standby takes a lease only once it has seen it unchanged for the
lease duration by its own clock, whatever the lease's timestamps say; a fenced write
checks both the clock and the lease."""

from __future__ import annotations

import itertools
import threading
import time
from collections.abc import Callable
from dataclasses import replace

import pytest

from weir.core import config as cfg
from weir.core.errors import ConfigurationError, LeaderLostError
from weir.core.highavailability.kubernetes.api_client import (
    ConfigMap,
    KubernetesConflictError,
)
from weir.core.highavailability.kubernetes.leader_elector import (
    LEADER_ANNOTATION,
    ConfigMapRef,
    KubernetesLeaderElector,
    LeaderRecord,
    holder_of,
)
from weir.core.highavailability.kubernetes.services import cluster_id

REF = ConfigMapRef("ns", "c-cluster-config-map", {"app": "c"})


class TestingKubernetesApiClient:
    """ConfigMaps in a dict, with resourceVersions and compare-and-swap."""

    __test__ = False  # a test double, not a test class

    def __init__(self) -> None:
        self.objects: dict[str, ConfigMap] = {}
        self._versions = itertools.count(1)
        self._lock = threading.Lock()

    def get_config_map(
        self, namespace: str, name: str, timeout_s: float | None = None
    ) -> ConfigMap | None:
        with self._lock:
            return self.objects.get(name)

    def create_config_map(self, cm: ConfigMap, timeout_s: float | None = None) -> ConfigMap:
        with self._lock:
            if cm.name in self.objects:
                raise KubernetesConflictError("exists", 409, "AlreadyExists")
            stored = replace(cm, resource_version=str(next(self._versions)))
            self.objects[cm.name] = stored
            return stored

    def replace_config_map(self, cm: ConfigMap, timeout_s: float | None = None) -> ConfigMap:
        with self._lock:
            current = self.objects[cm.name]
            if current.resource_version != cm.resource_version:
                raise KubernetesConflictError("changed", 409, "Conflict")
            stored = replace(cm, resource_version=str(next(self._versions)))
            self.objects[cm.name] = stored
            return stored


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def elector(
    client: TestingKubernetesApiClient, clock: Clock, retry_period_s: float = 0.01
) -> KubernetesLeaderElector:
    """The elector's waits are real time: a short retry period makes its thread try often."""
    return KubernetesLeaderElector(
        client,  # type: ignore[arg-type]
        REF,
        "test",
        lease_duration_s=10,
        renew_deadline_s=8,
        retry_period_s=retry_period_s,
        clock=clock,
    )


def lease_held_by(client: TestingKubernetesApiClient, holder: str) -> None:
    record = LeaderRecord(holder, 10, "2000-01-01T00:00:00Z", "2999-01-01T00:00:00Z", 2)
    client.create_config_map(
        ConfigMap("ns", REF.name, annotations={LEADER_ANNOTATION: record.encode()})
    )


def wait(condition: Callable[[], object]) -> None:
    deadline = time.monotonic() + 30
    while not condition():
        if time.monotonic() > deadline:
            pytest.fail("condition never held")
        time.sleep(0.002)  # polling interval; the condition decides


class TestLeadership:
    def test_leadership_ends_at_the_renew_deadline_by_the_leaders_clock_alone(self):
        client, clock = TestingKubernetesApiClient(), Clock()
        # Its first renewal comes a minute of real time after it leads: none runs below.
        leader = elector(client, clock, retry_period_s=60)
        leader.start()
        try:
            token = leader.await_leadership(30)
            assert token is not None
            clock.now += 7.9
            assert leader.has_leadership(token)
            # Paused past the deadline: no thread needs to run for the leadership to be
            # over (as after SIGSTOP: the monotonic clock ran on meanwhile).
            clock.now += 0.1
            assert not leader.has_leadership(token)
            with pytest.raises(LeaderLostError, match="no longer leads"):
                leader.guarded_update(token, lambda data: {**data, "k": "v"})
            assert "k" not in client.objects[REF.name].data
        finally:
            leader.stop()

    def test_a_write_is_refused_once_the_lease_names_another(self):
        client, clock = TestingKubernetesApiClient(), Clock()
        leader = elector(client, clock)
        leader.start()
        try:
            token = leader.await_leadership(30)
            assert token is not None
            current = client.objects[REF.name]
            record = LeaderRecord.decode(current.annotations[LEADER_ANNOTATION])
            assert record is not None
            client.objects[REF.name] = replace(
                current,
                annotations={LEADER_ANNOTATION: replace(record, holder_identity="other").encode()},
            )
            with pytest.raises(LeaderLostError, match="names another holder"):
                leader.guarded_update(token, lambda data: {**data, "k": "v"})
            assert "k" not in client.objects[REF.name].data
            assert leader.await_revocation(30)
        finally:
            leader.stop()

    def test_stop_releases_the_lease_and_takes_its_addresses_down(self):
        client, clock = TestingKubernetesApiClient(), Clock()
        leader = elector(client, clock)
        leader.start()
        token = leader.await_leadership(30)
        assert token is not None
        leader.guarded_update(
            token, lambda data: {**data, "leader.dispatcher": f'{{"token": "{token}"}}'}
        )
        leader.stop()
        released = client.objects[REF.name]
        assert holder_of(released) == ""
        assert "leader.dispatcher" not in released.data


class TestStandby:
    def test_a_lease_is_taken_only_once_seen_unchanged_for_its_duration(self):
        client, clock = TestingKubernetesApiClient(), Clock()
        lease_held_by(client, "dead-leader")  # its renewTime says it is fresh for ever
        standby = elector(client, clock)
        standby.start()
        try:
            seen = client.objects[REF.name].resource_version
            # Many attempts at one instant of the standby's clock: the lease is valid.
            wait(lambda: standby._observed[0] is not None)
            assert standby.await_leadership(0.2) is None
            assert client.objects[REF.name].resource_version == seen
            clock.now += 9.9
            assert standby.await_leadership(0.2) is None
            clock.now += 0.2
            token = standby.await_leadership(30)
            assert token is not None
            record = LeaderRecord.decode(client.objects[REF.name].annotations[LEADER_ANNOTATION])
            assert record is not None
            assert (record.holder_identity, record.leader_transitions) == (token, 3)
        finally:
            standby.stop()

    def test_a_renewed_lease_starts_the_wait_again(self):
        client, clock = TestingKubernetesApiClient(), Clock()
        lease_held_by(client, "live-leader")
        standby = elector(client, clock)
        standby.start()
        try:
            wait(lambda: standby._observed[0] is not None)
            clock.now += 9
            current = client.objects[REF.name]
            record = LeaderRecord.decode(current.annotations[LEADER_ANNOTATION])
            assert record is not None
            renewed = replace(record, renew_time="2999-01-01T00:00:01Z")
            client.replace_config_map(
                replace(current, annotations={LEADER_ANNOTATION: renewed.encode()})
            )
            wait(lambda: standby._observed[0] == renewed.encode())
            clock.now += 9
            assert standby.await_leadership(0.2) is None
            clock.now += 1.1
            assert standby.await_leadership(30) is not None
        finally:
            standby.stop()


class TestSettings:
    def test_the_renew_deadline_may_not_exceed_the_lease(self):
        with pytest.raises(ConfigurationError, match="renew-deadline"):
            cfg.check_relations(
                {
                    "high-availability.kubernetes.leader-election.lease-duration": "10 s",
                    "high-availability.kubernetes.leader-election.renew-deadline": "11 s",
                }
            )
        with pytest.raises(ConfigurationError, match="retry-period"):
            cfg.check_relations(
                {
                    "high-availability.kubernetes.leader-election.renew-deadline": "5 s",
                    "high-availability.kubernetes.leader-election.retry-period": "5 s",
                }
            )
        cfg.check_relations({})  # Flink's defaults: 15 s, 15 s, 5 s

    def test_the_cluster_id_is_kubernetes_own_else_a_fitting_ha_cluster_id(self):
        assert cluster_id({"kubernetes.cluster-id": "orders"}) == "orders"
        assert cluster_id({"high-availability.cluster-id": "/orders"}) == "orders"
        assert cluster_id({}) == "default"
        with pytest.raises(ConfigurationError, match=r"set kubernetes\.cluster-id"):
            cluster_id({"high-availability.cluster-id": "/Orders_1"})
