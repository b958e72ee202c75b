"""What a JobMaster tells a TaskExecutor to run: the TaskDeploymentDescriptor and its parts."""

from __future__ import annotations

import enum
from collections.abc import Mapping
from dataclasses import dataclass, field

from weir.core.ids import AllocationId, ExecutionAttemptId, JobId, ResourceId
from weir.core.job_graph import JobEdge, JobVertex


class ExecutionState(enum.Enum):
    """Flink's ExecutionState."""

    CREATED = "CREATED"
    SCHEDULED = "SCHEDULED"
    DEPLOYING = "DEPLOYING"
    INITIALIZING = "INITIALIZING"
    RUNNING = "RUNNING"
    FINISHED = "FINISHED"
    CANCELING = "CANCELING"
    CANCELED = "CANCELED"
    FAILED = "FAILED"

    @property
    def is_terminal(self) -> bool:
        return self in (ExecutionState.FINISHED, ExecutionState.CANCELED, ExecutionState.FAILED)


@dataclass(frozen=True, slots=True)
class TaskManagerLocation:
    resource_id: ResourceId
    host: str
    data_port: int
    """The TaskManager's data-plane TCP port (not its gRPC port)."""


@dataclass(frozen=True, slots=True)
class ResultPartitionId:
    """One produced partition: edge ``edge_index`` of the producer attempt ``producer``."""

    producer: ExecutionAttemptId
    edge_index: int

    def __str__(self) -> str:
        return f"{self.producer}#{self.edge_index}"


@dataclass(frozen=True, slots=True)
class ResultPartitionDescriptor:
    partition_id: ResultPartitionId
    edge: JobEdge
    num_subpartitions: int
    consumer_subtasks: tuple[int, ...]
    """Subpartition ``i`` feeds consumer subtask ``consumer_subtasks[i]``. All-to-all edges
    (rebalance, shuffle, broadcast, global, key_group, custom) have one subpartition per
    consumer subtask, in order; pointwise edges (forward, rescale) only the consumers this
    producer feeds, as Flink's POINTWISE pattern connects them."""
    consumer_parallelism: int
    consumer_max_parallelism: int
    """Key-group routing needs the consumer's parallelism and max parallelism."""


@dataclass(frozen=True, slots=True)
class InputChannelDescriptor:
    partition_id: ResultPartitionId
    subpartition_index: int
    """The subpartition of the producer's partition that feeds this consumer."""
    producer_location: TaskManagerLocation
    is_local: bool
    """Producer and consumer run in the same TaskManager: exchange in memory."""


@dataclass(frozen=True, slots=True)
class InputGateDescriptor:
    edge_index: int
    edge: JobEdge
    channels: tuple[InputChannelDescriptor, ...]
    """One per producer subtask, in producer subtask order (only those that feed this consumer)."""


@dataclass(frozen=True, slots=True)
class TaskDeploymentDescriptor:
    job_id: JobId
    job_name: str
    vertex: JobVertex
    subtask_index: int
    attempt_number: int
    execution_attempt_id: ExecutionAttemptId
    allocation_id: AllocationId
    input_gates: tuple[InputGateDescriptor, ...]
    """Ordered by edge index; ``gate.edge.input_index`` says which input of the head."""
    result_partitions: tuple[ResultPartitionDescriptor, ...]
    job_config: Mapping[str, str] = field(default_factory=dict)
    job_parameters: Mapping[str, str] = field(default_factory=dict)
    restored_state: bytes | None = None
    """This subtask's state to start from (``encode_task_state`` of the checkpoint's
    handles), or None for a fresh start."""
    restored_checkpoint_id: int = 0
    """The id of the checkpoint the job restores (also for a subtask without state of
    its own), 0 for a fresh start; the epoch collect sinks start in."""
    finished_on_restore: bool = False
    """The restored checkpoint recorded this subtask as finished: it runs none of its
    operators, ends its outputs at once and waits for its inputs to end."""

    @property
    def parallelism(self) -> int:
        return self.vertex.parallelism

    @property
    def task_name(self) -> str:
        """Flink's "name (i/p)" form."""
        return f"{self.vertex.name} ({self.subtask_index + 1}/{self.vertex.parallelism})"
