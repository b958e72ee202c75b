"""Queryable state on a TaskManager: the registry of its tasks' queryable states and the
KvStateServer that reads them."""

from weir.taskmanager.queryablestate.kv_state_registry import (
    KvStateEntry,
    KvStateRegistration,
    KvStateRegistry,
)
from weir.taskmanager.queryablestate.kv_state_server import KvStateServer

__all__ = ["KvStateEntry", "KvStateRegistration", "KvStateRegistry", "KvStateServer"]
