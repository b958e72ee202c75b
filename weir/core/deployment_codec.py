"""TaskDeploymentDescriptor <-> ``TaskDeploymentDescriptorProto`` (proto/taskexecutor.proto).

The descriptor a JobMaster sends in ``SubmitTask`` is a versioned protobuf message, never a
pickle: a TaskManager decodes it without running anything, and the only opaque parts are
the user's function payloads in the vertex and edges, which it unpickles later, when the
task builds its operators. A descriptor of another ``DEPLOYMENT_VERSION`` is refused,
naming both versions.
"""

from __future__ import annotations

from importlib import metadata

from weir.core.deployment import (
    InputChannelDescriptor,
    InputGateDescriptor,
    ResultPartitionDescriptor,
    ResultPartitionId,
    TaskDeploymentDescriptor,
    TaskManagerLocation,
)
from weir.core.errors import DeploymentVersionError, JobGraphError
from weir.core.ids import AllocationId, ExecutionAttemptId, JobId, ResourceId
from weir.core.job_graph_codec import (
    edge_from_proto,
    edge_to_proto,
    vertex_from_proto,
    vertex_to_proto,
)
from weir.proto import taskexecutor_pb2

# Raised whenever the meaning of a field changes (a new field that an older TaskManager
# could ignore does not need it): sender and receiver must agree on the whole descriptor.
DEPLOYMENT_VERSION = 1


def _weir_version() -> str:
    try:
        return metadata.version("weir")
    except metadata.PackageNotFoundError:  # run from a checkout without installing
        return "unknown"


def _partition_id_to_proto(pid: ResultPartitionId) -> taskexecutor_pb2.ResultPartitionIdProto:
    return taskexecutor_pb2.ResultPartitionIdProto(producer=pid.producer, edge_index=pid.edge_index)


def _partition_id_from_proto(p: taskexecutor_pb2.ResultPartitionIdProto) -> ResultPartitionId:
    return ResultPartitionId(ExecutionAttemptId(p.producer), p.edge_index)


def encode_deployment(
    tdd: TaskDeploymentDescriptor,
) -> taskexecutor_pb2.TaskDeploymentDescriptorProto:
    message = taskexecutor_pb2.TaskDeploymentDescriptorProto(
        version=DEPLOYMENT_VERSION,
        weir_version=_weir_version(),
        job_id=tdd.job_id,
        job_name=tdd.job_name,
        vertex=vertex_to_proto(tdd.vertex),
        subtask_index=tdd.subtask_index,
        attempt_number=tdd.attempt_number,
        execution_attempt_id=tdd.execution_attempt_id,
        allocation_id=tdd.allocation_id,
        job_config=dict(tdd.job_config),
        job_parameters=dict(tdd.job_parameters),
        restored_state=tdd.restored_state or b"",
        has_restored_state=tdd.restored_state is not None,
        restored_checkpoint_id=tdd.restored_checkpoint_id,
        finished_on_restore=tdd.finished_on_restore,
    )
    for gate in tdd.input_gates:
        g = message.input_gates.add(edge_index=gate.edge_index, edge=edge_to_proto(gate.edge))
        for ch in gate.channels:
            location = ch.producer_location
            g.channels.add(
                partition_id=_partition_id_to_proto(ch.partition_id),
                subpartition_index=ch.subpartition_index,
                producer_location=taskexecutor_pb2.TaskManagerLocationProto(
                    resource_id=location.resource_id,
                    host=location.host,
                    data_port=location.data_port,
                ),
                is_local=ch.is_local,
            )
    for rp in tdd.result_partitions:
        message.result_partitions.add(
            partition_id=_partition_id_to_proto(rp.partition_id),
            edge=edge_to_proto(rp.edge),
            num_subpartitions=rp.num_subpartitions,
            consumer_subtasks=list(rp.consumer_subtasks),
            consumer_parallelism=rp.consumer_parallelism,
            consumer_max_parallelism=rp.consumer_max_parallelism,
        )
    return message


def decode_deployment(
    message: taskexecutor_pb2.TaskDeploymentDescriptorProto,
) -> TaskDeploymentDescriptor:
    """Raises DeploymentVersionError for another version, JobGraphError for a malformed
    descriptor; unpickles nothing."""
    if message.version != DEPLOYMENT_VERSION:
        sent = message.weir_version or "unknown"
        msg = (
            f"refusing a task deployment of version {message.version} (sent by Weir {sent}): "
            f"this TaskManager speaks version {DEPLOYMENT_VERSION} (Weir {_weir_version()}); "
            "run the same Weir on the master and every Spark worker"
        )
        raise DeploymentVersionError(msg)
    try:
        return TaskDeploymentDescriptor(
            job_id=JobId(message.job_id),
            job_name=message.job_name,
            vertex=vertex_from_proto(message.vertex),
            subtask_index=message.subtask_index,
            attempt_number=message.attempt_number,
            execution_attempt_id=ExecutionAttemptId(message.execution_attempt_id),
            allocation_id=AllocationId(message.allocation_id),
            input_gates=tuple(
                InputGateDescriptor(
                    edge_index=g.edge_index,
                    edge=edge_from_proto(g.edge),
                    channels=tuple(
                        InputChannelDescriptor(
                            partition_id=_partition_id_from_proto(ch.partition_id),
                            subpartition_index=ch.subpartition_index,
                            producer_location=TaskManagerLocation(
                                ResourceId(ch.producer_location.resource_id),
                                ch.producer_location.host,
                                ch.producer_location.data_port,
                            ),
                            is_local=ch.is_local,
                        )
                        for ch in g.channels
                    ),
                )
                for g in message.input_gates
            ),
            result_partitions=tuple(
                ResultPartitionDescriptor(
                    partition_id=_partition_id_from_proto(rp.partition_id),
                    edge=edge_from_proto(rp.edge),
                    num_subpartitions=rp.num_subpartitions,
                    consumer_subtasks=tuple(rp.consumer_subtasks),
                    consumer_parallelism=rp.consumer_parallelism,
                    consumer_max_parallelism=rp.consumer_max_parallelism,
                )
                for rp in message.result_partitions
            ),
            job_config=dict(message.job_config),
            job_parameters=dict(message.job_parameters),
            restored_state=message.restored_state if message.has_restored_state else None,
            restored_checkpoint_id=message.restored_checkpoint_id,
            finished_on_restore=message.finished_on_restore,
        )
    except ValueError as exc:
        msg = f"a malformed task deployment descriptor for job {message.job_id}: {exc}"
        raise JobGraphError(msg) from exc
