"""Reads of queryable state run on the task's thread, through its mailbox, and change
nothing: not the value, not the backend's current key."""

from __future__ import annotations

import pickle
import threading

import pytest

from weir.core.errors import UnknownKvStateIdError
from weir.taskmanager.mailbox import Mailbox, MailboxClosedError
from weir.taskmanager.queryablestate import KvStateEntry, KvStateRegistration, KvStateRegistry
from weir.taskmanager.state import HashMapKeyedStateBackend


def _entry(backend, read, mailbox: Mailbox, attempt: str = "a0") -> KvStateEntry:
    registration = KvStateRegistration(
        job_id="job",
        attempt_id=attempt,
        operator_id="op",
        registration_name="counts",
        subtask_index=0,
        key_groups=backend.key_group_range,
        num_key_groups=backend.max_parallelism,
        key_type=backend.key_hasher.key_type,
        kv_state_id=KvStateRegistry.new_kv_state_id(),
        server_address="127.0.0.1:1",
    )
    return KvStateEntry(registration, backend, read, mailbox.put)


class TestKvStateEntry:
    def test_a_read_waits_for_the_task_thread_and_restores_the_current_key(self):
        backend = HashMapKeyedStateBackend(128, range(128))
        counts = backend.get_value_state("counts")
        backend.current_key = "a"
        counts.update(3)
        backend.current_key = "b"
        counts.update(5)
        mailbox = Mailbox()
        entry = _entry(backend, counts.value, mailbox)

        future = entry.read_on_task_thread("a")
        assert not future.done()  # nothing runs until the task thread serves its mailbox
        reader = threading.current_thread()
        ran_on: list[threading.Thread] = []
        mailbox.put(lambda: ran_on.append(threading.current_thread()))
        assert mailbox.run_pending() == 2
        assert pickle.loads(future.result(timeout=0)) == 3
        assert ran_on == [reader]
        assert backend.current_key == "b" and counts.value() == 5
        missing = entry.read_on_task_thread("never")
        mailbox.run_pending()
        assert missing.result(timeout=0) is None

    def test_empty_lists_and_maps_read_as_no_state(self):
        backend = HashMapKeyedStateBackend(128, range(128))
        items = backend.get_list_state("items")
        backend.current_key = "a"
        items.add(1)
        items.update([])
        mailbox = Mailbox()
        future = _entry(backend, lambda: list(items.get()), mailbox).read_on_task_thread("a")
        mailbox.run_pending()
        assert future.result(timeout=0) is None

    def test_an_ended_task_takes_no_more_reads(self):
        backend = HashMapKeyedStateBackend(128, range(128))
        mailbox = Mailbox()
        entry = _entry(backend, lambda: 1, mailbox)
        mailbox.close()
        with pytest.raises(MailboxClosedError):
            entry.read_on_task_thread("a")


class TestKvStateRegistry:
    def test_ids_are_forgotten_with_their_task(self):
        registry = KvStateRegistry()
        backend = HashMapKeyedStateBackend(128, range(128))
        entry = _entry(backend, lambda: 1, Mailbox(), attempt="a0")
        registry.register(entry)
        assert registry.lookup(entry.registration.kv_state_id) is entry
        registry.unregister_attempt("a0")
        with pytest.raises(UnknownKvStateIdError, match="ended"):
            registry.lookup(entry.registration.kv_state_id)
