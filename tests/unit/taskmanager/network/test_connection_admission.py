"""Unauthenticated data connections: handshake deadlines, caps per host and in total,
the pause after a failed accept, and throttled warnings."""

from __future__ import annotations

from weir.taskmanager.network.connection_admission import (
    AcceptBackoff,
    AdmissionLimits,
    ConnectionAdmission,
    WarningThrottle,
)


def admission(timeout_s: float = 10.0, per_host: int = 100, total: int = 100):
    return ConnectionAdmission[str](AdmissionLimits(timeout_s, per_host, total))


class TestHandshakeDeadline:
    def test_a_connection_expires_at_its_deadline_not_before(self) -> None:
        pending = admission(timeout_s=2.0)
        pending.admit("a", "h", now=0.0)
        pending.admit("b", "h", now=1.0)
        assert pending.next_deadline() == 2.0
        assert pending.expired(now=1.999) == []
        assert pending.expired(now=2.0) == ["a"]
        assert pending.next_deadline() == 3.0
        assert pending.expired(now=10.0) == ["b"]
        assert pending.next_deadline() is None
        assert len(pending) == 0

    def test_an_authenticated_connection_never_expires(self) -> None:
        pending = admission(timeout_s=2.0)
        pending.admit("a", "h", now=0.0)
        pending.admit("b", "h", now=0.5)
        pending.forget("a")
        assert pending.next_deadline() == 2.5
        assert pending.expired(now=100.0) == ["b"]

    def test_forgetting_an_unknown_or_forgotten_connection_is_harmless(self) -> None:
        pending = admission()
        pending.forget("never admitted")
        pending.admit("a", "h", now=0.0)
        pending.forget("a")
        pending.forget("a")
        assert len(pending) == 0
        assert pending.next_deadline() is None


class TestCaps:
    def test_a_host_over_its_cap_loses_its_oldest_connection(self) -> None:
        pending = admission(per_host=2)
        assert pending.admit("a1", "a", now=0.0) == []
        assert pending.admit("b1", "b", now=0.0) == []
        assert pending.admit("a2", "a", now=1.0) == []
        assert pending.admit("a3", "a", now=2.0) == [("a1", "host")]
        # Another host is not affected, and the newest connection is never the one closed.
        assert pending.admit("b2", "b", now=3.0) == []
        assert len(pending) == 4

    def test_all_hosts_over_the_total_cap_lose_the_oldest_connection_of_all(self) -> None:
        pending = admission(per_host=2, total=3)
        pending.admit("a1", "a", now=0.0)
        pending.admit("b1", "b", now=1.0)
        pending.admit("c1", "c", now=2.0)
        assert pending.admit("d1", "d", now=3.0) == [("a1", "total")]
        assert pending.admit("d2", "d", now=4.0) == [("b1", "total")]
        assert pending.admit("d3", "d", now=5.0) == [("d1", "host")]
        assert len(pending) == 3

    def test_a_connection_that_authenticated_leaves_room_for_another(self) -> None:
        pending = admission(per_host=1)
        pending.admit("a1", "a", now=0.0)
        pending.forget("a1")
        assert pending.admit("a2", "a", now=1.0) == []

    def test_a_cap_of_one_keeps_the_newest(self) -> None:
        pending = admission(per_host=1, total=1)
        pending.admit("a1", "a", now=0.0)
        assert pending.admit("b1", "b", now=1.0) == [("a1", "total")]
        assert pending.expired(now=100.0) == ["b1"]


class TestAcceptBackoff:
    def test_doubles_up_to_its_maximum_and_starts_over_after_an_accept(self) -> None:
        backoff = AcceptBackoff(initial_s=0.01, max_s=0.05)
        assert [backoff.failed() for _ in range(5)] == [0.01, 0.02, 0.04, 0.05, 0.05]
        backoff.succeeded()
        assert backoff.failed() == 0.01


class TestWarningThrottle:
    def test_one_warning_per_interval_counting_the_others(self) -> None:
        throttle = WarningThrottle(interval_s=10.0)
        assert throttle.allow(now=0.0) == 0
        assert throttle.allow(now=1.0) is None
        assert throttle.allow(now=9.9) is None
        assert throttle.allow(now=10.0) == 2
        assert throttle.allow(now=25.0) == 0

    def test_counts_events_that_come_in_batches(self) -> None:
        throttle = WarningThrottle(interval_s=10.0)
        assert throttle.allow(now=0.0, count=50) == 0
        assert throttle.allow(now=1.0, count=7) is None
        assert throttle.allow(now=11.0, count=3) == 7
