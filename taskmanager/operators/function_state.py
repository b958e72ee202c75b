"""Calling the state hooks of user functions, in either of their two forms (see
``weir.core.checkpointed_function``): a CheckpointedFunction gets contexts and keeps its
states in the operator's state backend; a raw-form function hands over bytes, which are
kept in that backend too, under a reserved name. Task thread only."""

from __future__ import annotations

from typing import Any

from weir.core.checkpointed_function import (
    CheckpointedFunction,
    FunctionInitializationContext,
    FunctionSnapshotContext,
)
from weir.core.errors import StateMigrationError
from weir.taskmanager.state.operator_state import DefaultOperatorStateBackend

__all__ = ["has_state_hooks", "initialize_function_state", "snapshot_function_state"]


class _InitializationContext(FunctionInitializationContext):
    __slots__ = ("_keyed", "_restored", "_restored_id", "_store")

    def __init__(
        self,
        store: DefaultOperatorStateBackend,
        keyed_store: Any,
        restored: bool,
        restored_checkpoint_id: int,
    ) -> None:
        self._store = store
        self._keyed = keyed_store
        self._restored = restored
        self._restored_id = restored_checkpoint_id

    def is_restored(self) -> bool:
        return self._restored

    def get_restored_checkpoint_id(self) -> int | None:
        return self._restored_id if self._restored and self._restored_id > 0 else None

    def get_operator_state_store(self) -> DefaultOperatorStateBackend:
        return self._store

    def get_keyed_state_store(self) -> Any:
        return self._keyed


class _SnapshotContext(FunctionSnapshotContext):
    __slots__ = ("_checkpoint_id", "_timestamp")

    def __init__(self, checkpoint_id: int, timestamp_ms: int) -> None:
        self._checkpoint_id = checkpoint_id
        self._timestamp = timestamp_ms

    def get_checkpoint_id(self) -> int:
        return self._checkpoint_id

    def get_checkpoint_timestamp(self) -> int:
        return self._timestamp


def has_state_hooks(function: Any) -> bool:
    """The function keeps state across checkpoints, in either form."""
    return isinstance(function, CheckpointedFunction) or callable(
        getattr(function, "snapshot_state", None)
    )


def initialize_function_state(
    function: Any,
    store: DefaultOperatorStateBackend,
    *,
    keyed_store: Any = None,
    restored: bool = False,
    restored_checkpoint_id: int = 0,
    operator_name: str = "",
) -> None:
    """Before ``open``: a CheckpointedFunction always initializes its state (fresh or
    restored); a raw-form function is given its bytes only when the task is restored."""
    if isinstance(function, CheckpointedFunction):
        function.initialize_state(
            _InitializationContext(store, keyed_store, restored, restored_checkpoint_id)
        )
        return
    initialize = getattr(function, "initialize_state", None)
    if not restored or not callable(initialize):
        return  # a raw-form function initializes itself on a fresh start
    states = store.restored_raw_function_states()
    if len(states) > 1:
        msg = (
            f"operator {operator_name!r}: the restored checkpoint gives this subtask the "
            f"raw state of {len(states)} subtasks, and bytes from snapshot_state("
            "checkpoint_id) cannot be merged; implement CheckpointedFunction and keep the "
            "state in list state to restore it at a lower parallelism"
        )
        raise StateMigrationError(msg)
    initialize(states[0] if states else None)


def snapshot_function_state(
    function: Any, store: DefaultOperatorStateBackend, checkpoint_id: int, timestamp_ms: int
) -> None:
    """Checkpoint ``checkpoint_id`` is being taken: a CheckpointedFunction updates its
    states; a raw-form function's bytes are put in ``store``. Call before the store is
    captured."""
    if isinstance(function, CheckpointedFunction):
        function.snapshot_state(_SnapshotContext(checkpoint_id, timestamp_ms))
        return
    snapshot = getattr(function, "snapshot_state", None)
    if callable(snapshot):
        store.set_raw_function_state(snapshot(checkpoint_id))
