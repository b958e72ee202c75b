"""The state each subtask restores: its own keyed state and source position, its own
list and broadcast state, and every subtask's union list state."""

from __future__ import annotations

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
from weir.core.ids import JobVertexId, OperatorId
from weir.core.job_graph import JobVertex, OperatorDescriptor, OperatorKind
from weir.jobmanager.checkpoint.state_assignment import assign_subtask_states

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
        i: KeyGroupsStateHandle(KeyGroupRange(64 * i, 64 * (i + 1)), _file(f"keyed-{i}"))
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
