"""CheckpointCoordinator: triggering, completion, abort paths, retention and restore."""

from __future__ import annotations

import fsspec
import pytest
from _coordinator_testing import (
    ATTEMPTS,
    JOB,
    MAP_0,
    MAP_1,
    MAP_OP,
    SOURCE,
    SOURCE_OP,
    make_harness,
)

from weir.core.checkpoint import CheckpointType, ExternalizedCheckpointRetention, decode_metadata
from weir.core.errors import (
    CheckpointError,
    CheckpointStorageUnavailableError,
    LeaderLostError,
    PossibleInconsistentStateError,
)
from weir.core.ids import ExecutionAttemptId
from weir.core.job_status import JobStatus
from weir.jobmanager.checkpoint import CheckpointStatus


class TestPeriodicTriggering:
    def test_first_trigger_comes_one_interval_after_start(self):
        h = make_harness(interval_ms=1000)
        h.coordinator.start_periodic_scheduler()
        h.time.advance(999)
        assert h.gateway.triggered == []
        h.time.advance(1)
        assert h.gateway.triggered == [(SOURCE, 1)]

    def test_only_sources_are_triggered(self):
        h = make_harness()
        h.coordinator.trigger_checkpoint()
        assert [a for a, _ in h.gateway.triggered] == [SOURCE]

    def test_max_concurrent_holds_the_next_trigger_until_one_ends(self):
        h = make_harness(interval_ms=1000, max_concurrent=1)
        h.coordinator.start_periodic_scheduler()
        h.time.advance(1000)
        h.time.advance(3000)
        assert h.coordinator.pending_checkpoint_ids == [1]
        h.ack_all(1)
        assert h.coordinator.pending_checkpoint_ids == [2]

    def test_min_pause_counts_from_the_end_of_the_last_checkpoint(self):
        h = make_harness(interval_ms=1000, min_pause_ms=5000, max_concurrent=2)
        h.coordinator.start_periodic_scheduler()
        h.time.advance(1000)
        h.ack_all(1)  # ends at t0+1000
        h.time.advance(4999)
        assert h.coordinator.pending_checkpoint_ids == []
        h.time.advance(1)
        assert h.coordinator.pending_checkpoint_ids == [2]

    def test_no_checkpoint_while_not_every_task_runs(self):
        h = make_harness()
        h.plan["value"] = None
        assert h.coordinator.trigger_checkpoint() is None
        assert h.counter.get() == 1  # no id used up

    def test_stopping_cancels_the_periodic_trigger(self):
        h = make_harness()
        h.coordinator.start_periodic_scheduler()
        h.coordinator.stop_periodic_scheduler()
        h.time.advance(10_000)
        assert h.gateway.triggered == []

    def test_checkpointing_off_never_triggers(self):
        h = make_harness(interval_ms=0)
        h.coordinator.start_periodic_scheduler()
        h.time.advance(100_000)
        assert not h.coordinator.is_periodic_checkpointing_started


