"""Keyed state backends of a task: the abstraction and its implementations."""

from weir.taskmanager.state.backend import (
    KeyedStateBackend,
    KeyedStateSnapshot,
    StateAccessError,
    ValueState,
)
from weir.taskmanager.state.hashmap import HashMapKeyedStateBackend
from weir.taskmanager.state.heap_states import HeapValueState

__all__ = [
    "HashMapKeyedStateBackend",
    "HeapValueState",
    "KeyedStateBackend",
    "KeyedStateSnapshot",
    "StateAccessError",
    "ValueState",
]
