"""Keyed state backends of a task: the abstraction and its implementations."""

from weir.taskmanager.state.backend import (
    KeyedStateBackend,
    KeyedStateSnapshot,
    NamespacedTable,
    StateAccessError,
    StateKind,
    StateMeta,
    ValueState,
)
from weir.taskmanager.state.hashmap import HashMapKeyedStateBackend
from weir.taskmanager.state.heap_states import HeapValueState
from weir.taskmanager.state.rocksdb import RocksDBKeyedStateBackend

__all__ = [
    "HashMapKeyedStateBackend",
    "HeapValueState",
    "KeyedStateBackend",
    "KeyedStateSnapshot",
    "NamespacedTable",
    "RocksDBKeyedStateBackend",
    "StateAccessError",
    "StateKind",
    "StateMeta",
    "ValueState",
]
