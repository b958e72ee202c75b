"""weir.state.read_savepoint on a savepoint written as tasks write one: keyed state of
every kind (with and without a TTL) as Python objects, list, union list and broadcast
state by mode, operators found by uid, and what is missing named."""

from __future__ import annotations

from dataclasses import dataclass

import pytest

from weir.core.checkpoint import (
    CheckpointMetadata,
    CheckpointType,
    KeyGroupRange,
    KeyGroupsStateHandle,
    OperatorState,
    OperatorStateHandle,
    OperatorSubtaskState,
)
from weir.core.checkpoint.savepoint_storage import (
    dispose_savepoint,
    savepoint_location,
    savepoint_parent_directory,
    write_savepoint_metadata,
)
from weir.core.errors import CheckpointError, ConfigurationError
from weir.core.ids import JobId, OperatorId
from weir.core.key_groups import key_group_range_for_operator
from weir.core.state_ttl import StateTtl
from weir.state import read_savepoint
from weir.taskmanager.checkpointing.snapshot import encode_keyed_state
from weir.taskmanager.state.hashmap import HashMapKeyedStateBackend
from weir.taskmanager.state.operator_state import DefaultOperatorStateBackend

KEYED = OperatorId("a" * 32)
RULES = OperatorId("b" * 32)


@dataclass(frozen=True)
class _Named:
    name: str
    _ttl_config: None = None


def _write(directory: str) -> None:
    location = savepoint_location(directory, 7)
    keyed = {}
    for index in range(2):
        owned = key_group_range_for_operator(128, 2, index)
        backend = HashMapKeyedStateBackend(128, owned, clock_ms=lambda: 1_000)
        count = backend.get_value_state("count")
        items = backend.get_list_state("items")
        seen = backend.get_map_state("seen", StateTtl(60_000))
        for key in range(20):
            if backend.key_hasher.key_group(key, 128) in owned:
                backend.current_key = key
                count.update(key * 10)
                items.add_all([key, key + 1])
                seen.put("k", key)
        encoded = encode_keyed_state(backend.snapshot(), owned)
        handle = location.write_state(f"keyed-{index}", encoded.data)
        keyed[index] = OperatorSubtaskState(
            managed_keyed_state=(
                KeyGroupsStateHandle(
                    KeyGroupRange(owned.start, owned.stop),
                    handle,
                    encoded.offsets,
                    encoded.state_meta,
                ),
            )
        )
    operator = {}
    for index in range(2):
        store = DefaultOperatorStateBackend()
        store.get_list_state(_Named("offsets")).add_all([index * 100, index * 100 + 1])
        store.get_union_list_state(_Named("seen-by-all")).add(f"subtask-{index}")
        store.get_broadcast_state(_Named("rules")).put("limit", 5)
        snapshot = store.snapshot()
        assert snapshot is not None
        handle = location.write_state(f"operator-{index}", snapshot.data)
        operator[index] = OperatorSubtaskState(
            managed_operator_state=(OperatorStateHandle(handle, snapshot.partitions),)
        )
    write_savepoint_metadata(
        directory,
        CheckpointMetadata(
            JobId("f" * 32),
            7,
            1,
            2,
            CheckpointType.SAVEPOINT,
            {
                KEYED: OperatorState(KEYED, 2, 128, keyed, uid="counter"),
                RULES: OperatorState(RULES, 2, 128, operator),
            },
        ),
    )


def test_reads_every_kind_of_state_as_python_objects(tmp_path):
    directory = str(tmp_path / "savepoint-ffffff-1")
    _write(directory)
    sp = read_savepoint(directory)

    counter = sp.operator("counter")
    assert counter.keyed_states == {"count": "VALUE", "items": "LIST", "seen": "MAP"}
    assert counter.parallelism == 2
    assert dict(sp.keyed_state("counter", "count")) == {k: k * 10 for k in range(20)}
    assert dict(sp.keyed_state("counter", "items")) == {k: [k, k + 1] for k in range(20)}
    # A TTL state's values without their timestamps.
    assert dict(sp.keyed_state("counter", "seen")) == {k: {"k": k} for k in range(20)}

    rules = sp.operator(str(RULES))  # no uid: found by its operator id
    assert rules.uid == ""
    assert rules.operator_states == {
        "offsets": "LIST",
        "seen-by-all": "UNION_LIST",
        "rules": "BROADCAST",
    }
    assert sp.list_state(str(RULES), "offsets") == [0, 1, 100, 101]
    assert sp.union_list_state(str(RULES), "seen-by-all") == ["subtask-0", "subtask-1"]
    assert sp.broadcast_state(str(RULES), "rules") == {"limit": 5}

    summary = sp.describe()
    assert "Savepoint 7 of job" in summary
    assert "uid 'counter': parallelism 2, max parallelism 128" in summary
    assert "operator state 'rules': BROADCAST" in summary


def test_missing_operators_states_and_paths_are_named(tmp_path):
    directory = str(tmp_path / "savepoint-ffffff-1")
    _write(directory)
    sp = read_savepoint(directory)
    with pytest.raises(KeyError, match="no operator with uid 'nope'.*counter"):
        sp.keyed_state("nope", "count")
    with pytest.raises(KeyError, match="no keyed state 'total'.*count, items, seen"):
        sp.keyed_state("counter", "total")
    with pytest.raises(KeyError, match="no operator state 'x'"):
        sp.list_state(str(RULES), "x")
    with pytest.raises(CheckpointError, match="the path does not exist"):
        read_savepoint(str(tmp_path / "nowhere"))
    (tmp_path / "empty").mkdir()
    with pytest.raises(CheckpointError, match="has no _metadata file"):
        read_savepoint(str(tmp_path / "empty"))


def test_dispose_removes_a_savepoint(tmp_path):
    directory = str(tmp_path / "savepoint-ffffff-1")
    _write(directory)
    dispose_savepoint(directory)
    assert not (tmp_path / "savepoint-ffffff-1").exists()


def test_the_savepoint_directory_comes_from_the_argument_or_either_key():
    assert savepoint_parent_directory({}, "/given") == "/given"
    assert savepoint_parent_directory({"state.savepoints.dir": "/old"}, None) == "/old"
    conf = {"execution.checkpointing.savepoint-dir": "/new", "state.savepoints.dir": "/old"}
    assert savepoint_parent_directory(conf, None) == "/new"
    with pytest.raises(ConfigurationError, match="execution.checkpointing.savepoint-dir"):
        savepoint_parent_directory({}, None)
