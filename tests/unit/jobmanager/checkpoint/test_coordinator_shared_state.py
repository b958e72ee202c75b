"""The CheckpointCoordinator keeps shared/ files while a retained checkpoint refers to
them, deletes them once none does, and deletes what an aborted checkpoint uploaded."""

from __future__ import annotations

import fsspec
from _coordinator_testing import ATTEMPTS, MAP_0, MAP_OP, DirectExecutor, make_harness

from weir.core.checkpoint import (
    CheckpointMetrics,
    IncrementalKeyGroupsStateHandle,
    KeyGroupRange,
    OperatorSubtaskState,
    SharedFile,
    TaskStateSnapshot,
)


def _upload(h, tmp_path, name):
    local = tmp_path / name
    local.write_bytes(name.encode() * 100)
    return h.storage.write_shared_file(name, str(local))


def _ack(h, checkpoint_id, shared):
    for attempt in ATTEMPTS:
        if attempt != MAP_0:
            h.ack(attempt, checkpoint_id)
            continue
        handle = IncrementalKeyGroupsStateHandle(
            KeyGroupRange(0, 64),
            "db",
            checkpoint_id,
            tuple(SharedFile(f"{i}.sst", s) for i, s in enumerate(shared)),
            (),
        )
        state = TaskStateSnapshot({MAP_OP: OperatorSubtaskState(managed_keyed_state=(handle,))})
        h.coordinator.receive_acknowledge(attempt, checkpoint_id, state, CheckpointMetrics())


def _exists(handle):
    fs, path = fsspec.core.url_to_fs(handle.path)
    return fs.exists(path)


def test_a_shared_file_is_deleted_when_no_retained_checkpoint_refers_to_it(tmp_path):
    h = make_harness(num_retained=1)
    a, b, c = (_upload(h, tmp_path, n) for n in ("a", "b", "c"))
    first = h.coordinator.trigger_checkpoint()
    _ack(h, first, [a, b])
    second = h.coordinator.trigger_checkpoint()
    _ack(h, second, [b, c])
    assert not _exists(a)
    assert _exists(b) and _exists(c)
    assert h.coordinator.shared_state_registry.reference_count(b.path) == 1


def test_files_an_aborted_checkpoint_uploaded_are_deleted_but_not_shared_ones(tmp_path):
    h = make_harness(num_retained=1)
    kept = _upload(h, tmp_path, "kept")
    first = h.coordinator.trigger_checkpoint()
    _ack(h, first, [kept])
    new = _upload(h, tmp_path, "new")
    second = h.coordinator.trigger_checkpoint()
    handle = IncrementalKeyGroupsStateHandle(
        KeyGroupRange(0, 64), "db", second, (SharedFile("0", kept), SharedFile("1", new)), ()
    )
    state = TaskStateSnapshot({MAP_OP: OperatorSubtaskState(managed_keyed_state=(handle,))})
    h.coordinator.receive_acknowledge(MAP_0, second, state, CheckpointMetrics())
    h.coordinator.receive_decline(ATTEMPTS[0], second, "test")
    assert _exists(kept)
    assert not _exists(new)


def test_counts_are_rebuilt_from_the_retained_checkpoints_after_a_takeover(tmp_path):
    h = make_harness(num_retained=2)
    a, b = (_upload(h, tmp_path, n) for n in ("a", "b"))
    first = h.coordinator.trigger_checkpoint()
    _ack(h, first, [a])
    second = h.coordinator.trigger_checkpoint()
    _ack(h, second, [a, b])
    # A new coordinator (a JobMaster that took over) over the same store and storage.
    from weir.jobmanager.checkpoint.checkpoint_coordinator import CheckpointCoordinator

    c = CheckpointCoordinator(
        job_id=h.coordinator.job_id,
        config=h.coordinator.config,
        storage=h.storage,
        id_counter=h.counter,
        store=h.store,
        gateway=h.gateway,
        plan_provider=lambda: h.plan["value"],
        clock=h.time,
        executor=h.time,
        on_failure=h.failures.append,
        io_executor=DirectExecutor(),
    )
    c.restore_latest()
    assert c.shared_state_registry.reference_count(a.path) == 2
    third = c.trigger_checkpoint()
    h.coordinator = c
    _ack(h, third, [b])
    assert _exists(a)  # still referred to by the second checkpoint
    fourth = c.trigger_checkpoint()
    _ack(h, fourth, [b])
    assert not _exists(a)


def test_files_uploaded_for_a_checkpoint_never_acknowledged_go_when_the_job_ends(tmp_path):
    # A task killed after its upload and before its acknowledgement: the coordinator never
    # learned of the file. Once the job ends keeping its checkpoints, shared/ holds only
    # what the retained checkpoint refers to.
    from weir.core.checkpoint import ExternalizedCheckpointRetention
    from weir.core.job_status import JobStatus

    h = make_harness(
        num_retained=1, retention=ExternalizedCheckpointRetention.RETAIN_ON_CANCELLATION
    )
    kept = _upload(h, tmp_path, "kept")
    first = h.coordinator.trigger_checkpoint()
    _ack(h, first, [kept])
    orphan = _upload(h, tmp_path, "orphan")
    h.coordinator.shutdown(JobStatus.CANCELED)
    assert _exists(kept)
    assert not _exists(orphan)
