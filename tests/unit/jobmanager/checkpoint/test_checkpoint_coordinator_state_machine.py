"""Random interleavings of triggers, acks (duplicate and late), declines, timeouts and task
failures never complete a checkpoint without every ack, never lose the latest completed
checkpoint, never reuse an id, and never exceed max-concurrent."""

from __future__ import annotations

from _coordinator_testing import ATTEMPTS, make_harness
from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, initialize, invariant, rule


class CheckpointCoordinatorMachine(RuleBasedStateMachine):
    @initialize(
        max_concurrent=st.integers(min_value=1, max_value=3),
        num_retained=st.integers(min_value=1, max_value=3),
        tolerable=st.integers(min_value=0, max_value=3),
    )
    def setup(self, max_concurrent, num_retained, tolerable):
        self.h = make_harness(
            interval_ms=1000,
            timeout_ms=4000,
            min_pause_ms=0,
            max_concurrent=max_concurrent,
            num_retained=num_retained,
            tolerable_failures=tolerable,
        )
        self.h.coordinator.start_periodic_scheduler()
        self.acked: dict[int, set[str]] = {}
        self.triggered: list[int] = []
        self.latest_completed = 0

    def _note_new_ids(self):
        for _, cid in self.h.gateway.triggered:
            if cid not in self.triggered:
                self.triggered.append(cid)

    @rule(ms=st.integers(min_value=0, max_value=5000))
    def advance_time(self, ms):
        self.h.time.advance(ms)
        self._note_new_ids()

    @rule(data=st.data())
    def ack(self, data):
        if not self.triggered:
            return
        cid = data.draw(st.sampled_from(self.triggered))
        attempt = data.draw(st.sampled_from(ATTEMPTS))
        was_pending = cid in self.h.coordinator.pending_checkpoint_ids
        used = self.h.ack(attempt, cid)
        if used:
            assert was_pending
            self.acked.setdefault(cid, set()).add(attempt)
        self._note_new_ids()

    @rule(data=st.data())
    def decline(self, data):
        pending = self.h.coordinator.pending_checkpoint_ids
        if not pending:
            return
        cid = data.draw(st.sampled_from(pending))
        self.h.coordinator.receive_decline(data.draw(st.sampled_from(ATTEMPTS)), cid, "declined")
        assert cid not in self.h.coordinator.pending_checkpoint_ids

    @rule()
    def task_failure(self):
        self.h.coordinator.abort_pending("a task failed")
        assert self.h.coordinator.pending_checkpoint_ids == []

    @rule()
    def forced_trigger(self):
        self.h.coordinator.trigger_checkpoint()
        self._note_new_ids()

    @invariant()
    def completes_only_with_every_ack(self):
        if not hasattr(self, "h"):
            return
        for pointer in self.h.store.get_all():
            if pointer.checkpoint_id in self.acked:
                assert self.acked[pointer.checkpoint_id] == set(ATTEMPTS)
        for attempt, cid in self.h.gateway.completed:
            assert self.acked.get(cid) == set(ATTEMPTS), (attempt, cid)

    @invariant()
    def latest_completed_is_never_lost(self):
        if not hasattr(self, "h"):
            return
        latest = self.h.store.get_latest()
        if latest is None:
            assert self.latest_completed == 0
            return
        assert latest.checkpoint_id >= self.latest_completed
        self.latest_completed = latest.checkpoint_id
        restored = self.h.coordinator.restore_latest()
        assert restored is not None and restored.checkpoint_id == latest.checkpoint_id
        assert f"chk-{latest.checkpoint_id}" in self.h.chk_dirs()

    @invariant()
    def ids_strictly_increase(self):
        if not hasattr(self, "h"):
            return
        assert self.triggered == sorted(set(self.triggered))
        stats_ids = [s.checkpoint_id for s in self.h.coordinator.statistics().history]
        assert stats_ids == sorted(set(stats_ids), reverse=True)

    @invariant()
    def no_checkpoint_is_pending_twice(self):
        if not hasattr(self, "h"):
            return
        pending = self.h.coordinator.pending_checkpoint_ids
        assert len(pending) == len(set(pending))

    @invariant()
    def only_retained_and_pending_dirs_exist(self):
        if not hasattr(self, "h"):
            return
        expected = {f"chk-{p.checkpoint_id}" for p in self.h.store.get_all()}
        expected |= {f"chk-{c}" for c in self.h.coordinator.pending_checkpoint_ids}
        assert self.h.chk_dirs() <= expected


CheckpointCoordinatorMachine.TestCase.settings = settings(
    max_examples=60,
    stateful_step_count=40,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
)
TestCheckpointCoordinatorStateMachine = CheckpointCoordinatorMachine.TestCase


class PeriodicOnlyMachine(CheckpointCoordinatorMachine):
    """Without forced triggers, max-concurrent holds exactly."""

    forced_trigger = None  # type: ignore[assignment]

    @invariant()
    def at_most_max_concurrent(self):
        if not hasattr(self, "h"):
            return
        assert (
            len(self.h.coordinator.pending_checkpoint_ids)
            <= self.h.coordinator.config.max_concurrent
        )


PeriodicOnlyMachine.TestCase.settings = CheckpointCoordinatorMachine.TestCase.settings
TestPeriodicOnlyStateMachine = PeriodicOnlyMachine.TestCase
