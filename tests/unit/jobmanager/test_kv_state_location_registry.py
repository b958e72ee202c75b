"""KvStateLocationRegistry: which subtask serves which key groups of a queryable state."""

from __future__ import annotations

import pytest

from weir.core.errors import UnknownKvStateLocationError
from weir.jobmanager.kv_state_location_registry import (
    KvStateLocationEntry,
    KvStateLocationRegistry,
    KvStateRegistrationError,
)


def _entry(subtask: int, attempt: str, kv_state_id: str = "") -> KvStateLocationEntry:
    groups = range(0, 64) if subtask == 0 else range(64, 128)
    return KvStateLocationEntry(subtask, groups, kv_state_id or attempt, "127.0.0.1:1", attempt)


def _register(registry: KvStateLocationRegistry, operator: str, entry: KvStateLocationEntry):
    registry.notify_kv_state_registered(
        operator_id=operator,
        registration_name="counts",
        num_key_groups=128,
        key_type="String",
        entry=entry,
    )


class TestKvStateLocationRegistry:
    def test_subtasks_register_their_key_groups(self):
        registry = KvStateLocationRegistry("job")
        _register(registry, "op", _entry(0, "a0"))
        _register(registry, "op", _entry(1, "a1"))
        location = registry.location("counts")
        assert location.num_key_groups == 128 and location.key_type == "String"
        assert {e.key_groups for e in location.entries.values()} == {range(64), range(64, 128)}

    def test_a_newer_attempt_replaces_the_older_one(self):
        registry = KvStateLocationRegistry("job")
        _register(registry, "op", _entry(0, "a0"))
        _register(registry, "op", _entry(0, "b0"))
        assert [e.attempt_id for e in registry.location("counts").entries.values()] == ["b0"]

    def test_an_ended_attempt_serves_nothing_any_more(self):
        registry = KvStateLocationRegistry("job")
        _register(registry, "op", _entry(0, "a0"))
        _register(registry, "op", _entry(1, "a1"))
        registry.attempt_ended("a0")
        assert [e.subtask_index for e in registry.location("counts").entries.values()] == [1]

    def test_two_operators_cannot_share_a_name(self):
        registry = KvStateLocationRegistry("job")
        _register(registry, "op", _entry(0, "a0"))
        with pytest.raises(KvStateRegistrationError, match="name clash.*counts"):
            _register(registry, "other", _entry(0, "x0"))

    def test_an_unknown_name_says_which_are_known(self):
        registry = KvStateLocationRegistry("job")
        _register(registry, "op", _entry(0, "a0"))
        with pytest.raises(UnknownKvStateLocationError, match="'nope'.*registered: counts"):
            registry.location("nope")

    def test_a_location_is_a_copy(self):
        registry = KvStateLocationRegistry("job")
        _register(registry, "op", _entry(0, "a0"))
        location = registry.location("counts")
        registry.attempt_ended("a0")
        assert list(location.entries) == [0]
