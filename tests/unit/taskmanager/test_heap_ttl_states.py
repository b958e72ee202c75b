"""The hashmap backend's states with a TTL, on a fake processing-time clock (Flink's
state TTL semantics: per value, per list element, per map entry)."""

import pytest

from weir.common.time import Time
from weir.core.errors import StateMigrationError
from weir.core.state_ttl import StateTtl
from weir.datastream.state import (
    ListStateDescriptor,
    MapStateDescriptor,
    StateTtlConfig,
    ValueStateDescriptor,
)
from weir.taskmanager.runtime_context import StreamingRuntimeContext
from weir.taskmanager.state.backend import StateAccessError
from weir.taskmanager.state.hashmap import HashMapKeyedStateBackend
from weir.taskmanager.state.heap_states import (
    HeapAggregatingState,
    HeapListState,
    HeapMapState,
    HeapReducingState,
    HeapValueState,
)


class FakeClock:
    def __init__(self):
        self.now = 1_000

    def __call__(self):
        return self.now


class Sum:
    def create_accumulator(self):
        return 0

    def add(self, value, accumulator):
        return accumulator + value

    def get_result(self, accumulator):
        return accumulator


TTL = StateTtl(ttl_ms=100)
ON_READ = StateTtl(ttl_ms=100, update_on_read=True)
RETURN_EXPIRED = StateTtl(ttl_ms=100, return_expired=True)


@pytest.fixture
def clock():
    return FakeClock()


@pytest.fixture
def backend(clock):
    b = HashMapKeyedStateBackend(128, range(128), clock_ms=clock)
    b.current_key = "k"
    return b


class TestValueState:
    def test_expires_ttl_after_the_last_write(self, backend, clock):
        state = backend.get_value_state("v", TTL)
        state.update(1)
        clock.now += 99
        assert state.value() == 1
        state.update(2)  # a write restamps
        clock.now += 99
        assert state.value() == 2
        clock.now += 1
        assert state.value() is None

    def test_a_read_does_not_extend_it_on_create_and_write(self, backend, clock):
        state = backend.get_value_state("v", TTL)
        state.update(1)
        clock.now += 60
        assert state.value() == 1
        clock.now += 40
        assert state.value() is None

    def test_a_read_extends_it_on_read_and_write(self, backend, clock):
        state = backend.get_value_state("v", ON_READ)
        state.update(1)
        clock.now += 60
        assert state.value() == 1
        clock.now += 60
        assert state.value() == 1
        clock.now += 100
        assert state.value() is None

    def test_an_expired_read_removes_the_value(self, backend, clock):
        state = backend.get_value_state("v", TTL)
        state.update(1)
        clock.now += 100
        assert state.value() is None
        assert backend.snapshot().states["_weir_ttl_v"] == {}

    def test_return_expired_if_not_cleaned_up_returns_it_once(self, backend, clock):
        state = backend.get_value_state("v", RETURN_EXPIRED)
        state.update(1)
        clock.now += 500
        assert state.value() == 1  # expired but still stored
        assert state.value() is None  # that read cleaned it up

    def test_keys_expire_independently(self, backend, clock):
        state = backend.get_value_state("v", TTL)
        state.update("a")
        clock.now += 50
        backend.current_key = "other"
        state.update("b")
        clock.now += 50
        assert state.value() == "b"
        backend.current_key = "k"
        assert state.value() is None


class TestListState:
    def test_elements_expire_one_by_one(self, backend, clock):
        state = backend.get_list_state("l", TTL)
        state.add(1)
        clock.now += 50
        state.add_all([2, 3])
        clock.now += 50
        assert state.get() == [2, 3]
        clock.now += 50
        assert state.get() == []
        assert list(state) == []

    def test_update_restamps_every_element(self, backend, clock):
        state = backend.get_list_state("l", TTL)
        state.add(1)
        clock.now += 90
        state.update([4, 5])
        clock.now += 90
        assert state.get() == [4, 5]

    def test_read_refreshes_on_read_and_write(self, backend, clock):
        state = backend.get_list_state("l", ON_READ)
        state.add(1)
        clock.now += 90
        assert state.get() == [1]
        clock.now += 90
        assert state.get() == [1]
        clock.now += 100
        assert state.get() == []

    def test_return_expired_shows_expired_elements_until_cleaned(self, backend, clock):
        state = backend.get_list_state("l", RETURN_EXPIRED)
        state.add(1)
        clock.now += 100
        state.add(2)
        assert state.get() == [1, 2]
        assert state.get() == [2]

    def test_cannot_add_none(self, backend):
        with pytest.raises(ValueError, match="cannot add None"):
            backend.get_list_state("l", TTL).add(None)


