"""The ExecutionGraph: one ExecutionVertex per parallel subtask, its current Execution,
and the deployment descriptors that wire producers to consumers."""

from __future__ import annotations

import time
from dataclasses import dataclass, field

from weir.core.deployment import (
    ExecutionState,
    InputChannelDescriptor,
    InputGateDescriptor,
    ResultPartitionDescriptor,
    ResultPartitionId,
    TaskDeploymentDescriptor,
    TaskManagerLocation,
)
from weir.core.errors import JobGraphError
from weir.core.ids import AllocationId, ExecutionAttemptId, ResourceId, new_execution_attempt_id
from weir.core.job_graph import JobEdge, JobGraph, JobVertex, PartitionerKind
from weir.core.job_info import IOMetricsInfo, TaskStatusInfo

_POINTWISE = (PartitionerKind.FORWARD, PartitionerKind.RESCALE)


@dataclass(frozen=True, slots=True)
class SlotInfo:
    """A slot the ResourceManager allocated to this job."""

    allocation_id: AllocationId
    resource_id: ResourceId
    rpc_address: str
    data_host: str
    data_port: int

    @property
    def location(self) -> TaskManagerLocation:
        return TaskManagerLocation(self.resource_id, self.data_host, self.data_port)


@dataclass(slots=True)
class Execution:
    """One attempt to run an ExecutionVertex."""

    attempt_id: ExecutionAttemptId
    attempt_number: int
    state: ExecutionState = ExecutionState.CREATED
    slot: SlotInfo | None = None
    failure_cause: str = ""
    state_timestamps: dict[str, float] = field(default_factory=dict)
    io_metrics: IOMetricsInfo | None = None  # the task's final counts, once it ended

    def transition(self, state: ExecutionState) -> None:
        self.state = state
        self.state_timestamps[state.value] = time.time()


@dataclass(slots=True)
class ExecutionVertex:
    job_vertex: JobVertex
    subtask_index: int
    current: Execution

    @property
    def task_name(self) -> str:
        return f"{self.job_vertex.name} ({self.subtask_index + 1}/{self.job_vertex.parallelism})"


