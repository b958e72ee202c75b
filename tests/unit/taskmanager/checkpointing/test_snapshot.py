"""Task snapshots: captured as bytes (later mutations do not leak in), restored exactly,
split by key group so a restore at another parallelism takes only its own groups."""

from __future__ import annotations

import copy

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from weir.core.key_groups import key_group_range_for_operator
from weir.datastream.connectors.collection import CollectionSource
from weir.datastream.connectors.number_seq import NumberSequenceSource
from weir.taskmanager.checkpointing import (
    OperatorStateRefs,
    SnapshotRestoreError,
    capture_task_snapshot,
    operators_of_chain,
    restore_task_snapshot,
    restored_channel_state,
)
from weir.taskmanager.checkpointing.snapshot import (
    decode_buffers,
    decode_keyed_state,
    encode_buffers,
    encode_keyed_state,
)
from weir.taskmanager.state.hashmap import HashMapKeyedStateBackend

M = 128


class Point:
    """Not a built-in type: marshal refuses it."""

    def __init__(self, x: int) -> None:
        self.x = x

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Point) and other.x == self.x

    __hash__ = None  # type: ignore[assignment]


class Ctx:
    def __init__(self, index: int = 0, parallelism: int = 1) -> None:
        self.index, self.parallelism = index, parallelism

    def get_index_of_this_subtask(self) -> int:
        return self.index

    def get_number_of_parallel_subtasks(self) -> int:
        return self.parallelism


Context = Ctx


def backend(parallelism: int = 1, index: int = 0) -> HashMapKeyedStateBackend:
    return HashMapKeyedStateBackend(M, key_group_range_for_operator(M, parallelism, index))


def put(b: HashMapKeyedStateBackend, name: str, key: object, value: object) -> None:
    b.current_key = key
    b.get_value_state(name).update(value)


def contents(b: HashMapKeyedStateBackend) -> dict[str, dict[object, object]]:
    snap = b.snapshot()
    return {
        name: {k: v for group in groups.values() for k, v in group.items()}
        for name, groups in snap.states.items()
        if groups
    }


