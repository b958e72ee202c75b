"""The state each subtask restores: its own keyed state and source position, its own
list and broadcast state, and every subtask's union list state; at another parallelism,
keyed state by key group, every old subtask's source splits to each new subtask (which
takes its round-robin share), and what cannot be rescaled refused by name."""

from __future__ import annotations

import dataclasses
import re

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from weir.core.checkpoint import (
    KeyGroupRange,
    KeyGroupsStateHandle,
    OperatorState,
    OperatorStateDistributionMode,
    OperatorStateHandle,
    OperatorStatePartition,
    OperatorSubtaskState,
    StreamStateHandle,
    decode_task_state,
)
from weir.core.errors import StateMigrationError
from weir.core.ids import JobVertexId, OperatorId
from weir.core.job_graph import JobVertex, OperatorDescriptor, OperatorKind
from weir.core.source import assign_splits
from weir.jobmanager.checkpoint.state_assignment import assign_subtask_states, check_restorable

OP = OperatorId("a" * 32)
OTHER = OperatorId("b" * 32)
SPLIT = OperatorStateDistributionMode.SPLIT_DISTRIBUTE
UNION = OperatorStateDistributionMode.UNION
BROADCAST = OperatorStateDistributionMode.BROADCAST


def _vertex(parallelism: int) -> JobVertex:
    return JobVertex(
        JobVertexId("v" * 32),
        "map",
        parallelism,
        128,
        (
            OperatorDescriptor(OP, "map", OperatorKind.MAP, b""),
            OperatorDescriptor(OTHER, "sink", OperatorKind.SINK, b""),
        ),
    )


def _file(name: str) -> StreamStateHandle:
    return StreamStateHandle(f"file:///chk-3/{name}", 10, 0)


def _operator_handle(i: int) -> OperatorStateHandle:
    return OperatorStateHandle(
        _file(f"operator-{i}"),
        (
            OperatorStatePartition("list", SPLIT, (0,)),
            OperatorStatePartition("union", UNION, (4,)),
            OperatorStatePartition("rules", BROADCAST, (8,)),
        ),
    )


def test_union_state_reaches_every_subtask_and_the_rest_stays_with_its_own():
    keyed = {
        i: KeyGroupsStateHandle(
            KeyGroupRange(64 * i, 64 * (i + 1)), _file(f"keyed-{i}"), key_placement="pickled"
        )
        for i in range(2)
    }
    state = OperatorState(
        OP,
        2,
        128,
        {
            i: OperatorSubtaskState(
                managed_keyed_state=(keyed[i],), managed_operator_state=(_operator_handle(i),)
            )
            for i in range(2)
        },
    )
    restored = assign_subtask_states([_vertex(2)], {OP: state})

    for i in range(2):
        own = decode_task_state(restored[("v" * 32, i)]).subtask_states[OP]
        assert own.managed_keyed_state == (keyed[i],)
        by_stream = {h.handle.path: set(h.partitions) for h in own.managed_operator_state}
        assert by_stream[f"file:///chk-3/operator-{i}"] == set(_operator_handle(i).partitions)
        other = 1 - i
        assert by_stream[f"file:///chk-3/operator-{other}"] == {
            OperatorStatePartition("union", UNION, (4,))
        }


def test_a_subtask_without_state_of_its_own_still_gets_the_union_state():
    state = OperatorState(
        OP, 2, 128, {0: OperatorSubtaskState(managed_operator_state=(_operator_handle(0),))}
    )
    restored = assign_subtask_states([_vertex(2)], {OP: state})

    second = decode_task_state(restored[("v" * 32, 1)]).subtask_states[OP]
    assert second.managed_operator_state == (
        OperatorStateHandle(_file("operator-0"), (OperatorStatePartition("union", UNION, (4,)),)),
    )


def test_subtasks_and_operators_without_state_are_left_out():
    state = OperatorState(
        OP,
        2,
        128,
        {0: OperatorSubtaskState(source_reader_state=(_file("source-0"),))},
    )
    restored = assign_subtask_states([_vertex(2)], {OP: state})

    assert list(restored) == [("v" * 32, 0)]
    assert list(decode_task_state(restored[("v" * 32, 0)]).subtask_states) == [OP]


def _keyed_state(
    parallelism: int, key_placement: str = "pickled", **extra: object
) -> OperatorState:
    from weir.core.key_groups import key_group_range_for_operator

    subtasks = {}
    for i in range(parallelism):
        owned = key_group_range_for_operator(128, parallelism, i)
        handle = KeyGroupsStateHandle(
            KeyGroupRange(owned.start, owned.stop), _file(f"keyed-{i}"), key_placement=key_placement
        )
        subtasks[i] = OperatorSubtaskState(managed_keyed_state=(handle,), **extra)  # type: ignore[arg-type]
    return OperatorState(OP, parallelism, 128, subtasks)


@pytest.mark.parametrize(("old", "new"), [(2, 3), (3, 1), (1, 4), (4, 4)])
def test_keyed_state_goes_to_every_subtask_whose_key_groups_it_holds(old, new):
    from weir.core.key_groups import key_group_range_for_operator

    state = _keyed_state(old)
    restored = assign_subtask_states([_vertex(new)], {OP: state})

    covered = []
    for i in range(new):
        owned = key_group_range_for_operator(128, new, i)
        handles = decode_task_state(restored[("v" * 32, i)]).subtask_states[OP].managed_keyed_state
        assert handles, f"subtask {i} of {new} got no keyed state"
        for h in handles:
            assert h.key_groups.start < owned.stop and owned.start < h.key_groups.end
        # Every key group the subtask owns is in one of the handles it got.
        assert all(any(g in h.key_groups for h in handles) for g in owned)
        covered.extend(handles)
    assert {h.handle.path for h in covered} == {f"file:///chk-3/keyed-{i}" for i in range(old)}