class TestCompletion:
    def test_completes_only_when_every_task_acked_then_notifies(self):
        h = make_harness()
        cid = h.coordinator.trigger_checkpoint()
        h.ack(SOURCE, cid)
        h.ack(MAP_0, cid)
        assert h.store.get_latest() is None
        assert h.gateway.completed == []
        h.ack(MAP_1, cid)
        pointer = h.store.get_latest()
        assert pointer is not None and pointer.checkpoint_id == cid
        assert sorted(h.gateway.completed) == sorted((a, cid) for a in ATTEMPTS)
        fs, path = fsspec.core.url_to_fs(pointer.external_pointer)
        metadata = decode_metadata(fs.cat_file(path))
        assert metadata.checkpoint_id == cid
        assert set(metadata.operator_states) == {SOURCE_OP, MAP_OP}
        assert set(metadata.operator_states[MAP_OP].subtask_states) == {0, 1}
        assert metadata.operator_states[MAP_OP].parallelism == 2

    def test_metadata_is_written_before_the_store_and_notifications(self):
        h = make_harness()
        order = []
        write = h.storage.write_metadata
        add = h.store.add_checkpoint
        notify = h.gateway.notify_checkpoint_complete
        h.storage.write_metadata = lambda *a: (order.append("metadata"), write(*a))[1]
        h.store.add_checkpoint = lambda *a: (order.append("store"), add(*a))[1]
        h.gateway.notify_checkpoint_complete = lambda *a: (order.append("notify"), notify(*a))[1]
        cid = h.coordinator.trigger_checkpoint()
        h.ack_all(cid)
        assert order == ["metadata", "store", "notify", "notify", "notify"]

    def test_the_completion_listener_hears_after_the_store_and_before_the_tasks(self):
        h = make_harness(max_concurrent=3)
        heard = []  # what the listener had heard when the store and the tasks were told
        add = h.store.add_checkpoint
        notify = h.gateway.notify_checkpoint_complete
        h.store.add_checkpoint = lambda *a: (heard.append(("store", [*h.completed])), add(*a))[1]
        h.gateway.notify_checkpoint_complete = lambda *a: (
            heard.append(("notify", [*h.completed])),
            notify(*a),
        )[1]
        first = h.coordinator.trigger_checkpoint()
        second = h.coordinator.trigger_checkpoint()
        h.coordinator.receive_decline(SOURCE, first, "no")
        h.ack_all(second)
        assert h.completed == [second]  # an aborted checkpoint is not announced
        assert heard == [("store", [])] + [("notify", [second])] * 3

    def test_duplicate_and_foreign_acks_are_ignored(self):
        h = make_harness()
        cid = h.coordinator.trigger_checkpoint()
        assert h.ack(SOURCE, cid)
        assert not h.ack(SOURCE, cid)
        assert not h.ack(ExecutionAttemptId("stranger"), cid)
        assert h.coordinator.pending_checkpoint_ids == [cid]

    def test_subsumed_checkpoints_are_deleted_and_num_retained_kept(self):
        h = make_harness(num_retained=2, max_concurrent=5)
        for _ in range(4):
            h.ack_all(h.coordinator.trigger_checkpoint())
        assert [p.checkpoint_id for p in h.store.get_all()] == [3, 4]
        assert h.chk_dirs() == {"chk-3", "chk-4"}

    def test_completing_a_newer_checkpoint_subsumes_older_pending_ones(self):
        h = make_harness(max_concurrent=2)
        first = h.coordinator.trigger_checkpoint()
        second = h.coordinator.trigger_checkpoint()
        h.ack_all(second)
        assert h.coordinator.pending_checkpoint_ids == []
        assert (SOURCE, first) in h.gateway.aborted
        assert h.failures == []  # subsumption is no failure

    def test_statistics(self):
        h = make_harness(tolerable_failures=5)
        ok = h.coordinator.trigger_checkpoint()
        h.time.advance(250)
        h.ack_all(ok)
        bad = h.coordinator.trigger_checkpoint()
        h.coordinator.receive_decline(MAP_0, bad, "boom")
        running = h.coordinator.trigger_checkpoint()
        stats = h.coordinator.statistics()
        assert (stats.num_completed, stats.num_failed, stats.num_in_progress) == (1, 1, 1)
        assert [s.checkpoint_id for s in stats.history] == [running, bad, ok]
        done = stats.latest_completed
        assert done is not None and done.status is CheckpointStatus.COMPLETED
        assert done.end_to_end_duration_ms == 250
        assert (done.sync_duration_ms, done.async_duration_ms, done.alignment_duration_ms) == (
            2,
            5,
            1,
        )
        assert done.state_size_bytes > 0 and done.num_acknowledged == 3
        assert stats.latest_failed is not None and "boom" in stats.latest_failed.failure_message


