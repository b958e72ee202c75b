"""The two forms of a user function's state hooks: a CheckpointedFunction with contexts
and operator state, and the raw ``snapshot_state(checkpoint_id) -> bytes`` form."""

from __future__ import annotations

import pytest

from weir.common import Types
from weir.core.errors import StateMigrationError
from weir.datastream.functions import CheckpointedFunction, MapFunction
from weir.datastream.state import ListStateDescriptor
from weir.taskmanager.operators.function_state import (
    has_state_hooks,
    initialize_function_state,
    snapshot_function_state,
)
from weir.taskmanager.state.operator_state import DefaultOperatorStateBackend

SEEN = ListStateDescriptor("seen", Types.INT())


class Counting(MapFunction, CheckpointedFunction):
    def __init__(self) -> None:
        self.seen: list[int] = []
        self.contexts: list[tuple[bool, int | None, object]] = []
        self.snapshots: list[tuple[int, int]] = []

    def initialize_state(self, context):
        self.state = context.get_operator_state_store().get_list_state(SEEN)
        self.contexts.append(
            (
                context.is_restored(),
                context.get_restored_checkpoint_id(),
                context.get_keyed_state_store(),
            )
        )
        self.seen = list(self.state.get())

    def snapshot_state(self, context):
        self.snapshots.append((context.get_checkpoint_id(), context.get_checkpoint_timestamp()))
        self.state.update(self.seen)

    def map(self, value):
        self.seen.append(value)
        return value


class RawPosition:
    """A raw-form function: bytes out, bytes (or None) in on restore only."""

    def __init__(self) -> None:
        self.position = 0
        self.initialized_with: list[bytes | None] = []

    def snapshot_state(self, checkpoint_id: int) -> bytes:
        return str(self.position).encode()

    def initialize_state(self, state: bytes | None) -> None:
        self.initialized_with.append(state)


def _restored_store(store: DefaultOperatorStateBackend) -> DefaultOperatorStateBackend:
    snapshot = store.snapshot()
    restored = DefaultOperatorStateBackend()
    if snapshot is not None:
        restored.restore([(snapshot.data, snapshot.partitions)])
    return restored


class TestCheckpointedFunction:
    def test_initialized_on_a_fresh_start_and_on_restore(self):
        function, store = Counting(), DefaultOperatorStateBackend()
        initialize_function_state(function, store, keyed_store="the keyed store")
        assert function.contexts == [(False, None, "the keyed store")]
        function.map(1)
        function.map(2)
        snapshot_function_state(function, store, 7, 1_000)
        assert function.snapshots == [(7, 1_000)]

        restored = Counting()
        initialize_function_state(
            restored, _restored_store(store), restored=True, restored_checkpoint_id=7
        )
        assert restored.contexts == [(True, 7, None)]
        assert restored.seen == [1, 2]

    def test_a_restore_without_a_checkpoint_id_has_none(self):
        function = Counting()
        initialize_function_state(function, DefaultOperatorStateBackend(), restored=True)
        assert function.contexts == [(True, None, None)]


class TestRawForm:
    def test_initialized_only_on_restore_with_its_bytes(self):
        function, store = RawPosition(), DefaultOperatorStateBackend()
        initialize_function_state(function, store)
        assert function.initialized_with == []  # it initializes itself on a fresh start
        function.position = 42
        snapshot_function_state(function, store, 1, 0)

        restored = RawPosition()
        initialize_function_state(restored, _restored_store(store), restored=True)
        assert restored.initialized_with == [b"42"]

    def test_a_restore_without_its_bytes_gives_none(self):
        function = RawPosition()
        initialize_function_state(function, DefaultOperatorStateBackend(), restored=True)
        assert function.initialized_with == [None]

    def test_the_bytes_of_several_subtasks_cannot_be_merged(self):
        streams = []
        for position in (1, 2):
            store = DefaultOperatorStateBackend()
            store.set_raw_function_state(str(position).encode())
            streams.append(store.snapshot())
        merged = DefaultOperatorStateBackend()
        merged.restore([(s.data, s.partitions) for s in streams])
        with pytest.raises(StateMigrationError, match="implement CheckpointedFunction") as info:
            initialize_function_state(RawPosition(), merged, restored=True, operator_name="Sink")
        assert "'Sink'" in str(info.value) and "2 subtasks" in str(info.value)


def test_functions_with_state_hooks():
    assert has_state_hooks(Counting()) and has_state_hooks(RawPosition())
    assert not has_state_hooks(lambda x: x)
