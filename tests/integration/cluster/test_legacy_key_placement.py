"""A savepoint written before keyed state recorded how its keys were placed, when keys of a
TUPLE or ROW key type went to the key group of their pickled bytes (and Row keys were kept
unnamed), restores through ``weir run -s`` with every key where Java's hashing puts it now:
each key finds its state, at the savepoint's parallelism and another, on both backends."""

from __future__ import annotations

import textwrap

import pytest

from weir.client import cli
from weir.common import Row
from weir.core.checkpoint import (
    CheckpointMetadata,
    CheckpointType,
    KeyGroupRange,
    KeyGroupsStateHandle,
    OperatorState,
    OperatorSubtaskState,
)
from weir.core.checkpoint.savepoint_storage import savepoint_location, write_savepoint_metadata
from weir.core.ids import JobId
from weir.core.key_groups import PyFlinkKeyHasher, key_group_range_for_operator
from weir.graph.operator_ids import uid_to_operator_id
from weir.taskmanager.checkpointing.snapshot import encode_keyed_state
from weir.taskmanager.state.hashmap import HashMapKeyedStateBackend

pytestmark = pytest.mark.spark

KEYS = [(c, i) for c in "abcdefgh" for i in (1, 6)]

# argv: output file, state backend. Counts per key, from the restored state.
JOB = textwrap.dedent(
    """
    import sys

    from weir.common import Row, Types
    from weir.datastream import (
        EmbeddedRocksDBStateBackend, HashMapStateBackend, KeyedProcessFunction,
        StreamExecutionEnvironment,
    )
    from weir.datastream.state import ValueStateDescriptor

    out, backend = sys.argv[1:3]


    class Count(KeyedProcessFunction):
        def __init__(self, label):
            self.label = label

        def open(self, runtime_context):
            self.count = runtime_context.get_state(ValueStateDescriptor("count", Types.LONG()))

        def process_element(self, value, ctx):
            n = (self.count.value() or 0) + 1
            self.count.update(n)
            yield "%s %r %d" % (self.label, ctx.get_current_key(), n)


    env = StreamExecutionEnvironment.get_execution_environment()
    env.enable_checkpointing(1000)
    env.set_state_backend(
        EmbeddedRocksDBStateBackend() if backend == "rocksdb" else HashMapStateBackend()
    )
    pair = Types.TUPLE([Types.STRING(), Types.INT()])
    keys = env.from_collection([(c, i) for c in "abcdefgh" for i in (1, 6)], type_info=pair)
    tuples = keys.key_by(lambda v: v, key_type=pair).process(
        Count("tuple"), output_type=Types.STRING()
    ).uid("tuple-count")
    rows = keys.key_by(
        lambda v: Row(v[0], v[1]), key_type=Types.ROW([Types.STRING(), Types.INT()])
    ).process(Count("row"), output_type=Types.STRING()).uid("row-count")
    with open(out, "w") as f:
        f.write("\\n".join(sorted(tuples.union(rows).execute_and_collect())))
    """
)


def _legacy_keyed_state(location, uid: str, keys: list) -> OperatorState:
    """Keyed state of ``uid`` as a job at parallelism 2 wrote it before placements were
    recorded: keys in the group of their pickled bytes, handles recording nothing. Key
    ``k`` counted ``100 + its index``."""
    placed_as_then = PyFlinkKeyHasher("pickled")
    subtasks = {}
    for index in range(2):
        owned = key_group_range_for_operator(128, 2, index)
        backend = HashMapKeyedStateBackend(128, owned, placed_as_then)
        count = backend.get_value_state("count", serializer="Long")
        for n, key in enumerate(keys):
            if placed_as_then.key_group(key, 128) in owned:
                backend.current_key = key
                count.update(100 + n)
        encoded = encode_keyed_state(backend.snapshot(), owned)
        handle = location.write_state(f"{uid}-{index}", encoded.data)
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
    operator_id = uid_to_operator_id(uid)
    return OperatorState(operator_id, 2, 128, subtasks, uid=uid)


@pytest.fixture(scope="module")
def legacy_savepoint(tmp_path_factory) -> str:
    directory = str(tmp_path_factory.mktemp("legacy") / "savepoint-ffffff-1")
    location = savepoint_location(directory, 1)
    tuples = _legacy_keyed_state(location, "tuple-count", KEYS)
    rows = _legacy_keyed_state(location, "row-count", [Row(*k) for k in KEYS])
    write_savepoint_metadata(
        directory,
        CheckpointMetadata(
            JobId("f" * 32),
            1,
            1,
            2,
            CheckpointType.SAVEPOINT,
            {tuples.operator_id: tuples, rows.operator_id: rows},
        ),
    )
    # Some keys sit on the other subtask now: the restore must move them.
    java = PyFlinkKeyHasher("Tuple<String, Integer>")
    moved = [
        k
        for k in KEYS
        if java.key_group(k, 128) // 64 != PyFlinkKeyHasher().key_group(k, 128) // 64
    ]
    assert moved
    return directory


@pytest.mark.parametrize("backend", ["hashmap", "rocksdb"])
@pytest.mark.parametrize("parallelism", [2, 3])
def test_every_key_finds_its_state(cluster, tmp_path, legacy_savepoint, backend, parallelism):
    script = tmp_path / "counts.py"
    script.write_text(JOB)
    out = tmp_path / "out.txt"
    run = ["run", "-p", str(parallelism), "-m", cluster.address, "-s", legacy_savepoint]
    assert cli.main([*run, str(script), str(out), backend]) == 0

    expected = [f"tuple {k!r} {101 + n}" for n, k in enumerate(KEYS)]
    expected += [f"row Row(f0={c!r}, f1={i!r}) {101 + n}" for n, (c, i) in enumerate(KEYS)]
    assert sorted(out.read_text().splitlines()) == sorted(expected)