class TestAbort:
    def test_decline_aborts_notifies_and_deletes_the_dir(self):
        h = make_harness(tolerable_failures=1)
        cid = h.coordinator.trigger_checkpoint()
        h.ack(SOURCE, cid)
        assert h.chk_dirs() == {f"chk-{cid}"}
        h.coordinator.receive_decline(MAP_0, cid, "state too big")
        assert h.coordinator.pending_checkpoint_ids == []
        assert sorted(h.gateway.aborted) == sorted((a, cid) for a in ATTEMPTS)
        assert h.chk_dirs() == set()
        assert h.failures == []

    def test_a_checkpoint_whose_registration_had_no_answer_keeps_its_files(self):
        """The connection to ZooKeeper dropped before it answered the write that registers
        the checkpoint: it may be registered, and the next leader may restore it."""
        h = make_harness(tolerable_failures=0)

        def no_answer(_pointer):
            msg = "the connection dropped before the answer"
            raise PossibleInconsistentStateError(msg)

        h.store.add_checkpoint = no_answer
        cid = h.coordinator.trigger_checkpoint()
        h.ack_all(cid)
        assert h.coordinator.pending_checkpoint_ids == []
        assert h.completed == []
        assert h.chk_dirs() == {f"chk-{cid}"}  # _metadata and state stay
        assert "had no answer" in h.coordinator.statistics().latest_failed.failure_message
        assert h.failures == []  # a connection blip: no failover

    def test_a_restore_after_a_registration_without_answer_starts_from_what_is_registered(
        self,
    ):
        """The store registered the checkpoint but its answer was lost; only the store,
        asked before the restore, can tell. Restoring the one before would abort what the
        sinks put aside for it, which the next leader could then not commit."""
        h = make_harness()
        applied: list = []
        add = h.store.add_checkpoint

        def applied_without_answer(pointer):
            applied.append(pointer)
            msg = "the connection dropped before the answer"
            raise PossibleInconsistentStateError(msg)

        def settle():
            while applied:
                add(applied.pop())

        first = h.coordinator.trigger_checkpoint()
        h.ack_all(first)
        h.store.add_checkpoint = applied_without_answer
        h.store.settle = settle
        second = h.coordinator.trigger_checkpoint()
        h.ack_all(second)
        assert [p.checkpoint_id for p in h.store.get_all()] == [first]
        assert h.coordinator.restore_latest().checkpoint_id == second

    def test_timeout_aborts(self):
        h = make_harness(timeout_ms=5000, tolerable_failures=1)
        cid = h.coordinator.trigger_checkpoint()
        h.time.advance(5000)
        assert h.coordinator.pending_checkpoint_ids == []
        assert "expired" in h.coordinator.statistics().latest_failed.failure_message
        assert not h.ack(SOURCE, cid)

    def test_failures_past_the_tolerable_number_fail_the_job(self):
        h = make_harness(tolerable_failures=1, timeout_ms=5000)
        h.coordinator.trigger_checkpoint()
        h.time.advance(5000)
        assert h.failures == []
        h.coordinator.trigger_checkpoint()
        h.time.advance(5000)
        assert len(h.failures) == 1
        assert isinstance(h.failures[0], CheckpointError)
        assert "tolerable-failed-checkpoints" in str(h.failures[0])

    @pytest.mark.parametrize(
        "reason",
        ["CHECKPOINT_DECLINED_SUBSUMED", "CHECKPOINT_DECLINED_ON_CANCELLATION_BARRIER"],
    )
    def test_a_decline_for_a_newer_or_aborted_checkpoint_is_not_a_failure(self, reason):
        """As Flink's CheckpointFailureReason.isCountedAgainstFailureThreshold: a task
        that saw a newer barrier first (subsumed), or an abort, fails nothing, even with no
        failure tolerated; a decline for any other reason does."""
        h = make_harness(tolerable_failures=0)
        cid = h.coordinator.trigger_checkpoint()
        h.coordinator.receive_decline(MAP_0, cid, reason)
        assert h.coordinator.pending_checkpoint_ids == []  # aborted all the same
        assert h.failures == []
        h.coordinator.receive_decline(MAP_0, h.coordinator.trigger_checkpoint(), "OSError: x")
        assert len(h.failures) == 1

    def test_a_completed_checkpoint_resets_the_failure_count(self):
        h = make_harness(tolerable_failures=1)
        h.coordinator.receive_decline(MAP_0, h.coordinator.trigger_checkpoint(), "x")
        h.ack_all(h.coordinator.trigger_checkpoint())
        h.coordinator.receive_decline(MAP_0, h.coordinator.trigger_checkpoint(), "x")
        assert h.failures == []

    def test_task_failure_aborts_pending_without_counting(self):
        h = make_harness(tolerable_failures=0, max_concurrent=2)
        h.coordinator.trigger_checkpoint()
        h.coordinator.trigger_checkpoint()
        h.coordinator.abort_pending("map-0 failed")
        assert h.coordinator.pending_checkpoint_ids == []
        assert h.failures == []

    def test_late_ack_of_an_aborted_checkpoint_is_discarded(self):
        h = make_harness(tolerable_failures=1)
        cid = h.coordinator.trigger_checkpoint()
        h.coordinator.receive_decline(MAP_0, cid, "x")
        assert not h.ack(MAP_1, cid)  # writes into chk-N after it was deleted
        assert h.chk_dirs() == set()

    def test_unreachable_source_declines(self):
        h = make_harness(tolerable_failures=3)
        h.gateway.fail_triggers = True
        h.coordinator.trigger_checkpoint()
        assert h.coordinator.pending_checkpoint_ids == []
        assert "triggering it failed" in h.coordinator.statistics().latest_failed.failure_message


