"""Operator state redistribution by mode: list state split, union state copied to every
subtask, broadcast state one copy each; at 2 -> 3, 3 -> 1 and 1 -> 4 subtasks (and at
the same parallelism), for any mix of states."""

from __future__ import annotations

from collections import Counter

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from weir.core.checkpoint import (
    OperatorStateDistributionMode,
    OperatorStateHandle,
    OperatorStatePartition,
    StreamStateHandle,
    repartition_operator_state,
)

SPLIT = OperatorStateDistributionMode.SPLIT_DISTRIBUTE
UNION = OperatorStateDistributionMode.UNION
BROADCAST = OperatorStateDistributionMode.BROADCAST

_NAMES = ("a", "b", "c")


def _stream(subtask: int) -> StreamStateHandle:
    return StreamStateHandle(f"file:///chk-1/op-{subtask}-operator", 100, subtask)


@st.composite
def old_states(draw, parallelism: int):
    """What each of ``parallelism`` subtasks wrote: one stream each, holding some list
    states (elements at increasing offsets), union states and broadcast states."""
    modes = {name: draw(st.sampled_from([SPLIT, UNION, BROADCAST])) for name in _NAMES}
    present = draw(st.sets(st.sampled_from(_NAMES), min_size=1))
    subtasks = []
    for i in range(parallelism):
        offset = 0
        partitions = []
        for name in sorted(present):
            count = 1 if modes[name] is BROADCAST else draw(st.integers(0, 6))
            offsets = tuple(range(offset, offset + 10 * count, 10))
            offset += 10 * count
            partitions.append(OperatorStatePartition(name, modes[name], offsets))
        subtasks.append([OperatorStateHandle(_stream(i), tuple(partitions))])
    return subtasks


def _elements(handles, name: str) -> list[tuple[str | None, int]]:
    """(stream path, offset) of every element of ``name`` in ``handles``, in order."""
    return [
        (h.handle.path, offset)
        for h in handles
        for p in h.partitions
        if p.name == name
        for offset in p.offsets
    ]


def _modes(previous) -> dict[str, OperatorStateDistributionMode]:
    return {p.name: p.mode for handles in previous for h in handles for p in h.partitions}


def _check(previous, new_parallelism: int) -> None:
    result = repartition_operator_state(previous, new_parallelism)
    assert len(result) == new_parallelism
    old_parallelism = len(previous)
    for handles in result:
        streams = [h.handle for h in handles]
        assert len(streams) == len(set(streams)), "one handle per stream and subtask"
    for name, mode in _modes(previous).items():
        before = [_elements(handles, name) for handles in previous]
        after = [_elements(handles, name) for handles in result]
        everything = [e for elements in before for e in elements]
        if mode is SPLIT:
            if new_parallelism == old_parallelism:
                assert after == before  # each subtask keeps its own
                continue
            # Every element exactly once, in runs of nearly equal length that, read from
            # the subtask that got the first one, are the old elements in order.
            assert Counter(e for elements in after for e in elements) == Counter(everything)
            sizes = sorted(len(elements) for elements in after)
            assert sizes[-1] - sizes[0] <= 1
            for elements in after:
                assert elements == sorted(elements, key=everything.index)
        elif mode is UNION:
            for elements in after:
                assert sorted(elements) == sorted(everything)
        else:
            for i, elements in enumerate(after):
                assert elements == before[i % old_parallelism]


@pytest.mark.parametrize(("old", "new"), [(2, 3), (3, 1), (1, 4), (2, 2), (3, 3)])
@settings(max_examples=80, deadline=None)
@given(data=st.data())
def test_each_mode_is_redistributed_as_it_says(old, new, data):
    _check(data.draw(old_states(old)), new)


def test_at_the_same_parallelism_without_union_state_each_subtask_gets_its_own():
    previous = [
        [OperatorStateHandle(_stream(i), (OperatorStatePartition("a", SPLIT, (0, 10)),))]
        for i in range(3)
    ]
    assert repartition_operator_state(previous, 3) == previous


def test_at_the_same_parallelism_union_state_reaches_every_subtask():
    """A union list state is the whole list after any restore, not only after rescaling;
    the subtask's other states stay its own."""
    previous = [
        [
            OperatorStateHandle(
                _stream(i),
                (
                    OperatorStatePartition("own", SPLIT, (0,)),
                    OperatorStatePartition("all", UNION, (10 + i,)),
                ),
            )
        ]
        for i in range(2)
    ]
    result = repartition_operator_state(previous, 2)
    for i, handles in enumerate(result):
        assert _elements(handles, "own") == [(_stream(i).path, 0)]
        assert sorted(_elements(handles, "all")) == [(_stream(0).path, 10), (_stream(1).path, 11)]


def test_split_runs_rotate_between_states_as_flink_does():
    """Two states of 3 elements each over 2 subtasks: the first state's long run goes to
    subtask 0, the second's to subtask 1 (the first that got a short run)."""
    previous = [
        [
            OperatorStateHandle(
                _stream(0),
                (
                    OperatorStatePartition("a", SPLIT, (0, 10, 20)),
                    OperatorStatePartition("b", SPLIT, (30, 40, 50)),
                ),
            )
        ]
    ]
    first, second = repartition_operator_state(previous, 2)
    assert [len(_elements(first, n)) for n in "ab"] == [2, 1]
    assert [len(_elements(second, n)) for n in "ab"] == [1, 2]


def test_a_parallelism_below_one_is_refused():
    with pytest.raises(ValueError, match="at least 1"):
        repartition_operator_state([[]], 0)
