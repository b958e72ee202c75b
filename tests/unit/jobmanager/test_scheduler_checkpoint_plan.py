"""DefaultScheduler.checkpoint_plan with finished tasks (FLIP-147): finished subtasks are
recorded as finished, and the checkpoint is triggered at the running tasks none of whose
producers still runs."""

from __future__ import annotations

from weir.core.deployment import ExecutionState
from weir.core.ids import OperatorId
from weir.core.job_graph import (
    JobEdge,
    JobGraph,
    JobVertex,
    OperatorDescriptor,
    OperatorKind,
    PartitionerKind,
)
from weir.core.job_status import JobStatus
from weir.jobmanager.execution_graph import ExecutionGraph
from weir.jobmanager.scheduler import DefaultScheduler

CHECKPOINTS = {"restart-strategy.type": "none", "execution.checkpointing.interval": "1 s"}


def _vertex(vid: str, parallelism: int) -> JobVertex:
    return JobVertex(
        vid,
        vid,
        parallelism,
        128,
        (OperatorDescriptor(f"op-{vid}", vid, OperatorKind.MAP, b""),),
        "default",
    )


def _scheduler(partitioner: PartitionerKind, config: dict | None = None) -> DefaultScheduler:
    """source (p=2) -> sink (p=2) over ``partitioner``; every task RUNNING."""
    graph = JobGraph(
        "job",
        "test",
        (_vertex("source", 2), _vertex("sink", 2)),
        (JobEdge("source", "op-source", "sink", 0, partitioner),),
    )
    scheduler = DefaultScheduler(
        ExecutionGraph(graph, 0),
        config or CHECKPOINTS,
        jobmaster_address=lambda: "127.0.0.1:1",
        resource_manager_address=lambda: None,
        on_status=lambda status: None,
    )
    scheduler.status = JobStatus.RUNNING
    for ev in scheduler.graph.all_executions():
        ev.current.transition(ExecutionState.RUNNING)
    return scheduler


def _finish(scheduler: DefaultScheduler, vertex: str, index: int) -> str:
    ev = scheduler.graph.vertices[vertex][index]
    ev.current.transition(ExecutionState.FINISHED)
    return ev.current.attempt_id


def _triggered(scheduler: DefaultScheduler) -> set[tuple[int, bool]]:
    plan = scheduler.checkpoint_plan()
    assert plan is not None
    return {(t.subtask_index, t.is_source) for t in plan.tasks}


def test_while_everything_runs_only_the_sources_are_triggered():
    plan = _scheduler(PartitionerKind.REBALANCE).checkpoint_plan()
    assert plan is not None
    assert len(plan.tasks) == 4
    assert len(plan.tasks_to_trigger) == 2
    assert plan.finished == {}


def test_a_finished_source_subtask_is_recorded_and_not_part_of_the_checkpoint():
    scheduler = _scheduler(PartitionerKind.REBALANCE)
    finished = _finish(scheduler, "source", 0)
    plan = scheduler.checkpoint_plan()
    assert plan is not None
    assert finished not in {t.attempt_id for t in plan.tasks}
    assert plan.finished[OperatorId("op-source")].finished_subtasks == {0}
    # The other source still runs: the sinks get its barrier, they are not triggered.
    assert [t.subtask_index for t in plan.tasks_to_trigger] == [1]


def test_consumers_of_finished_producers_are_triggered_directly():
    scheduler = _scheduler(PartitionerKind.REBALANCE)
    _finish(scheduler, "source", 0)
    _finish(scheduler, "source", 1)
    plan = scheduler.checkpoint_plan()
    assert plan is not None
    assert {t.subtask_index for t in plan.tasks_to_trigger} == {0, 1}
    assert len(plan.tasks) == 2  # the sinks
    assert plan.finished[OperatorId("op-source")].finished_subtasks == {0, 1}


def test_on_a_pointwise_edge_only_the_consumer_of_the_finished_producer_is_triggered():
    scheduler = _scheduler(PartitionerKind.FORWARD)
    _finish(scheduler, "source", 0)
    plan = scheduler.checkpoint_plan()
    assert plan is not None
    sink_0 = scheduler.graph.vertices["sink"][0].current.attempt_id
    source_1 = scheduler.graph.vertices["source"][1].current.attempt_id
    assert {t.attempt_id for t in plan.tasks_to_trigger} == {sink_0, source_1}


def test_no_checkpoint_once_every_task_finished_or_while_one_deploys():
    scheduler = _scheduler(PartitionerKind.REBALANCE)
    for vertex in ("source", "sink"):
        for index in (0, 1):
            _finish(scheduler, vertex, index)
    assert scheduler.checkpoint_plan() is None
    deploying = _scheduler(PartitionerKind.REBALANCE)
    deploying.graph.vertices["sink"][1].current.transition(ExecutionState.DEPLOYING)
    assert deploying.checkpoint_plan() is None


def test_without_checkpoints_after_tasks_finish_a_finished_task_stops_checkpoints():
    config = {**CHECKPOINTS, "execution.checkpointing.checkpoints-after-tasks-finish": "false"}
    scheduler = _scheduler(PartitionerKind.REBALANCE, config)
    _finish(scheduler, "source", 0)
    assert scheduler.checkpoint_plan() is None