class TestRestore:
    def test_nothing_to_restore_before_the_first_checkpoint(self):
        assert make_harness().coordinator.restore_latest() is None

    def test_restores_the_latest(self):
        h = make_harness(num_retained=2)
        h.ack_all(h.coordinator.trigger_checkpoint())
        h.ack_all(h.coordinator.trigger_checkpoint())
        restored = h.coordinator.restore_latest()
        assert restored is not None and restored.checkpoint_id == 2
        assert restored.metadata.job_id == JOB

    def test_falls_back_to_the_previous_when_a_state_file_is_corrupt(self, caplog):
        h = make_harness(num_retained=2)
        h.ack_all(h.coordinator.trigger_checkpoint())
        h.ack_all(h.coordinator.trigger_checkpoint())
        fs, path = fsspec.core.url_to_fs(f"{h.root}/{JOB}/chk-2/{MAP_1}")
        data = bytearray(fs.cat_file(path))
        data[0] ^= 0xFF
        fs.pipe_file(path, bytes(data))
        with caplog.at_level("WARNING"):
            restored = h.coordinator.restore_latest()
        assert restored is not None and restored.checkpoint_id == 1
        assert any("checkpoint 2 cannot be restored" in r.getMessage() for r in caplog.records)

    def test_falls_back_when_metadata_is_missing_and_fails_when_none_is_usable(self):
        h = make_harness(num_retained=2)
        h.ack_all(h.coordinator.trigger_checkpoint())
        h.ack_all(h.coordinator.trigger_checkpoint())
        fs, path = fsspec.core.url_to_fs(f"{h.root}/{JOB}/chk-2/_metadata")
        fs.rm(path)
        assert h.coordinator.restore_latest().checkpoint_id == 1
        fs.rm(path.replace("chk-2", "chk-1"))
        with pytest.raises(CheckpointError, match=r"none of its 2 retained checkpoints"):
            h.coordinator.restore_latest()

    def test_a_storage_that_does_not_answer_is_no_reason_to_restore_an_older_one(self):
        """An outage of the store: restoring the previous checkpoint would repeat what the
        sinks committed after it; the caller is told to try again (the restart strategy
        decides)."""
        h = make_harness(num_retained=2)
        h.ack_all(h.coordinator.trigger_checkpoint())
        h.ack_all(h.coordinator.trigger_checkpoint())

        def down(pointer):
            raise ConnectionRefusedError(111, f"cannot connect to read {pointer}")

        h.storage.read_metadata = down
        with pytest.raises(CheckpointStorageUnavailableError, match="checkpoint 2 at .*chk-2"):
            h.coordinator.restore_latest()
        del h.storage.read_metadata  # it answers again
        assert h.coordinator.restore_latest().checkpoint_id == 2

    def test_existence_check_without_reading_state(self):
        h = make_harness()
        h.ack_all(h.coordinator.trigger_checkpoint())
        fs, path = fsspec.core.url_to_fs(f"{h.root}/{JOB}/chk-1/{SOURCE}")
        fs.rm(path)
        with pytest.raises(CheckpointError):
            h.coordinator.restore_latest(verify_state=False)

    def test_a_restart_restores_without_asking_the_counter(self, monkeypatch):
        """A restart restores a checkpoint this coordinator drew itself: the counter (in
        the HA store under high availability, maybe unreachable just then) is not read."""
        h = make_harness()
        h.ack_all(h.coordinator.trigger_checkpoint())
        h.ack_all(h.coordinator.trigger_checkpoint())

        def unreachable(*_args):
            raise LeaderLostError("the checkpoint id counter cannot be read")

        monkeypatch.setattr(h.counter, "get", unreachable)
        monkeypatch.setattr(h.counter, "set_count", unreachable)
        restored = h.coordinator.restore_latest()
        assert restored is not None and restored.checkpoint_id == 2

    def test_ids_never_repeat_after_restoring_into_a_new_coordinator(self):
        h = make_harness()
        for _ in range(3):
            h.ack_all(h.coordinator.trigger_checkpoint())
        pointer = h.store.get_latest().external_pointer
        fresh = make_harness()  # a new job run, e.g. `weir run -s chk-3`
        restored = fresh.coordinator.restore_from(pointer.rsplit("/", 1)[0])
        assert restored.checkpoint_id == 3
        assert fresh.coordinator.trigger_checkpoint() == 4
        assert fresh.coordinator.restore_latest().checkpoint_id == 3
        fresh.ack_all(4)
        assert fresh.store.get_latest().checkpoint_id == 4

    def test_statistics_count_restores(self):
        h = make_harness()
        h.ack_all(h.coordinator.trigger_checkpoint())
        pointer = h.store.get_latest().external_pointer
        fresh = make_harness()
        assert fresh.coordinator.statistics().num_restored == 0
        fresh.coordinator.restore_from(pointer)
        fresh.coordinator.restore_latest()
        stats = fresh.coordinator.statistics()
        assert stats.num_restored == 2
        assert stats.latest_restored is not None
        assert stats.latest_restored.checkpoint_id == 1
        assert stats.latest_restored.external_pointer == pointer


