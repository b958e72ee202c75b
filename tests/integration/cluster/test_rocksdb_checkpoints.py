"""The rocksdb state backend with incremental checkpoints on the MiniCluster: recovery
from a killed TaskManager commits exactly the lines of a failure-free run, and the
files of ``shared/`` are exactly those the retained checkpoint refers to."""

from __future__ import annotations

import random

import pytest
from test_checkpoint_recovery import (
    await_condition,
    committed_lines,
    expected_lines,
    kill_a_task_manager,
    running_sum_job,
)

from weir.client.dispatcher_client import DispatcherGateway
from weir.core.checkpoint import IncrementalKeyGroupsStateHandle, decode_metadata

pytestmark = pytest.mark.spark

ROCKSDB = {"state.backend.type": "rocksdb", "state.backend.incremental": "true"}


def _retained_metadata(tmp_path):
    (metadata_file,) = tmp_path.glob("checkpoints/*/chk-*/_metadata")
    return decode_metadata(metadata_file.read_bytes())


def test_recovers_from_an_incremental_checkpoint_after_a_task_manager_kill(cluster, tmp_path):
    records = 6_000
    env, out = running_sum_job(
        tmp_path, records, 0.001, {**ROCKSDB, "execution.checkpointing.num-retained": "1"}
    )
    client = env.execute_async("running sum on rocksdb, one TaskManager killed")
    job_id = str(client.get_job_id())
    with DispatcherGateway(cluster.address) as gateway:
        # After an incremental checkpoint put files in shared/, so recovery reads them.
        await_condition(lambda: list(tmp_path.glob("checkpoints/*/shared/*.sst")), "SST files")
        kill_a_task_manager(gateway, job_id, random.Random(1), 0)
    client.get_job_execution_result().result()

    assert committed_lines(out) == expected_lines(records)
    metadata = _retained_metadata(tmp_path)
    handles = [
        h
        for op in metadata.operator_states.values()
        for sub in op.subtask_states.values()
        for h in sub.managed_keyed_state
    ]
    assert handles and all(isinstance(h, IncrementalKeyGroupsStateHandle) for h in handles)
    # Only what the one retained checkpoint refers to is left in shared/.
    shared = {p.name for p in tmp_path.glob("checkpoints/*/shared/*")}
    assert shared == {path.rsplit("/", 1)[-1] for path in metadata.shared_paths()}