@pytest.mark.parametrize(("old", "new"), [(2, 2), (2, 3)])
def test_keyed_state_recording_no_key_placement_goes_to_every_subtask(old, new):
    # Written before key placements were recorded: its keys may belong to other groups
    # now, which only the task, knowing the key type, can tell.
    state = _keyed_state(old, key_placement="")
    restored = assign_subtask_states([_vertex(new)], {OP: state})

    for i in range(new):
        handles = decode_task_state(restored[("v" * 32, i)]).subtask_states[OP].managed_keyed_state
        assert {h.handle.path for h in handles} == {f"file:///chk-3/keyed-{j}" for j in range(old)}


def test_an_opaque_source_position_cannot_move_to_another_parallelism():
    state = OperatorState(
        OP,
        2,
        128,
        {i: OperatorSubtaskState(source_reader_state=(_file(f"s{i}"),)) for i in range(2)},
        uid="numbers",
    )
    check_restorable([_vertex(2)], {OP: state}, "the savepoint")
    with pytest.raises(StateMigrationError) as refused:
        check_restorable([_vertex(3)], {OP: state}, "the savepoint")
    message = str(refused.value)
    assert "operator" in message and "(map)" in message
    assert re.search(r"parallelism 2 .* now runs at 3", message)
    assert "set_parallelism" in message and "snapshot_splits/restore_splits" in message


def _split_state(parallelism: int, finished: frozenset[int] = frozenset()) -> OperatorState:
    return OperatorState(
        OP,
        parallelism,
        128,
        {
            i: OperatorSubtaskState(source_split_state=(_file(f"splits-{i}"),))
            for i in range(parallelism)
            if i not in finished
        },
        finished_subtasks=finished,
    )


def test_source_splits_stay_with_their_subtask_at_the_same_parallelism():
    restored = assign_subtask_states([_vertex(2)], {OP: _split_state(2)})
    for i in range(2):
        own = decode_task_state(restored[("v" * 32, i)]).subtask_states[OP]
        assert own.source_split_state == (_file(f"splits-{i}"),)
        assert not own.source_splits_rescaled


@pytest.mark.parametrize(("old", "new"), [(2, 3), (2, 1), (3, 2), (1, 4)])
def test_at_another_parallelism_every_subtask_gets_every_split_list_in_order(old, new):
    state = _split_state(old)
    check_restorable([_vertex(new)], {OP: state}, "the savepoint")
    restored = assign_subtask_states([_vertex(new)], {OP: state})
    for i in range(new):
        mine = decode_task_state(restored[("v" * 32, i)]).subtask_states[OP]
        assert mine.source_split_state == tuple(_file(f"splits-{j}") for j in range(old))
        assert mine.source_splits_rescaled


@settings(max_examples=200, deadline=None)
@given(
    sizes=st.lists(st.integers(0, 6), min_size=1, max_size=5),
    new=st.integers(1, 6),
    finished=st.sets(st.integers(0, 4)),
)
def test_every_split_is_read_by_exactly_one_new_subtask(
    sizes: list[int], new: int, finished: set[int]
) -> None:
    """What each new subtask restores (``assign_subtask_states``, then its share by
    ``assign_splits`` as ``SourceOperator.open`` takes it): every split of the old
    subtasks that had not finished, exactly once; finished subtasks' splits are done."""
    old = len(sizes)
    done = frozenset(i for i in finished if i < old)
    contents = {
        _file(f"splits-{i}").path: [(i, j) for j in range(size)] for i, size in enumerate(sizes)
    }
    state = _split_state(old, done)
    check_restorable([_vertex(new)], {OP: state}, "the savepoint")
    restored = assign_subtask_states([_vertex(new)], {OP: state})

    read = []
    for index in range(new):
        task_state = restored.get(("v" * 32, index))
        if task_state is None:
            # A subtask that had finished, at the same parallelism, or any subtask of a
            # fully finished operator (the scheduler deploys both as finished).
            assert (old == new and index in done) or len(done) == old
            continue
        mine = decode_task_state(task_state).subtask_states[OP]
        lists = [contents[h.path] for h in mine.source_split_state]
        if mine.source_splits_rescaled:
            read += assign_splits(lists, index, new)
        else:
            assert old == new
            read += [split for splits in lists for split in splits]
    expected = [(i, j) for i, size in enumerate(sizes) if i not in done for j in range(size)]
    assert sorted(read) == expected


def test_another_max_parallelism_is_refused_naming_both():
    state = dataclasses.replace(_keyed_state(2), max_parallelism=256)
    with pytest.raises(StateMigrationError, match=r"max parallelism 128.*max parallelism 256"):
        check_restorable([_vertex(2)], {OP: state}, "the savepoint")


def test_in_flight_data_cannot_be_rescaled():
    from weir.core.checkpoint import InputChannelStateHandle

    state = _keyed_state(2, input_channel_state=(InputChannelStateHandle(0, 0, _file("in")),))
    check_restorable([_vertex(2)], {OP: state}, "chk-4")
    with pytest.raises(StateMigrationError, match="in-flight data of an unaligned checkpoint"):
        check_restorable([_vertex(3)], {OP: state}, "chk-4")
