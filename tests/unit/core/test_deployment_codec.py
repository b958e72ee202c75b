"""TaskDeploymentDescriptor <-> protobuf: every field survives the trip."""

from __future__ import annotations

import pytest

from weir.core.deployment import (
    InputChannelDescriptor,
    InputGateDescriptor,
    ResultPartitionDescriptor,
    ResultPartitionId,
    TaskDeploymentDescriptor,
    TaskManagerLocation,
)
from weir.core.deployment_codec import decode_deployment, encode_deployment
from weir.core.errors import JobGraphError
from weir.core.ids import (
    AllocationId,
    ExecutionAttemptId,
    JobId,
    JobVertexId,
    OperatorId,
    ResourceId,
)
from weir.core.job_graph import (
    JobEdge,
    JobVertex,
    OperatorDescriptor,
    OperatorKind,
    PartitionerKind,
    SerializerKind,
)

EDGE = JobEdge(
    JobVertexId("v0"),
    OperatorId("o0"),
    JobVertexId("v1"),
    1,
    PartitionerKind.KEY_GROUP,
    b"\x80selector",
    SerializerKind.MARSHAL,
    "late",
)


def descriptor(restored: bytes | None) -> TaskDeploymentDescriptor:
    producer = ResultPartitionId(ExecutionAttemptId("p" * 32), 3)
    return TaskDeploymentDescriptor(
        job_id=JobId("ab" * 16),
        job_name="job",
        vertex=JobVertex(
            JobVertexId("v1"),
            "keyed",
            2,
            128,
            (
                OperatorDescriptor(OperatorId("o1"), "map", OperatorKind.MAP, b"\x80fn", ("o2",)),
                OperatorDescriptor(
                    OperatorId("o2"), "sink", OperatorKind.SINK, b"", uid="u", input_count=2
                ),
            ),
            "group",
        ),
        subtask_index=1,
        attempt_number=4,
        execution_attempt_id=ExecutionAttemptId("e" * 32),
        allocation_id=AllocationId("a" * 32),
        input_gates=(
            InputGateDescriptor(
                7,
                EDGE,
                (
                    InputChannelDescriptor(
                        producer, 1, TaskManagerLocation(ResourceId("r1"), "10.0.0.2", 5000), False
                    ),
                ),
            ),
        ),
        result_partitions=(ResultPartitionDescriptor(producer, EDGE, 2, (0, 1), 2, 128),),
        job_config={"k": "v"},
        job_parameters={"p": "q"},
        restored_state=restored,
        restored_checkpoint_id=9,
        finished_on_restore=True,
    )


@pytest.mark.parametrize("restored", [None, b"", b'{"o1":{}}'])
def test_round_trip(restored: bytes | None) -> None:
    tdd = descriptor(restored)
    assert decode_deployment(encode_deployment(tdd)) == tdd


def test_an_unknown_operator_kind_is_a_malformed_descriptor() -> None:
    message = encode_deployment(descriptor(None))
    message.vertex.operators[0].kind = "teleport"
    with pytest.raises(JobGraphError, match="malformed task deployment"):
        decode_deployment(message)
