"""Operator state on the heap: list, union list and broadcast state, their snapshot
stream addressed element by element, restores of any subset of those elements, and the
read-only view of broadcast state."""

from __future__ import annotations

from collections import Counter

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from weir.common import Time, Types
from weir.core.checkpoint import (
    OperatorStateDistributionMode,
    OperatorStateHandle,
    OperatorStatePartition,
    StreamStateHandle,
    repartition_operator_state,
)
from weir.core.errors import CorruptCheckpointError, StateMigrationError
from weir.datastream.state import ListStateDescriptor, MapStateDescriptor, StateTtlConfig
from weir.taskmanager.state.backend import StateAccessError
from weir.taskmanager.state.operator_state import (
    RAW_FUNCTION_STATE,
    DefaultOperatorStateBackend,
    ReadOnlyBroadcastStateError,
)

SPLIT = OperatorStateDistributionMode.SPLIT_DISTRIBUTE
UNION = OperatorStateDistributionMode.UNION
BROADCAST = OperatorStateDistributionMode.BROADCAST

BUFFER = ListStateDescriptor("buffer", Types.PICKLED_BYTE_ARRAY())
OFFSETS = ListStateDescriptor("offsets", Types.LONG())
RULES = MapStateDescriptor("rules", Types.STRING(), Types.PICKLED_BYTE_ARRAY())

_elements = st.lists(
    st.one_of(
        st.integers(),
        st.text(max_size=8),
        st.tuples(st.integers(), st.text(max_size=4)),
        st.binary(max_size=8),
        st.frozensets(st.integers(), max_size=3),  # not marshal-able in a list: pickled
    ),
    max_size=12,
)


def _restored(*streams) -> DefaultOperatorStateBackend:
    backend = DefaultOperatorStateBackend()
    backend.restore([(s.data, s.partitions) for s in streams])
    return backend


class TestSnapshotAndRestore:
    @settings(max_examples=60, deadline=None)
    @given(_elements, _elements, st.dictionaries(st.text(max_size=4), st.integers(), max_size=6))
    def test_every_kind_round_trips(self, listed, unioned, rules):
        backend = DefaultOperatorStateBackend()
        backend.get_list_state(BUFFER).update(listed)
        backend.get_union_list_state(OFFSETS).update(unioned)
        backend.get_broadcast_state(RULES).put_all(rules)
        snapshot = backend.snapshot()

        restored = _restored(snapshot)
        assert restored.get_list_state(BUFFER).get() == listed
        assert restored.get_union_list_state(OFFSETS).get() == unioned
        assert dict(restored.get_broadcast_state(RULES).items()) == rules
        modes = {p.name: p.mode for p in snapshot.partitions}
        assert modes == {"buffer": SPLIT, "offsets": UNION, "rules": BROADCAST}

    @settings(max_examples=60, deadline=None)
    @given(_elements, st.data())
    def test_any_subset_of_offsets_restores_exactly_those_elements(self, listed, data):
        """What the JobMaster hands a subtask when list state is split: some of the
        offsets of another subtask's stream, read without the rest."""
        backend = DefaultOperatorStateBackend()
        backend.get_list_state(BUFFER).update(listed)
        snapshot = backend.snapshot()
        (partition,) = snapshot.partitions
        chosen = sorted(data.draw(st.sets(st.sampled_from(range(len(listed))))) if listed else [])
        subset = OperatorStatePartition(
            "buffer", SPLIT, tuple(partition.offsets[i] for i in chosen)
        )

        restored = DefaultOperatorStateBackend()
        restored.restore([(snapshot.data, [subset])])
        assert restored.get_list_state(BUFFER).get() == [listed[i] for i in chosen]

    def test_the_snapshot_is_a_copy(self):
        backend = DefaultOperatorStateBackend()
        rules = backend.get_broadcast_state(RULES)
        value = ["a"]
        rules.put("k", value)
        snapshot = backend.snapshot()
        value.append("changed later")
        rules.put("other", 1)
        assert dict(_restored(snapshot).get_broadcast_state(RULES).items()) == {"k": ["a"]}

    def test_nothing_registered_is_no_snapshot_and_empty_states_keep_their_mode(self):
        assert DefaultOperatorStateBackend().snapshot() is None
        backend = DefaultOperatorStateBackend()
        backend.get_union_list_state(OFFSETS)
        restored = _restored(backend.snapshot())
        with pytest.raises(StateMigrationError, match="get_union_list_state"):
            restored.get_list_state(OFFSETS)

    def test_list_states_of_several_subtasks_are_concatenated(self):
        streams = []
        for i in range(3):
            backend = DefaultOperatorStateBackend()
            backend.get_union_list_state(OFFSETS).update([i, i + 10])
            streams.append(backend.snapshot())
        assert _restored(*streams).get_union_list_state(OFFSETS).get() == [0, 10, 1, 11, 2, 12]

    def test_raw_function_state_is_one_element_and_not_carried_on(self):
        backend = DefaultOperatorStateBackend()
        backend.set_raw_function_state(b"position 7")
        snapshot = backend.snapshot()
        assert [p.name for p in snapshot.partitions] == [RAW_FUNCTION_STATE]

        restored = _restored(snapshot)
        assert restored.restored_raw_function_states() == [b"position 7"]
        # Only what the function hands over at the next checkpoint is stored then.
        assert restored.snapshot() is None

    def test_a_stream_cut_short_is_reported(self):
        backend = DefaultOperatorStateBackend()
        backend.get_list_state(BUFFER).update(["a" * 50])
        snapshot = backend.snapshot()
        with pytest.raises(CorruptCheckpointError, match="cut short"):
            DefaultOperatorStateBackend().restore([(snapshot.data[:20], snapshot.partitions)])