class TestShutdown:
    @pytest.mark.parametrize(
        ("retention", "status", "kept"),
        [
            (
                ExternalizedCheckpointRetention.NO_EXTERNALIZED_CHECKPOINTS,
                JobStatus.CANCELED,
                False,
            ),
            (ExternalizedCheckpointRetention.NO_EXTERNALIZED_CHECKPOINTS, JobStatus.FAILED, False),
            (ExternalizedCheckpointRetention.DELETE_ON_CANCELLATION, JobStatus.CANCELED, False),
            (ExternalizedCheckpointRetention.DELETE_ON_CANCELLATION, JobStatus.FINISHED, False),
            (ExternalizedCheckpointRetention.DELETE_ON_CANCELLATION, JobStatus.FAILED, True),
            (ExternalizedCheckpointRetention.RETAIN_ON_CANCELLATION, JobStatus.CANCELED, True),
            (ExternalizedCheckpointRetention.RETAIN_ON_CANCELLATION, JobStatus.FINISHED, True),
            (
                ExternalizedCheckpointRetention.NO_EXTERNALIZED_CHECKPOINTS,
                JobStatus.SUSPENDED,
                True,
            ),
        ],
    )
    def test_retention_policies(self, retention, status, kept):
        h = make_harness(retention=retention, max_concurrent=2)
        h.ack_all(h.coordinator.trigger_checkpoint())
        h.coordinator.trigger_checkpoint()  # still pending at shutdown
        h.coordinator.shutdown(status)
        assert h.chk_dirs() == ({"chk-1"} if kept else set())
        assert h.coordinator.pending_checkpoint_ids == []
        with pytest.raises(CheckpointError, match="shut down"):
            h.coordinator.trigger_checkpoint()


def test_checkpoint_type_is_recorded():
    h = make_harness()
    cid = h.coordinator.trigger_checkpoint(CheckpointType.SAVEPOINT)
    h.ack_all(cid)
    assert h.coordinator.restore_latest().metadata.checkpoint_type is CheckpointType.SAVEPOINT


class TestFinishedTasks:
    """FLIP-147: checkpoints with finished tasks."""

    def _plan_with_the_source_finished(self):
        from weir.jobmanager.checkpoint import CheckpointPlan, CheckpointTask, FinishedOperator

        return CheckpointPlan(
            tasks=(CheckpointTask(MAP_0, 0, 2, is_source=True), CheckpointTask(MAP_1, 1, 2)),
            max_parallelism={SOURCE_OP: 128, MAP_OP: 128},
            finished={SOURCE_OP: FinishedOperator(1, frozenset({0}))},
        )

    def test_finished_subtasks_are_recorded_in_the_metadata(self):
        h = make_harness()
        h.plan["value"] = self._plan_with_the_source_finished()
        cid = h.coordinator.trigger_checkpoint()
        assert [a for a, _ in h.gateway.triggered] == [MAP_0]
        h.ack(MAP_0, cid)
        h.ack(MAP_1, cid)
        (pointer,) = h.store.get_all()
        metadata = decode_metadata(h.storage.read_metadata(pointer.external_pointer))
        source = metadata.operator_states[SOURCE_OP]
        assert source.finished_subtasks == frozenset({0})
        assert source.is_fully_finished and source.subtask_states == {}
        assert metadata.operator_states[MAP_OP].finished_subtasks == frozenset()
        assert set(metadata.operator_states[MAP_OP].subtask_states) == {0, 1}
        # Restoring reads the same back: finished subtasks are not lost on the way.
        restored = h.coordinator.restore_latest()
        assert restored.metadata.operator_states[SOURCE_OP].finished_subtasks == {0}

    def test_a_task_that_finished_before_acknowledging_aborts_without_counting(self):
        h = make_harness(tolerable_failures=0, max_concurrent=2)
        first = h.coordinator.trigger_checkpoint()
        h.ack(SOURCE, first)  # the source acknowledged checkpoint 1 and then finished
        h.ack(MAP_0, first)
        second = h.coordinator.trigger_checkpoint()  # triggered as it exits: no ack
        h.coordinator.task_finished(SOURCE)
        assert h.coordinator.pending_checkpoint_ids == [first]
        assert (SOURCE, second) in h.gateway.aborted
        assert h.failures == []
        h.ack(MAP_1, first)  # a checkpoint it had acknowledged still completes
        assert [p.checkpoint_id for p in h.store.get_all()] == [first]
