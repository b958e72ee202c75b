"""DefaultScheduler.set_initial_state (weir run -s): state matched to operators by id,
restored at another parallelism, and what cannot be restored refused by name."""

from __future__ import annotations

import logging

import pytest

from weir.core.checkpoint import (
    KeyGroupRange,
    KeyGroupsStateHandle,
    OperatorState,
    OperatorSubtaskState,
    StreamStateHandle,
    decode_task_state,
)
from weir.core.errors import JobSubmissionError
from weir.core.ids import OperatorId
from weir.core.job_graph import JobGraph, JobVertex, OperatorDescriptor, OperatorKind
from weir.core.security import SecurityConfig
from weir.jobmanager.execution_graph import ExecutionGraph
from weir.jobmanager.scheduler import DefaultScheduler

KEYED = OperatorId("a" * 32)
GONE = OperatorId("b" * 32)


def _scheduler(parallelism: int, uid: str | None = "counter", max_parallelism: int = 128):
    vertex = JobVertex(
        "v" * 32,
        "count",
        parallelism,
        max_parallelism,
        (OperatorDescriptor(KEYED, "count", OperatorKind.MAP, b"", uid=uid),),
        "default",
    )
    return DefaultScheduler(
        ExecutionGraph(JobGraph("j" * 32, "job", (vertex,), ()), 0),
        {"restart-strategy.type": "none"},
        jobmaster_address=lambda: "127.0.0.1:1",
        resource_manager_address=lambda: None,
        on_status=lambda status: None,
        security=SecurityConfig(),
    )


def _state(operator_id: OperatorId, parallelism: int, uid: str = "") -> OperatorState:
    halves = [KeyGroupRange(0, 64), KeyGroupRange(64, 128)] if parallelism == 2 else []
    subtasks = {
        i: OperatorSubtaskState(
            managed_keyed_state=(
                KeyGroupsStateHandle(
                    r, StreamStateHandle(f"file:///sp/k{i}", 1, 0), key_placement="pickled"
                ),
            )
        )
        for i, r in enumerate(halves)
    }
    return OperatorState(operator_id, parallelism, 128, subtasks, uid=uid)


def test_state_taken_at_two_is_restored_at_three_by_key_group():
    scheduler = _scheduler(3)
    scheduler.set_initial_state({KEYED: _state(KEYED, 2, "counter")}, "/sp", False)
    got = [
        decode_task_state(scheduler._restore.state_of("v" * 32, i)).subtask_states[KEYED]
        for i in range(3)
    ]
    # Subtask 1 of 3 owns key groups 43..85: it reads both old halves.
    assert [len(s.managed_keyed_state) for s in got] == [1, 2, 1]


def test_unclaimed_state_is_named_by_uid_unless_allowed(caplog):
    scheduler = _scheduler(2)
    states = {KEYED: _state(KEYED, 2), GONE: _state(GONE, 2, "old-counter")}
    with pytest.raises(JobSubmissionError, match=r"uid 'old-counter'.*--allowNonRestoredState"):
        scheduler.set_initial_state(states, "/sp", False)
    with caplog.at_level(logging.WARNING):
        scheduler.set_initial_state(states, "/sp", True)
    assert "dropping the state of operators it does not have: uid 'old-counter'" in caplog.text


def test_state_matched_without_a_uid_warns_to_give_one(caplog):
    scheduler = _scheduler(2, uid=None)
    with caplog.at_level(logging.WARNING):
        scheduler.set_initial_state({KEYED: _state(KEYED, 2)}, "/sp", False)
    assert "without a uid" in caplog.text and "give every stateful operator a uid" in caplog.text


def test_another_max_parallelism_is_refused_naming_both():
    scheduler = _scheduler(2, max_parallelism=256)
    with pytest.raises(JobSubmissionError, match=r"max parallelism 256.*max parallelism 128"):
        scheduler.set_initial_state({KEYED: _state(KEYED, 2)}, "/sp", False)


def _source_state(parallelism: int, finished: frozenset[int], *, splits: bool = True):
    def handles(i: int) -> dict[str, tuple[StreamStateHandle, ...]]:
        handle = (StreamStateHandle(f"file:///sp/source-{i}", 1, 0),)
        return {"source_split_state" if splits else "source_reader_state": handle}

    subtasks = {
        i: OperatorSubtaskState(**handles(i))  # type: ignore[arg-type]
        for i in range(parallelism)
        if i not in finished
    }
    return OperatorState(KEYED, parallelism, 128, subtasks, finished, uid="counter")


def test_a_source_finished_at_two_is_finished_at_three():
    scheduler = _scheduler(3)
    scheduler.set_initial_state({KEYED: _source_state(2, frozenset({0, 1}))}, "/sp", False)
    assert scheduler._restore.finished_subtasks == {("v" * 32, i) for i in range(3)}


def test_a_partly_finished_source_deals_out_what_its_running_subtasks_had_left():
    scheduler = _scheduler(3)
    scheduler.set_initial_state({KEYED: _source_state(2, frozenset({0}))}, "/sp", False)
    # The new subtasks are not the old ones: all run, each with its share of the splits
    # the unfinished subtask had left (the finished one's are done).
    assert scheduler._restore.finished_subtasks == frozenset()
    for i in range(3):
        state = decode_task_state(scheduler._restore.state_of("v" * 32, i)).subtask_states[KEYED]
        assert state.source_split_state == (StreamStateHandle("file:///sp/source-1", 1, 0),)
        assert state.source_splits_rescaled


def test_an_opaque_source_position_at_another_parallelism_is_refused_by_name():
    scheduler = _scheduler(3)
    with pytest.raises(JobSubmissionError) as refused:
        scheduler.set_initial_state(
            {KEYED: _source_state(2, frozenset(), splits=False)}, "/sp", False
        )
    message = str(refused.value)
    assert "operator counter (count)" in message
    assert "parallelism 2" in message and "now runs at 3" in message
    assert "set_parallelism" in message
