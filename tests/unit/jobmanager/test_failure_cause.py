"""The cause a failed job reports is the task failure that started it, not the failures
of the consumers that lost their input because of it."""

from __future__ import annotations

import traceback

from weir.core.deployment import ExecutionState
from weir.core.errors import ProducerFailedError, RecordTooLargeError
from weir.core.job_graph import JobGraph, JobVertex, OperatorDescriptor, OperatorKind
from weir.core.job_status import JobStatus
from weir.core.security import SecurityConfig
from weir.jobmanager.execution_graph import ExecutionGraph
from weir.jobmanager.failure_cause import is_consequence
from weir.jobmanager.scheduler import DefaultScheduler


def _formatted(exc: BaseException) -> str:
    try:
        raise exc
    except BaseException as raised:
        return "".join(traceback.format_exception(raised))


def _consumer_failure() -> str:
    try:
        try:
            raise RuntimeError("result partition p#0 was released: RecordTooLargeError(...)")
        except RuntimeError as exc:
            msg = "lost input 0: its producer ended first: ..."
            raise ProducerFailedError(msg) from exc
    except ProducerFailedError as exc:
        return "".join(traceback.format_exception(exc))


ROOT = _formatted(RecordTooLargeError("a record of 2097165 bytes serialized ..."))


class TestIsConsequence:
    def test_a_lost_input_is_a_consequence(self):
        assert is_consequence(_consumer_failure())

    def test_the_producers_own_failure_is_not(self):
        assert not is_consequence(ROOT)
        assert not is_consequence("")

    def test_an_error_while_cleaning_up_after_a_lost_input_is_not(self):
        text = _consumer_failure() + "\nWhile cleaning up, another error occurred:\n"
        text += _formatted(ValueError("close() failed"))
        assert not is_consequence(text)


def _scheduler() -> DefaultScheduler:
    vertices = tuple(
        JobVertex(v, v, 1, 128, (OperatorDescriptor(f"op-{v}", v, OperatorKind.MAP, b""),), "d")
        for v in ("producer", "consumer")
    )
    graph = ExecutionGraph(JobGraph("job", "test", vertices, ()), 0)
    for ev in graph.all_executions():  # deployed: they report their own end
        ev.current.transition(ExecutionState.RUNNING)
    return DefaultScheduler(
        graph,
        {"restart-strategy.type": "none"},
        jobmaster_address=lambda: "127.0.0.1:1",
        resource_manager_address=lambda: None,
        on_status=lambda status: None,
        security=SecurityConfig(),
    )


def test_the_producers_failure_is_the_job_cause_when_its_consumer_reports_first():
    scheduler = _scheduler()
    scheduler.status = JobStatus.RUNNING
    producer, consumer = (ev.current for ev in scheduler.graph.all_executions())
    assert scheduler.update_task_state(
        consumer.attempt_id, ExecutionState.FAILED, _consumer_failure()
    )
    assert scheduler.status is JobStatus.FAILING
    scheduler.update_task_state(producer.attempt_id, ExecutionState.FAILED, ROOT)
    assert "RecordTooLargeError: a record of 2097165 bytes" in scheduler.failure_cause
    assert "ProducerFailedError" not in scheduler.failure_cause


def test_the_first_cause_stays_when_it_is_not_a_consequence():
    scheduler = _scheduler()
    scheduler.status = JobStatus.RUNNING
    producer, consumer = (ev.current for ev in scheduler.graph.all_executions())
    scheduler.update_task_state(producer.attempt_id, ExecutionState.FAILED, ROOT)
    other = _formatted(ValueError("the consumer's own bug"))
    scheduler.update_task_state(consumer.attempt_id, ExecutionState.FAILED, other)
    assert "RecordTooLargeError" in scheduler.failure_cause
