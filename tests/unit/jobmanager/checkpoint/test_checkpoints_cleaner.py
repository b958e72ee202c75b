"""Deleting checkpoints in the background: the CheckpointsCleaner alone, and the
CheckpointCoordinator over a store whose deletions hang (an S3 server that went away)."""

from __future__ import annotations

import logging
import threading

from _coordinator_testing import ATTEMPTS, JOB, MAP_0, SOURCE, make_harness

from weir.core.checkpoint import FileSystemCheckpointStorage
from weir.core.job_status import JobStatus
from weir.jobmanager.checkpoint.checkpoints_cleaner import CheckpointsCleaner

# How long a test waits for a thread that should not be blocked before it calls it
# blocked: a guard against hanging the run, far beyond any machine's scheduling delay.
HANG_GUARD_S = 60.0


class HangingDeletes(FileSystemCheckpointStorage):
    """Deletions of checkpoint directories wait until ``release`` is set, and record the
    thread they ran on."""

    def __init__(self, *args, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self.release = threading.Event()
        self.deleted_on: list[str] = []
        self.deleted: list[int] = []

    def discard_checkpoint(self, checkpoint_id: int) -> None:
        self.deleted_on.append(threading.current_thread().name)
        assert self.release.wait(HANG_GUARD_S), "never released"
        super().discard_checkpoint(checkpoint_id)
        self.deleted.append(checkpoint_id)


def _in_thread(action) -> threading.Thread:
    thread = threading.Thread(target=action, daemon=True)
    thread.start()
    return thread


def _await(condition, what: str) -> None:
    done = threading.Event()
    for _ in range(int(HANG_GUARD_S / 0.01)):
        if condition():
            return
        done.wait(0.01)  # polling interval; the condition decides
    raise AssertionError(f"timed out waiting for {what}")


class TestCheckpointsCleaner:
    def test_runs_in_order_off_the_callers_thread_and_survives_a_failing_deletion(self, caplog):
        cleaner = CheckpointsCleaner(JOB)
        ran: list[tuple[str, str]] = []
        after: list[int] = []

        def delete(name: str):
            def action():
                ran.append((name, threading.current_thread().name))
                if name == "2":
                    raise OSError("the store is down")

            return action

        with caplog.at_level(logging.WARNING):
            for n in (1, 2, 3):
                cleaner.clean(n, delete(str(n)), lambda n=n: after.append(n))
            cleaner.close(wait=True)
        assert [name for name, _ in ran] == ["1", "2", "3"]
        caller = threading.current_thread().name
        assert all(thread != caller and "checkpoint-cleaner" in thread for _, thread in ran)
        assert after == [1, 2, 3]
        assert cleaner.number_of_checkpoints_to_clean == 0
        assert "could not delete the files of checkpoint 2" in caplog.text
        assert "the store is down" in caplog.text

    def test_takes_nothing_after_close(self):
        cleaner = CheckpointsCleaner(JOB)
        cleaner.close()
        ran: list[int] = []
        cleaner.clean(1, lambda: ran.append(1))
        assert ran == []
        assert cleaner.number_of_checkpoints_to_clean == 0


class TestCoordinatorOverAHangingStore:
    def test_acknowledgements_complete_checkpoints_while_a_deletion_hangs(self):
        h = make_harness(storage_class=HangingDeletes, io_executor=None, num_retained=1)
        storage: HangingDeletes = h.storage  # type: ignore[assignment]
        h.ack_all(h.coordinator.trigger_checkpoint())
        second = h.coordinator.trigger_checkpoint()
        # Completing the second subsumes the first, whose deletion hangs.
        acking = _in_thread(lambda: h.ack_all(second))
        acking.join(HANG_GUARD_S)
        assert not acking.is_alive(), "the acknowledging thread waits for the deletion"
        assert [c.checkpoint_id for c in h.store.get_all()] == [second]
        assert storage.deleted_on and "checkpoint-cleaner" in storage.deleted_on[0]
        storage.release.set()
        _await(lambda: storage.deleted == [1], "the subsumed checkpoint's deletion")
        assert h.chk_dirs() == {f"chk-{second}"}
        h.coordinator.shutdown(JobStatus.CANCELED)

    def test_a_decline_fails_the_job_over_while_a_deletion_hangs(self):
        h = make_harness(
            storage_class=HangingDeletes, io_executor=None, num_retained=1, tolerable_failures=0
        )
        storage: HangingDeletes = h.storage  # type: ignore[assignment]
        h.ack_all(h.coordinator.trigger_checkpoint())
        h.ack_all(h.coordinator.trigger_checkpoint())  # the first one's deletion hangs
        third = h.coordinator.trigger_checkpoint()
        h.ack(SOURCE, third)
        # The store is down: a task's write failed. Its decline is counted at once.
        declining = _in_thread(lambda: h.coordinator.receive_decline(MAP_0, third, "S3 down"))
        declining.join(HANG_GUARD_S)
        assert not declining.is_alive(), "the decline waits for a deletion"
        assert len(h.failures) == 1
        assert "S3 down" in str(h.failures[0])
        assert sorted(h.gateway.aborted) == sorted((a, third) for a in ATTEMPTS)
        storage.release.set()
        h.coordinator.shutdown(JobStatus.FAILED)
        assert sorted(storage.deleted) == [1, third]

    def test_periodic_triggers_wait_while_deletions_pile_up_and_resume_after(self):
        h = make_harness(
            storage_class=HangingDeletes, io_executor=None, num_retained=1, max_concurrent=1
        )
        storage: HangingDeletes = h.storage  # type: ignore[assignment]
        h.coordinator.start_periodic_scheduler()
        for n in (1, 2, 3):
            h.time.advance(1000)
            assert h.coordinator.pending_checkpoint_ids == [n]
            h.ack_all(n)
        # Checkpoints 1 and 2 await deletion: more than max-concurrent (1).
        _await(lambda: h.coordinator._cleaner.number_of_checkpoints_to_clean == 2, "backlog")
        h.time.advance(5000)
        assert h.coordinator.pending_checkpoint_ids == []
        storage.release.set()
        _await(lambda: h.coordinator.pending_checkpoint_ids == [4], "the held-back trigger")
        h.coordinator.shutdown(JobStatus.CANCELED)

    def test_shutdown_waits_for_the_queued_deletions(self):
        h = make_harness(storage_class=HangingDeletes, io_executor=None, num_retained=1)
        storage: HangingDeletes = h.storage  # type: ignore[assignment]
        h.ack_all(h.coordinator.trigger_checkpoint())
        h.ack_all(h.coordinator.trigger_checkpoint())
        shutting = _in_thread(lambda: h.coordinator.shutdown(JobStatus.FINISHED))
        _await(lambda: storage.deleted_on, "the deletion to start")
        assert shutting.is_alive()  # waits for the deletion it cannot skip
        storage.release.set()
        shutting.join(HANG_GUARD_S)
        assert not shutting.is_alive()
        assert storage.deleted == [1]
        assert h.chk_dirs() == set()
