"""Restore time after rescaling 2 -> 3: a savepoint's keyed state, written by two
subtasks in the canonical form, restored by three subtasks that each read the handles
overlapping their key groups and load only their own groups into a fresh backend.

It runs the task's restore path (``RestoredTaskState.keyed_state`` then
``backend.restore``) on the files a savepoint holds, without a cluster, so the figure is
the state's alone (no deployment, no Spark). Subtasks restore in parallel on a cluster;
here they run one after another, and the report gives each one's time and the slowest
(what the job waits for).

    python benchmarks/savepoint_rescale.py [--state-mb MB] [--value-bytes N]
                                           [--target rocksdb|hashmap]
"""

from __future__ import annotations

import argparse
import os
import shutil
import tempfile
import time

from weir.core.checkpoint import (
    KeyGroupRange,
    KeyGroupsStateHandle,
    OperatorState,
    OperatorSubtaskState,
    TaskStateSnapshot,
    encode_task_state,
)
from weir.core.checkpoint.savepoint_storage import savepoint_location
from weir.core.ids import OperatorId
from weir.core.key_groups import key_group_range_for_operator
from weir.taskmanager.checkpointing.snapshot import encode_keyed_state
from weir.taskmanager.checkpointing.subtask_checkpoint import RestoredTaskState
from weir.taskmanager.state.hashmap import HashMapKeyedStateBackend
from weir.taskmanager.state.rocksdb import RocksDBKeyedStateBackend

MAX_PARALLELISM = 128
OPERATOR = OperatorId("0" * 32)


def _backend(kind: str, key_groups: range, directory: str):
    if kind == "hashmap":
        return HashMapKeyedStateBackend(MAX_PARALLELISM, key_groups)
    return RocksDBKeyedStateBackend(MAX_PARALLELISM, key_groups, directory)


def write_savepoint(root: str, keys: int, value_bytes: int) -> tuple[OperatorState, float]:
    """Two rocksdb subtasks fill ValueState "v" for their share of ``keys`` and write a
    savepoint of it; returns its operator state and the seconds the writing took."""
    subtasks = {}
    seconds = 0.0
    for index in range(2):
        owned = key_group_range_for_operator(MAX_PARALLELISM, 2, index)
        backend = RocksDBKeyedStateBackend(
            MAX_PARALLELISM, owned, os.path.join(root, f"old-{index}")
        )
        state = backend.get_value_state("v")
        hasher = backend.key_hasher
        for key in range(keys):
            if hasher.key_group(key, MAX_PARALLELISM) in owned:
                backend.current_key = key
                state.update(key.to_bytes(8, "big") * (value_bytes // 8))
        started = time.perf_counter()
        encoded = encode_keyed_state(backend.snapshot(), owned)
        handle = savepoint_location(os.path.join(root, "savepoint"), 1).write_state(
            f"{OPERATOR}-{index}-keyed", encoded.data
        )
        seconds += time.perf_counter() - started
        subtasks[index] = OperatorSubtaskState(
            managed_keyed_state=(
                KeyGroupsStateHandle(
                    KeyGroupRange(owned.start, owned.stop),
                    handle,
                    encoded.offsets,
                    encoded.state_meta,
                ),
            )
        )
        backend.dispose()
    return OperatorState(OPERATOR, 2, MAX_PARALLELISM, subtasks), seconds


def restore_rescaled(root: str, operator: OperatorState, kind: str) -> list[float]:
    """Seconds each of three new subtasks takes to restore its key groups."""
    handles = [h for s in operator.subtask_states.values() for h in s.managed_keyed_state]
    times = []
    for index in range(3):
        owned = key_group_range_for_operator(MAX_PARALLELISM, 3, index)
        mine = tuple(
            h for h in handles if h.key_groups.start < owned.stop and owned.start < h.key_groups.end
        )
        task_state = encode_task_state(
            TaskStateSnapshot({OPERATOR: OperatorSubtaskState(managed_keyed_state=mine)})
        )
        backend = _backend(kind, owned, os.path.join(root, f"new-{index}"))
        started = time.perf_counter()
        restored = RestoredTaskState(task_state, MAX_PARALLELISM)
        canonical, _ = restored.keyed_state(str(OPERATOR), backend.key_group_range)
        backend.restore(canonical)
        times.append(time.perf_counter() - started)
        backend.dispose()
    return times


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--state-mb", type=int, default=1024)
    parser.add_argument("--value-bytes", type=int, default=1000)
    parser.add_argument("--target", choices=("rocksdb", "hashmap"), default="rocksdb")
    args = parser.parse_args()
    keys = args.state_mb * 1024 * 1024 // args.value_bytes
    root = tempfile.mkdtemp(prefix="weir-bench-rescale-")
    try:
        operator, write_s = write_savepoint(root, keys, args.value_bytes)
        size = operator.state_size
        mb = size / 2**20
        print(f"savepoint: {keys} keys, {mb:.0f} MB of keyed state, written in {write_s:.1f} s")
        times = restore_rescaled(root, operator, args.target)
        for index, seconds in enumerate(times):
            print(f"  subtask {index + 1}/3 restored its groups on {args.target}: {seconds:.1f} s")
        print(
            f"restore after rescaling 2 -> 3: {max(times):.1f} s (slowest subtask), "
            f"{sum(times):.1f} s one after another, {mb / sum(times):.0f} MB/s"
        )
    finally:
        shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    main()
