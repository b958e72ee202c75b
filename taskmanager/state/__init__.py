"""Keyed state backends of a task: the abstraction and its implementations."""

from taskmanager.state.backend import (
    KeyedStateBackend,
    KeyedStateSnapshot,
    StateAccessError,
    ValueState,
)
from taskmanager.state.hashmap import HashMapKeyedStateBackend
from taskmanager.state.heap_states import HeapValueState

__all__ = [
    "HashMapKeyedStateBackend",
    "HeapValueState",
    "KeyedStateBackend",
    "KeyedStateSnapshot",
    "StateAccessError",
    "ValueState",
]