class TestStates:
    def test_each_get_returns_the_same_state_for_a_name(self):
        backend = DefaultOperatorStateBackend()
        assert backend.get_list_state(BUFFER) is backend.get_list_state(BUFFER)
        assert backend.get_broadcast_state(RULES) is backend.get_broadcast_state(RULES)

    def test_list_state_methods(self):
        state = DefaultOperatorStateBackend().get_list_state(BUFFER)
        state.add(1)
        state.add_all([2, 3])
        assert state.get() == [1, 2, 3] and list(state) == [1, 2, 3]
        state.get().append(4)  # a copy
        assert state.get() == [1, 2, 3]
        state.update([9])
        assert state.get() == [9]
        state.clear()
        assert state.get() == []
        with pytest.raises(ValueError, match="cannot add None"):
            state.add(None)
        with pytest.raises(ValueError, match="cannot add None"):
            state.update([1, None])

    def test_broadcast_state_methods(self):
        state = DefaultOperatorStateBackend().get_broadcast_state(RULES)
        assert state.is_empty()
        state.put("a", 1)
        state["b"] = 2
        state.put_all({"c": 3})
        assert state.get("a") == 1 and state["b"] == 2 and state.get("missing") is None
        assert "c" in state and state.contains("c") and not state.contains("d")
        assert sorted(state.keys()) == ["a", "b", "c"]
        assert sorted(state.values()) == [1, 2, 3]
        state.remove("a")
        del state["b"]
        assert list(state.items()) == [("c", 3)]
        state.clear()
        assert state.is_empty()

    def test_a_name_is_one_kind_of_state(self):
        backend = DefaultOperatorStateBackend()
        backend.get_list_state(BUFFER)
        with pytest.raises(StateMigrationError, match="is a list state, not a union list state"):
            backend.get_union_list_state(BUFFER)
        with pytest.raises(StateAccessError, match="a broadcast state needs another name"):
            backend.get_broadcast_state(MapStateDescriptor("buffer", Types.INT(), Types.INT()))
        backend.get_broadcast_state(RULES)
        with pytest.raises(StateAccessError, match="a list state needs another name"):
            backend.get_list_state(ListStateDescriptor("rules", Types.INT()))

    def test_operator_state_has_no_time_to_live(self):
        descriptor = ListStateDescriptor("expiring", Types.INT())
        descriptor.enable_time_to_live(StateTtlConfig.new_builder(Time.seconds(1)).build())
        with pytest.raises(StateAccessError, match="no time-to-live"):
            DefaultOperatorStateBackend().get_list_state(descriptor)

    def test_a_descriptor_is_needed(self):
        with pytest.raises(TypeError, match="state descriptor with a name"):
            DefaultOperatorStateBackend().get_broadcast_state("rules")


