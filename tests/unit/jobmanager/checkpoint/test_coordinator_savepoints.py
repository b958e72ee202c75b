"""CheckpointCoordinator savepoints: the same barrier path as checkpoints, but written to
their own directory, never retained or subsumed, committing nothing unless terminal,
and failing to their caller without counting against tolerable failures."""

from __future__ import annotations

import fsspec
import pytest
from _coordinator_testing import ATTEMPTS, SOURCE, make_harness

from weir.core.checkpoint import CheckpointType, decode_metadata
from weir.core.errors import CheckpointError


def _savepoint_dir(h, name: str = "savepoint-ffffff-1") -> str:
    return f"{h.root}/savepoints/{name}"


def test_a_savepoint_is_written_to_its_directory_and_not_retained():
    h = make_harness()
    directory = _savepoint_dir(h)
    result = h.coordinator.trigger_savepoint(directory)
    assert h.gateway.triggered == [(SOURCE, 1)]
    h.ack_all(1)

    fs, path = fsspec.core.url_to_fs(directory)
    assert fsspec.core.url_to_fs(result.result(timeout=0))[1] == path
    metadata = decode_metadata(fs.cat_file(f"{path}/_metadata"), source=directory)
    assert metadata.checkpoint_type is CheckpointType.SAVEPOINT
    assert h.store.get_all() == []  # no retention ever deletes it
    assert h.gateway.completed == []  # an intermediate savepoint commits nothing
    assert h.completed == []
    assert h.coordinator.statistics().num_completed == 1


def test_a_terminal_savepoint_notifies_the_tasks_and_stops_periodic_checkpoints():
    h = make_harness(interval_ms=1000)
    h.coordinator.start_periodic_scheduler()
    result = h.coordinator.trigger_savepoint(_savepoint_dir(h), terminate=True)
    assert not h.coordinator.is_periodic_checkpointing_started
    h.time.advance(5000)
    assert h.coordinator.pending_checkpoint_ids == [1]  # no checkpoint after it
    h.ack_all(1)
    assert result.done()
    assert sorted(h.gateway.completed) == sorted((a, 1) for a in ATTEMPTS)
    assert h.completed == [1]


def test_a_failed_savepoint_fails_its_caller_uncounted_and_removes_its_directory():
    h = make_harness(tolerable_failures=0, interval_ms=1000)
    h.coordinator.start_periodic_scheduler()
    directory = _savepoint_dir(h)
    result = h.coordinator.trigger_savepoint(directory, terminate=True)
    h.ack(SOURCE, 1)
    h.coordinator.receive_decline(ATTEMPTS[1], 1, "disk full")

    with pytest.raises(CheckpointError, match="savepoint 1 failed: declined .*disk full"):
        result.result(timeout=0)
    assert h.failures == []  # the job is not failed over for it
    fs, path = fsspec.core.url_to_fs(directory)
    assert not fs.exists(path)
    assert h.coordinator.is_periodic_checkpointing_started  # the job goes on as before


def test_checkpoints_and_savepoints_do_not_subsume_each_other():
    h = make_harness()
    savepoint = h.coordinator.trigger_savepoint(_savepoint_dir(h))
    assert h.coordinator.trigger_checkpoint() == 2
    h.ack_all(2)
    assert h.coordinator.pending_checkpoint_ids == [1]
    h.ack_all(1)
    assert savepoint.done() and savepoint.exception() is None
    assert [p.checkpoint_id for p in h.store.get_all()] == [2]


def test_a_savepoint_while_not_every_task_runs_says_why():
    h = make_harness()
    h.plan["value"] = None
    with pytest.raises(CheckpointError, match="not every task is running"):
        h.coordinator.trigger_savepoint(_savepoint_dir(h))