class TestCaptureAndRestore:
    def test_state_mutated_after_the_snapshot_is_restored_as_at_the_snapshot(self) -> None:
        live = backend()
        for k in range(50):
            put(live, "sum", f"k{k}", k)
        put(live, "seen", ("a", 1), [1, 2])
        reader = NumberSequenceSource(1, 100).create_reader(Context())
        reader.poll_batch(30)
        ops = [OperatorStateRefs("src", None, reader), OperatorStateRefs("sum", live)]
        expected = copy.deepcopy(contents(live))

        snapshot = capture_task_snapshot(5, ops)

        # The task goes on: overwrite, delete, add, and mutate a value in place.
        put(live, "sum", "k1", 1000)
        put(live, "sum", "k2", None)
        put(live, "sum", "new", 1)
        live.current_key = ("a", 1)
        live.get_value_state("seen").value().append(3)
        reader.poll_batch(30)

        fresh = backend()
        fresh_reader = NumberSequenceSource(1, 100).create_reader(Context())
        restore_task_snapshot(
            [snapshot],
            [OperatorStateRefs("src", None, fresh_reader), OperatorStateRefs("sum", fresh)],
        )
        assert contents(fresh) == expected
        assert fresh_reader.poll_batch(5) == [31, 32, 33, 34, 35]
        assert snapshot.checkpoint_id == 5
        assert snapshot.operator("src").keyed_state is None  # type: ignore[union-attr]

    def test_restore_at_another_parallelism_takes_only_owned_key_groups(self) -> None:
        old = [backend(2, i) for i in range(2)]
        keys = [f"user-{i}" for i in range(300)]
        for key in keys:
            owner = 0 if old[0].key_group_of(key) in old[0].key_group_range else 1
            put(old[owner], "count", key, len(key))
        snaps = [capture_task_snapshot(1, [OperatorStateRefs("op", b)]) for b in old]
        new = [backend(3, i) for i in range(3)]
        for b in new:
            restore_task_snapshot(snaps, [OperatorStateRefs("op", b)])
        seen: dict[object, object] = {}
        for b in new:
            for key, value in contents(b).get("count", {}).items():
                assert b.key_group_of(key) in b.key_group_range
                seen[key] = value
        assert seen == {k: len(k) for k in keys}

    def test_key_groups_can_be_read_one_by_one(self) -> None:
        live = backend()
        put(live, "v", "x", 1)
        put(live, "v", "y", 2)
        encoded = encode_keyed_state(live.snapshot(), live.key_group_range)
        assert len(encoded.offsets) == M
        gx = live.key_group_of("x")
        only_x = decode_keyed_state(encoded, range(gx, gx + 1))
        assert only_x.states == {"v": {gx: {"x": 1}}}
        empty_group = next(g for g in range(M) if g not in (gx, live.key_group_of("y")))
        assert encoded.key_group_bytes(empty_group) == b""

    def test_values_that_marshal_refuses_go_through_pickle(self) -> None:
        live = backend()
        put(live, "p", 1, Point(3))
        snap = capture_task_snapshot(1, [OperatorStateRefs("op", live)])
        fresh = backend()
        restore_task_snapshot([snap], [OperatorStateRefs("op", fresh)])
        assert contents(fresh) == {"p": {1: Point(3)}}

    def test_channel_state_round_trips(self) -> None:
        snap = capture_task_snapshot(
            2, [], {(0, 1): [b"a", b""], (1, 0): []}, {(0, 3): [b"out" * 100]}
        )
        assert set(snap.input_channel_state) == {(0, 1)}  # empty lists are left out
        inputs, outputs = restored_channel_state(snap)
        assert inputs == {(0, 1): [b"a", b""]}
        assert outputs == {(0, 3): [b"out" * 100]}
        assert snap.in_flight_size == snap.state_size > 0

    def test_source_splits_for_a_reader_that_cannot_take_them_are_refused(self) -> None:
        reader = NumberSequenceSource(1, 10).create_reader(Context())
        snap = capture_task_snapshot(1, [OperatorStateRefs("src", None, reader)])
        assert snap.operators[0].source_splits
        with pytest.raises(SnapshotRestoreError, match="cannot restore splits"):
            restore_task_snapshot([snap], [OperatorStateRefs("src", None, object())])

    def test_an_opaque_source_position_for_a_reader_that_cannot_take_it_is_refused(
        self,
    ) -> None:
        reader = CollectionSource([1, 2, 3]).create_reader(Context())
        reader.poll_batch(1)
        snap = capture_task_snapshot(1, [OperatorStateRefs("src", None, reader)])
        assert not snap.operators[0].source_splits
        with pytest.raises(SnapshotRestoreError, match="cannot restore one"):
            restore_task_snapshot([snap], [OperatorStateRefs("src", None, object())])

    def test_source_splits_of_several_subtasks_are_dealt_round_robin(self) -> None:
        source = NumberSequenceSource(1, 40)
        snaps = []
        for index in range(2):
            reader = source.create_reader(Ctx(index, 2))
            reader.poll_batch(5)  # 1..5 and 21..25 read before the snapshot
            snaps.append(capture_task_snapshot(1, [OperatorStateRefs("src", None, reader)]))
        read: list[int] = []
        for index in range(3):
            fresh = source.create_reader(Ctx(index, 3))
            refs = [OperatorStateRefs("src", None, fresh)]
            restore_task_snapshot(snaps, refs, split_share=(index, 3))
            while (batch := fresh.poll_batch(100)) is not None:
                read += batch
        assert sorted(read) == [*range(6, 21), *range(26, 41)]

    def test_a_cut_short_channel_state_is_refused(self) -> None:
        blob = encode_buffers([b"abc", b"de"])
        with pytest.raises(SnapshotRestoreError, match="cut short"):
            decode_buffers(blob[:-1])
        with pytest.raises(SnapshotRestoreError, match="cut short"):
            decode_buffers(blob[:2])

    def test_operators_of_chain_reads_backends_and_readers(self) -> None:
        class Descriptor:
            operator_id = "op-1"

        class Setup:
            descriptor = Descriptor()
            keyed_state_backend = None

        class Op:
            setup = Setup()
            reader = "the reader"

        class Chain:
            operators = [Op()]

        assert operators_of_chain(Chain()) == [OperatorStateRefs("op-1", None, "the reader")]


@settings(max_examples=60, deadline=None)
@given(
    st.dictionaries(
        st.one_of(
            st.integers(), st.text(max_size=5), st.tuples(st.integers(), st.text(max_size=2))
        ),
        st.one_of(st.integers(), st.floats(allow_nan=False), st.text(), st.lists(st.integers())),
        max_size=40,
    )
)
def test_keyed_state_round_trips_for_any_keys_and_values(table: dict[object, object]) -> None:
    live = backend()
    for key, value in table.items():
        put(live, "s", key, value)
    fresh = backend()
    restore_task_snapshot(
        [capture_task_snapshot(1, [OperatorStateRefs("op", live)])],
        [OperatorStateRefs("op", fresh)],
    )
    assert contents(fresh).get("s", {}) == {k: v for k, v in table.items() if v is not None}