class TestMapState:
    def test_entries_expire_one_by_one(self, backend, clock):
        state = backend.get_map_state("m", TTL)
        state.put("a", 1)
        clock.now += 50
        state.put_all({"b": 2})
        clock.now += 50
        assert state.get("a") is None
        assert not state.contains("a")
        assert list(state.items()) == [("b", 2)]
        assert list(state.keys()) == ["b"] and list(state.values()) == [2]
        assert not state.is_empty()
        clock.now += 50
        assert state.is_empty()
        assert backend.snapshot().states["_weir_ttl_m"] == {}

    def test_none_values_are_present(self, backend):
        state = backend.get_map_state("m", TTL)
        state.put("a", None)
        assert "a" in state and list(state.items()) == [("a", None)]

    def test_get_refreshes_only_its_entry_on_read_and_write(self, backend, clock):
        state = backend.get_map_state("m", ON_READ)
        state.put_all({"a": 1, "b": 2})
        clock.now += 90
        assert state["a"] == 1
        clock.now += 90
        assert sorted(state) == ["a"]

    def test_iteration_refreshes_on_read_and_write(self, backend, clock):
        state = backend.get_map_state("m", ON_READ)
        state.put("a", 1)
        clock.now += 90
        assert list(state.items()) == [("a", 1)]
        clock.now += 90
        assert state.get("a") == 1

    def test_return_expired_shows_an_expired_entry_once(self, backend, clock):
        state = backend.get_map_state("m", RETURN_EXPIRED)
        state.put("a", 1)
        clock.now += 100
        assert state.get("a") == 1
        assert state.get("a") is None
        state.put("b", 2)
        clock.now += 100
        assert list(state.items()) == [("b", 2)]
        assert state.is_empty()

    def test_remove_and_clear(self, backend):
        state = backend.get_map_state("m", TTL)
        state.put_all({"a": 1, "b": 2})
        del state["a"]
        assert list(state.keys()) == ["b"]
        state.clear()
        assert state.is_empty()


class TestReducingAndAggregatingState:
    def test_reducing_state_folds_only_unexpired_values(self, backend, clock):
        state = backend.get_reducing_state("r", lambda a, b: a + b, TTL)
        state.add(1)
        state.add(2)
        clock.now += 99
        assert state.get() == 3
        state.add(10)  # restamps the sum
        clock.now += 99
        assert state.get() == 13
        clock.now += 1
        state.add(5)  # the expired 13 is not folded in
        assert state.get() == 5

    def test_reducing_state_folds_expired_values_with_return_expired(self, backend, clock):
        state = backend.get_reducing_state("r", lambda a, b: a + b, RETURN_EXPIRED)
        state.add(1)
        clock.now += 100
        state.add(2)
        assert state.get() == 3

    def test_aggregating_state_expires_its_accumulator(self, backend, clock):
        state = backend.get_aggregating_state("a", Sum(), ON_READ)
        state.add(4)
        clock.now += 90
        assert state.get() == 4
        clock.now += 90
        state.add(1)
        assert state.get() == 5
        clock.now += 100
        assert state.get() is None
        state.add(7)
        assert state.get() == 7
        state.add(None)
        assert state.get() is None


