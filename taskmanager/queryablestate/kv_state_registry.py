"""KvStateRegistry: the queryable states of this TaskManager's tasks, by kv state id
(Flink's ``KvStateRegistry``), and how one of them is read for one key.

Reads happen on the task's own thread. A query is handed to the task's mailbox and runs
between two batches, as a checkpoint trigger does: it sets the backend's current key,
reads through the state object the operator uses, puts the key back and serializes the
value, then the waiting server thread answers. Why not read from the server's thread:
the ``hashmap`` backend hands out the live Python objects (a ListState's list, a
MapState's dict) that the task mutates in place, and every state resolves against the
backend's single ``current_key``; reading concurrently would need a lock on every
record's state access, which the task thread must never pay. The mailbox costs the task
one lookup and one serialization per query, and nothing at all when nobody asks.
"""

from __future__ import annotations

import pickle
import threading
import uuid
from collections.abc import Callable
from concurrent.futures import Future
from dataclasses import dataclass
from typing import Any

from weir.core.canonical_keys import state_key
from weir.core.errors import UnknownKvStateIdError

Read = Callable[[], Any]
"""Reads the state for the backend's current key (task thread only)."""


@dataclass(frozen=True, slots=True)
class KvStateRegistration:
    """What the JobMaster is told of one registered queryable state."""

    job_id: str
    attempt_id: str
    operator_id: str
    registration_name: str
    subtask_index: int
    key_groups: range
    num_key_groups: int
    key_type: str
    kv_state_id: str
    server_address: str


@dataclass(frozen=True, slots=True)
class KvStateEntry:
    """One queryable state of one running task."""

    registration: KvStateRegistration
    backend: Any
    """The operator's KeyedStateBackend (``current_key``, ``key_group_of``)."""
    read: Read
    put_mail: Callable[[Callable[[], None]], None]
    """The task's ``Mailbox.put``: raises once the task has ended."""

    def read_on_task_thread(self, key: Any) -> Future[bytes | None]:
        """Queue the read of ``key``; the future holds the pickled value, or None when
        the state holds nothing for the key. Never changes the state."""
        result: Future[bytes | None] = Future()

        def action() -> None:
            if not result.set_running_or_notify_cancel():
                return  # the server stopped waiting
            backend = self.backend
            previous = backend.current_key
            backend.current_key = state_key(key)  # as the operator's key selector gives it
            try:
                value = self.read()
                if isinstance(value, (list, dict)) and not value:
                    value = None
                result.set_result(None if value is None else pickle.dumps(value, protocol=5))
            except BaseException as exc:  # the server thread reports it to the client
                result.set_exception(exc)
            finally:
                backend.current_key = previous

        self.put_mail(action)
        return result


class KvStateRegistry:
    """Thread-safe: tasks register on their threads, the server looks up on its own."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._entries: dict[str, KvStateEntry] = {}

    @staticmethod
    def new_kv_state_id() -> str:
        return uuid.uuid4().hex

    def register(self, entry: KvStateEntry) -> None:
        with self._lock:
            self._entries[entry.registration.kv_state_id] = entry

    def unregister_attempt(self, attempt_id: str) -> None:
        """Forget every state of the ended task ``attempt_id``."""
        with self._lock:
            for kv_state_id in [
                k for k, e in self._entries.items() if e.registration.attempt_id == attempt_id
            ]:
                del self._entries[kv_state_id]

    def lookup(self, kv_state_id: str) -> KvStateEntry:
        with self._lock:
            entry = self._entries.get(kv_state_id)
        if entry is None:
            msg = (
                f"this TaskManager holds no queryable state with id {kv_state_id}: its task "
                "has ended (the job may be restarting); ask again"
            )
            raise UnknownKvStateIdError(msg)
        return entry

    def __len__(self) -> int:
        with self._lock:
            return len(self._entries)
