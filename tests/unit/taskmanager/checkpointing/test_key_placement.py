"""Keyed state written before key placements were recorded (legacy): every key of a TUPLE
or ROW key type is put in the group Java's hashing gives it, from whichever old handle it
is in; the key None moves for every key type; state recording another key type is refused."""

from __future__ import annotations

import zlib

import pytest

from weir.common.typed_values import type_coder
from weir.common.typeinfo import Types
from weir.common.types import Row
from weir.core.checkpoint import (
    KeyGroupRange,
    KeyGroupsStateHandle,
    OperatorSubtaskState,
    StreamStateHandle,
    TaskStateSnapshot,
    encode_task_state,
)
from weir.core.errors import StateMigrationError
from weir.core.ids import OperatorId
from weir.core.key_groups import PyFlinkKeyHasher, key_group_range_for_operator
from weir.core.key_selectors import CodedKey, ConformedKeySelector
from weir.taskmanager.checkpointing.snapshot import encode_keyed_state
from weir.taskmanager.checkpointing.subtask_checkpoint import RestoredTaskState
from weir.taskmanager.state.backend import KeyedStateSnapshot, StateKind, StateMeta

OP = "op-keyed"
TUPLE = "Tuple<String, Integer>"
# Where the keys of the program were placed by their pickled bytes, and where
# Java's Tuple.hashCode places them (Flink 2.3): ('f', 6) moves from subtask 1 to 0.
KEYS = [(c, i) for c in "abcdef" for i in (1, 6)]
# Where None was placed before it was taken as a null field: murmurHash(62) % 128.
_LEGACY_NULL_GROUP = 33


def _legacy_handles(keys: list, parallelism: int, placed_by: str) -> tuple:
    """Handles as a job of ``parallelism`` wrote them, keys placed by ``placed_by``,
    recording no placement (as before placements were recorded)."""
    hasher = PyFlinkKeyHasher(placed_by)
    handles = []
    for i in range(parallelism):
        owned = key_group_range_for_operator(128, parallelism, i)
        by_group: dict[int, dict] = {}
        for k in keys:
            g = _LEGACY_NULL_GROUP if k is None else hasher.key_group(k, 128)
            if g in owned:
                by_group.setdefault(g, {})[k] = f"state of {k}"
        snapshot = KeyedStateSnapshot(
            128, {"count": by_group}, {"count": StateMeta(StateKind.VALUE)}
        )
        kg = encode_keyed_state(snapshot, owned)
        stream = StreamStateHandle(None, len(kg.data), zlib.crc32(kg.data), inline=kg.data)
        handles.append(
            KeyGroupsStateHandle(
                KeyGroupRange(owned.start, owned.stop), stream, kg.offsets, kg.state_meta
            )
        )
    return tuple(handles)


def _restored_keys(
    handles: tuple, key_type: str, parallelism: int, index: int, conform_key=None
) -> dict:
    task = TaskStateSnapshot({OperatorId(OP): OperatorSubtaskState(managed_keyed_state=handles)})
    restored = RestoredTaskState(encode_task_state(task), 128)
    owned = key_group_range_for_operator(128, parallelism, index)
    hasher = PyFlinkKeyHasher(key_type)
    canonical, native, legacy = restored.keyed_state(
        OP, hasher, owned, "operator counter", conform_key
    )
    assert not native and not legacy
    found = {}
    for snap in canonical:
        for group, entries in snap.states["count"].items():
            for key, value in entries.items():
                assert hasher.key_group(key, 128) == group
                found[key] = value
    return found


@pytest.mark.parametrize(("old", "new"), [(2, 2), (2, 3), (1, 2)])
def test_tuple_keys_placed_by_their_pickled_bytes_are_restored_where_java_places_them(old, new):
    handles = _legacy_handles(KEYS, old, "pickled")
    hasher = PyFlinkKeyHasher(TUPLE)
    for index in range(new):
        owned = key_group_range_for_operator(128, new, index)
        got = _restored_keys(handles, TUPLE, new, index)
        assert got == {k: f"state of {k}" for k in KEYS if hasher.key_group(k, 128) in owned}


def test_row_keys_too_named_as_the_key_selector_names_them_now():
    rows = [Row(c, i) for c in "xyz" for i in range(4)]
    handles = _legacy_handles(rows, 2, "pickled")
    key_type = Types.ROW([Types.STRING(), Types.INT()])
    selector = ConformedKeySelector(
        lambda v: v, CodedKey(type_coder(key_type, strict=False, what="key"))
    )
    hasher = PyFlinkKeyHasher("Row<String, Integer>")
    for index in range(2):
        got = _restored_keys(handles, "Row<String, Integer>", 2, index, selector.conform_key)
        owned = key_group_range_for_operator(128, 2, index)
        # Equal to the keys records bring now, which have the type's names.
        assert set(got) == {selector(r) for r in rows if hasher.key_group(r, 128) in owned}
        assert all(k.as_dict() == {"f0": k[0], "f1": k[1]} for k in got)


def test_the_key_none_moves_to_its_new_group_for_a_basic_key_type():
    # Before: None was hashed as a field of hashCode 0 (group of murmur(62), subtask 0 of
    # 2); as PyFlink, it is a null field now (murmur(31), subtask 1 of 2).
    keys = ["a", "b", None]
    handles = _legacy_handles(keys, 2, "String")
    assert _LEGACY_NULL_GROUP in handles[0].key_groups
    got = [_restored_keys(handles, "String", 2, i) for i in range(2)]
    hasher = PyFlinkKeyHasher("String")
    assert None in got[1] and None not in got[0]
    assert {k for g in got for k in g} == set(keys)
    assert all(hasher.key_group(k, 128) // 64 == i for i, g in enumerate(got) for k in g)


def test_state_placed_by_another_key_type_is_refused_naming_both():
    handles = tuple(
        KeyGroupsStateHandle(h.key_groups, h.handle, h.offsets, h.state_meta, "String")
        for h in _legacy_handles(["a"], 1, "String")
    )
    with pytest.raises(StateMigrationError, match=r"'String'.*'pickled'.*key_type"):
        _restored_keys(handles, "pickled", 1, 0)