class TestSnapshots:
    def test_restore_keeps_the_last_access_times(self, backend, clock):
        backend.get_value_state("v", TTL).update(1)
        backend.get_list_state("l", TTL).add(1)
        backend.get_map_state("m", TTL).put("a", 1)
        snapshot = backend.snapshot()
        clock.now += 50
        restored = HashMapKeyedStateBackend(128, range(128), clock_ms=clock)
        restored.restore([snapshot])
        restored.current_key = "k"
        value = restored.get_value_state("v", TTL)
        listed = restored.get_list_state("l", TTL)
        mapped = restored.get_map_state("m", TTL)
        assert (value.value(), listed.get(), mapped.get("a")) == (1, [1], 1)
        clock.now += 50  # 100 ms after the writes before the snapshot, not after the restore
        assert (value.value(), listed.get(), mapped.get("a")) == (None, [], None)

    def test_full_snapshot_cleanup_leaves_expired_values_out(self, backend, clock):
        ttl = StateTtl(ttl_ms=100, cleanup_full_snapshot=True)
        value = backend.get_value_state("v", ttl)
        listed = backend.get_list_state("l", ttl)
        mapped = backend.get_map_state("m", ttl)
        value.update("old")
        listed.add("old")
        mapped.put("old", 1)
        backend.current_key = "j"
        value.update("old")
        clock.now += 60
        value.update("new")
        listed.add("new")
        mapped.put("new", 2)
        backend.current_key = "k"
        listed.add("new")
        mapped.put("new", 2)
        clock.now += 40
        states = backend.snapshot().states

        def entries(name):
            return {k: v for group in states[name].values() for k, v in group.items()}

        assert entries("_weir_ttl_v") == {"j": ("new", 1060)}
        assert entries("_weir_ttl_l") == {"j": [("new", 1060)], "k": [("new", 1060)]}
        assert entries("_weir_ttl_m") == {"j": {"new": (2, 1060)}, "k": {"new": (2, 1060)}}
        # The live state is untouched by the snapshot.
        assert backend.get_map_state("m", ttl).get("old") is None

    def test_without_full_snapshot_cleanup_expired_values_are_kept(self, backend, clock):
        backend.get_value_state("v", TTL).update(1)
        clock.now += 500
        states = backend.snapshot().states
        assert [dict(g) for g in states["_weir_ttl_v"].values()] == [{"k": (1, 1000)}]

    def test_restoring_plain_state_into_a_ttl_state_fails(self, backend):
        backend.get_value_state("v").update(1)
        restored = HashMapKeyedStateBackend(128, range(128))
        restored.restore([backend.snapshot()])
        with pytest.raises(StateMigrationError, match="taken without a TTL"):
            restored.get_value_state("v", TTL)

    def test_restoring_ttl_state_into_a_plain_state_fails(self, backend):
        backend.get_list_state("l", TTL).add(1)
        restored = HashMapKeyedStateBackend(128, range(128))
        restored.restore([backend.snapshot()])
        with pytest.raises(StateMigrationError, match="taken with a TTL"):
            restored.get_list_state("l")


class TestRegistration:
    def test_states_without_ttl_keep_their_plain_kinds(self, backend):
        assert type(backend.get_value_state("v")) is HeapValueState
        assert type(backend.get_list_state("l")) is HeapListState
        assert type(backend.get_map_state("m")) is HeapMapState
        assert type(backend.get_reducing_state("r", max)) is HeapReducingState
        assert type(backend.get_aggregating_state("a", Sum())) is HeapAggregatingState

    def test_states_without_ttl_never_expire(self, backend, clock):
        value = backend.get_value_state("v")
        value.update(1)
        clock.now += 10**9
        assert value.value() == 1
        assert backend.snapshot().states["v"] == {backend.key_group_of("k"): {"k": 1}}

    def test_one_name_cannot_be_both_with_and_without_ttl(self, backend):
        backend.get_value_state("v", TTL)
        with pytest.raises(StateAccessError, match="ValueState with a TTL; a ValueState needs"):
            backend.get_value_state("v")

    def test_one_name_cannot_take_two_ttls(self, backend):
        backend.get_value_state("v", TTL)
        assert backend.get_value_state("v", StateTtl(ttl_ms=100)) is not None
        with pytest.raises(StateAccessError, match="same StateTtlConfig"):
            backend.get_value_state("v", ON_READ)


def _context(backend):
    return StreamingRuntimeContext(
        task_name="t",
        task_name_with_subtasks="t (1/1)",
        number_of_parallel_subtasks=1,
        max_number_of_parallel_subtasks=128,
        index_of_this_subtask=0,
        attempt_number=0,
        job_parameters={},
        keyed_state_backend=backend,
    )


class TestRuntimeContext:
    def test_a_descriptor_with_ttl_gets_an_expiring_state(self, backend, clock):
        config = (
            StateTtlConfig.new_builder(Time.milliseconds(100))
            .update_ttl_on_read_and_write()
            .build()
        )
        descriptor = ValueStateDescriptor("v", None)
        descriptor.enable_time_to_live(config)
        state = _context(backend).get_state(descriptor)
        state.update(1)
        clock.now += 90
        assert state.value() == 1
        clock.now += 90
        assert state.value() == 1
        clock.now += 100
        assert state.value() is None

    def test_descriptors_without_ttl_get_the_plain_states(self, backend):
        context = _context(backend)
        assert type(context.get_state(ValueStateDescriptor("v", None))) is HeapValueState
        assert type(context.get_list_state(ListStateDescriptor("l", None))) is HeapListState
        assert type(context.get_map_state(MapStateDescriptor("m", None, None))) is HeapMapState

    def test_a_disabled_ttl_is_no_ttl(self, backend):
        config = (
            StateTtlConfig.new_builder(Time.seconds(1))
            .set_update_type(StateTtlConfig.UpdateType.Disabled)
            .build()
        )
        descriptor = ValueStateDescriptor("v", None)
        descriptor.enable_time_to_live(config)
        assert type(_context(backend).get_state(descriptor)) is HeapValueState
