"""The hashmap backend's keyed state kinds, with PyFlink's semantics, per current key."""

import pytest

from weir.taskmanager.state.backend import StateAccessError
from weir.taskmanager.state.hashmap import HashMapKeyedStateBackend


class Average:
    def create_accumulator(self):
        return 0, 0

    def add(self, value, accumulator):
        return accumulator[0] + value, accumulator[1] + 1

    def get_result(self, accumulator):
        return accumulator[0] / accumulator[1]


@pytest.fixture
def backend():
    return HashMapKeyedStateBackend(128, range(128))


def test_list_state_is_per_key_and_update_replaces(backend):
    state = backend.get_list_state("l")
    backend.current_key = "a"
    assert state.get() == []
    state.add(1)
    state.add_all([2, 3])
    backend.current_key = "b"
    state.add(9)
    backend.current_key = "a"
    assert list(state) == [1, 2, 3]
    state.update([7])
    assert state.get() == [7]
    state.update([])
    assert state.get() == []
    with pytest.raises(ValueError, match="cannot add None"):
        state.add(None)
    backend.current_key = "b"
    assert state.get() == [9]


def test_map_state_operations(backend):
    state = backend.get_map_state("m")
    backend.current_key = 1
    assert state.is_empty() and state.get("x") is None
    state.put("x", 1)
    state["y"] = 2
    state.put_all({"z": 3})
    assert sorted(state.items()) == [("x", 1), ("y", 2), ("z", 3)]
    assert "y" in state and state.contains("z") and state["x"] == 1
    del state["y"]
    state.remove("missing")
    assert sorted(state) == ["x", "z"] and sorted(state.values()) == [1, 3]
    backend.current_key = 2
    assert state.is_empty()


def test_reducing_and_aggregating_state(backend):
    maximum = backend.get_reducing_state("max", max)
    average = backend.get_aggregating_state("avg", Average())
    backend.current_key = "k"
    assert maximum.get() is None and average.get() is None
    for v in (3, 9, 4):
        maximum.add(v)
        average.add(v)
    assert maximum.get() == 9
    assert average.get() == pytest.approx(16 / 3)
    average.add(None)  # PyFlink: adding None clears an AggregatingState
    assert average.get() is None
    maximum.clear()
    assert maximum.get() is None


def test_a_name_is_one_kind_of_state(backend):
    backend.get_value_state("s")
    with pytest.raises(StateAccessError, match="already registered as a ValueState"):
        backend.get_list_state("s")


def test_snapshot_holds_every_kind_by_key_group(backend):
    backend.get_list_state("l")
    backend.get_map_state("m")
    backend.current_key = "a"
    backend.get_list_state("l").add(1)
    backend.get_map_state("m").put("k", "v")
    snapshot = backend.snapshot()
    groups = {
        name: [k for g in by_group.values() for k in g]
        for name, by_group in snapshot.states.items()
    }
    assert groups == {"l": ["a"], "m": ["a"]}


def test_an_empty_list_state_get_is_true_as_pyflinks(backend):
    state = backend.get_list_state("l")
    backend.current_key = "a"
    contents = state.get()
    assert contents == [] and bool(contents)  # PyFlink's iterable is always true
    state.add(1)
    assert state.get() == [1] and contents == []  # a copy, not a view


def test_map_state_iterators_read_once_and_remove_what_they_returned(backend):
    state = backend.get_map_state("m")
    backend.current_key = "a"
    for k in (1, 2, 3, 4):
        state.put(k, k * 10)
    keys = state.keys()
    assert sorted(keys) == [1, 2, 3, 4]
    assert list(keys) == []  # read once, as PyFlink's
    it = state.items()
    for k, _ in it:
        if k % 2 == 0:
            it.remove()
    assert sorted(state.items()) == [(1, 10), (3, 30)]
    values = state.values()
    with pytest.raises(RuntimeError, match="call next"):
        values.remove()
    assert next(values) in (10, 30)
    values.remove()
    with pytest.raises(RuntimeError):
        values.remove()  # each entry once
    assert len(list(state.keys())) == 1