def pointwise_consumers(producer: int, producers: int, consumers: int) -> tuple[int, ...]:
    """The consumer subtasks a producer feeds on a pointwise edge, as Flink connects them:
    equal parallelism 1:1; more producers than consumers: each producer feeds one
    consumer; fewer: each producer feeds a contiguous range."""
    if producers >= consumers:
        return tuple(
            j
            for j in range(consumers)
            if j * producers // consumers <= producer < (j + 1) * producers // consumers
        )
    return tuple(j for j in range(consumers) if j * producers // consumers == producer)


class ExecutionGraph:
    def __init__(self, job_graph: JobGraph, attempt_number: int = 0) -> None:
        self.job_graph = job_graph
        self.attempt_number = attempt_number
        self.vertices: dict[str, list[ExecutionVertex]] = {}
        self._by_attempt: dict[ExecutionAttemptId, ExecutionVertex] = {}
        for vertex in job_graph.vertices:
            subtasks = []
            for index in range(vertex.parallelism):
                ev = ExecutionVertex(
                    vertex, index, Execution(new_execution_attempt_id(), attempt_number)
                )
                subtasks.append(ev)
                self._by_attempt[ev.current.attempt_id] = ev
            self.vertices[vertex.vertex_id] = subtasks
        for _, edge in enumerate(job_graph.edges):
            source = job_graph.vertex(edge.source_vertex)
            target = job_graph.vertex(edge.target_vertex)
            if (
                edge.partitioner is PartitionerKind.FORWARD
                and source.parallelism != target.parallelism
            ):
                msg = (
                    f"forward partitioning does not allow a change of parallelism: "
                    f"{source.name!r} ({source.parallelism}) -> {target.name!r} "
                    f"({target.parallelism}); use rebalance() or rescale()"
                )
                raise JobGraphError(msg)

    # -- slots -----------------------------------------------------------------------
    def slot_sharing_groups(self) -> dict[str, int]:
        """Slots each sharing group needs: one slot holds one subtask of every vertex."""
        needed: dict[str, int] = {}
        for vertex in self.job_graph.vertices:
            group = vertex.slot_sharing_group
            needed[group] = max(needed.get(group, 0), vertex.parallelism)
        return needed

    def required_slots(self) -> int:
        return sum(self.slot_sharing_groups().values())

    def assign_slots(self, slots: list[SlotInfo]) -> None:
        if len(slots) < self.required_slots():
            msg = f"{len(slots)} slots for a job that needs {self.required_slots()}"
            raise ValueError(msg)
        offset = 0
        base: dict[str, int] = {}
        for group, count in self.slot_sharing_groups().items():
            base[group] = offset
            offset += count
        for vertex in self.job_graph.vertices:
            for ev in self.vertices[vertex.vertex_id]:
                ev.current.slot = slots[base[vertex.slot_sharing_group] + ev.subtask_index]

    # -- deployment ------------------------------------------------------------------
    def _partition_descriptor(
        self, producer: ExecutionVertex, edge_index: int, edge: JobEdge
    ) -> ResultPartitionDescriptor:
        target = self.job_graph.vertex(edge.target_vertex)
        if edge.partitioner in _POINTWISE:
            consumers = pointwise_consumers(
                producer.subtask_index, producer.job_vertex.parallelism, target.parallelism
            )
        else:
            consumers = tuple(range(target.parallelism))
        return ResultPartitionDescriptor(
            partition_id=ResultPartitionId(producer.current.attempt_id, edge_index),
            edge=edge,
            num_subpartitions=len(consumers),
            consumer_subtasks=consumers,
            consumer_parallelism=target.parallelism,
            consumer_max_parallelism=target.max_parallelism,
        )

    def _gate_descriptor(
        self, consumer: ExecutionVertex, edge_index: int, edge: JobEdge
    ) -> InputGateDescriptor:
        assert consumer.current.slot is not None
        channels = []
        for producer in self.vertices[edge.source_vertex]:
            partition = self._partition_descriptor(producer, edge_index, edge)
            if consumer.subtask_index not in partition.consumer_subtasks:
                continue
            slot = producer.current.slot
            assert slot is not None
            channels.append(
                InputChannelDescriptor(
                    partition_id=partition.partition_id,
                    subpartition_index=partition.consumer_subtasks.index(consumer.subtask_index),
                    producer_location=slot.location,
                    is_local=slot.resource_id == consumer.current.slot.resource_id,
                )
            )
        return InputGateDescriptor(edge_index=edge_index, edge=edge, channels=tuple(channels))

    def deployment_descriptor(self, ev: ExecutionVertex) -> TaskDeploymentDescriptor:
        slot = ev.current.slot
        assert slot is not None, "assign slots before deploying"
        graph = self.job_graph
        vertex_id = ev.job_vertex.vertex_id
        return TaskDeploymentDescriptor(
            job_id=graph.job_id,
            job_name=graph.job_name,
            vertex=ev.job_vertex,
            subtask_index=ev.subtask_index,
            attempt_number=ev.current.attempt_number,
            execution_attempt_id=ev.current.attempt_id,
            allocation_id=slot.allocation_id,
            input_gates=tuple(
                self._gate_descriptor(ev, i, e) for i, e in graph.inputs_of(vertex_id)
            ),
            result_partitions=tuple(
                self._partition_descriptor(ev, i, e) for i, e in graph.outputs_of(vertex_id)
            ),
            job_config=graph.config,
            job_parameters=graph.job_parameters,
        )

    # -- state -----------------------------------------------------------------------
    def all_executions(self) -> list[ExecutionVertex]:
        return [ev for subtasks in self.vertices.values() for ev in subtasks]

    def producers_of(self, consumer: ExecutionVertex) -> list[ExecutionVertex]:
        """The subtasks whose output ``consumer`` reads, over every input edge (the
        channels of its input gates)."""
        found: list[ExecutionVertex] = []
        target = consumer.job_vertex
        for _, edge in self.job_graph.inputs_of(target.vertex_id):
            upstream = self.vertices[edge.source_vertex]
            if edge.partitioner in _POINTWISE:
                found += [
                    p
                    for p in upstream
                    if consumer.subtask_index
                    in pointwise_consumers(p.subtask_index, len(upstream), target.parallelism)
                ]
            else:
                found += upstream
        return found

    def find(self, attempt_id: str) -> ExecutionVertex | None:
        return self._by_attempt.get(ExecutionAttemptId(attempt_id))

    def task_statuses(self) -> tuple[TaskStatusInfo, ...]:
        return tuple(
            TaskStatusInfo(
                vertex_id=ev.job_vertex.vertex_id,
                task_name=ev.task_name,
                subtask_index=ev.subtask_index,
                attempt_number=ev.current.attempt_number,
                execution_attempt_id=ev.current.attempt_id,
                state=ev.current.state.value,
                resource_id=ev.current.slot.resource_id if ev.current.slot else "",
                failure_cause=ev.current.failure_cause,
                io_metrics=ev.current.io_metrics,
            )
            for ev in self.all_executions()
        )