class TestReadOnlyBroadcastState:
    def _view(self):
        state = DefaultOperatorStateBackend().get_broadcast_state(RULES)
        state.put("a", 1)
        return state, state.read_only

    def test_reads_the_state_as_it_changes(self):
        state, view = self._view()
        assert view.get("a") == 1 and view["a"] == 1 and "a" in view and view.contains("a")
        state.put("b", 2)
        assert sorted(view.items()) == [("a", 1), ("b", 2)]
        assert sorted(view) == ["a", "b"] and sorted(view.values()) == [1, 2]
        assert not view.is_empty()

    @pytest.mark.parametrize(
        "write",
        [
            lambda v: v.put("x", 1),
            lambda v: v.put_all({"x": 1}),
            lambda v: v.remove("a"),
            lambda v: v.__setitem__("x", 1),
            lambda v: v.__delitem__("a"),
            lambda v: next(iter_ := v.items()) and iter_.remove(),
        ],
    )
    def test_writes_are_refused_saying_where_to_write(self, write):
        state, view = self._view()
        with pytest.raises(ReadOnlyBroadcastStateError) as info:
            write(view)
        assert "read-only in process_element()" in str(info.value)
        assert "process_broadcast_element()" in str(info.value)
        # Code written for PyFlink catches what PyFlink raises there.
        assert isinstance(info.value, AttributeError) and isinstance(info.value, TypeError)
        assert dict(state.items()) == {"a": 1}

    def test_has_no_writing_methods_as_pyflink_s(self):
        _, view = self._view()
        assert not hasattr(view, "put") and not hasattr(view, "put_all")
        with pytest.raises(AttributeError, match="no attribute 'nothing'"):
            view.nothing

    def test_clear_empties_the_state_as_in_pyflink(self):
        state, view = self._view()
        view.clear()
        assert state.is_empty()


@pytest.mark.parametrize(("old", "new"), [(2, 3), (3, 1), (1, 4)])
@settings(max_examples=40, deadline=None)
@given(data=st.data())
def test_restored_at_another_parallelism_through_the_handles(old, new, data):
    """Real snapshots of ``old`` subtasks, redistributed by mode as the JobMaster does and
    read back by ``new`` subtasks: list elements each once, union elements everywhere,
    one copy of the broadcast state each."""
    lists = [data.draw(_elements) for _ in range(old)]
    unions = [data.draw(_elements) for _ in range(old)]
    rules = data.draw(st.dictionaries(st.text(max_size=4), st.integers(), max_size=5))
    handles = []
    for i in range(old):
        backend = DefaultOperatorStateBackend()
        backend.get_list_state(BUFFER).update(lists[i])
        backend.get_union_list_state(OFFSETS).update(unions[i])
        backend.get_broadcast_state(RULES).put_all(rules)
        snapshot = backend.snapshot()
        stream = StreamStateHandle(None, len(snapshot.data), i, inline=snapshot.data)
        handles.append([OperatorStateHandle(stream, snapshot.partitions)])

    restored = []
    for assigned in repartition_operator_state(handles, new):
        backend = DefaultOperatorStateBackend()
        backend.restore([(h.handle.inline, h.partitions) for h in assigned])
        restored.append(backend)

    every_list_element = [e for elements in lists for e in elements]
    got = [e for b in restored for e in b.get_list_state(BUFFER).get()]
    assert got == every_list_element  # each once, and in order read subtask by subtask
    for backend in restored:
        assert Counter(backend.get_union_list_state(OFFSETS).get()) == Counter(
            e for elements in unions for e in elements
        )
        assert dict(backend.get_broadcast_state(RULES).items()) == rules
