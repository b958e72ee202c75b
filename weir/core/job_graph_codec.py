"""JobGraph <-> bytes, through ``JobGraphProto`` (proto/common.proto)."""

from __future__ import annotations

from google.protobuf.message import DecodeError

from weir.core.config import check_no_nul
from weir.core.errors import JobGraphError
from weir.core.ids import JobVertexId, OperatorId, parse_job_id
from weir.core.job_graph import (
    JobEdge,
    JobGraph,
    JobVertex,
    OperatorDescriptor,
    OperatorKind,
    PartitionerKind,
    SerializerKind,
)
from weir.proto import common_pb2


def encode_job_graph(graph: JobGraph) -> bytes:
    message = common_pb2.JobGraphProto(
        job_id=graph.job_id,
        job_name=graph.job_name,
        config=dict(graph.config),
        job_parameters=dict(graph.job_parameters),
    )
    for vertex in graph.vertices:
        message.vertices.append(vertex_to_proto(vertex))
    for edge in graph.edges:
        message.edges.append(edge_to_proto(edge))
    return message.SerializeToString()


def decode_job_graph(data: bytes) -> JobGraph:
    """Decode and validate; any problem is a JobGraphError saying what was wrong."""
    message = common_pb2.JobGraphProto()
    try:
        message.ParseFromString(data)
    except (DecodeError, ValueError) as exc:
        msg = (
            f"the submitted JobGraph ({len(data)} bytes) cannot be decoded: {exc}; submit a "
            "JobGraph built by weir (StreamExecutionEnvironment.execute or `weir run`)"
        )
        raise JobGraphError(msg) from exc
    try:
        graph = JobGraph(
            job_id=parse_job_id(message.job_id),
            job_name=message.job_name,
            vertices=tuple(vertex_from_proto(v) for v in message.vertices),
            edges=tuple(edge_from_proto(e) for e in message.edges),
            config=dict(message.config),
            job_parameters=dict(message.job_parameters),
        )
    except ValueError as exc:
        msg = f"the submitted JobGraph is malformed: {exc}"
        raise JobGraphError(msg) from exc
    for key, value in graph.config.items():
        check_no_nul(key, value)  # a client of this version refuses it before submitting
    graph.validate()
    return graph


def vertex_to_proto(vertex: JobVertex) -> common_pb2.JobVertexProto:
    v = common_pb2.JobVertexProto(
        vertex_id=vertex.vertex_id,
        name=vertex.name,
        parallelism=vertex.parallelism,
        max_parallelism=vertex.max_parallelism,
        slot_sharing_group=vertex.slot_sharing_group,
    )
    for op in vertex.operators:
        v.operators.add(
            operator_id=op.operator_id,
            name=op.name,
            kind=op.kind.value,
            payload=op.payload,
            chained_outputs=list(op.chained_outputs),
            uid=op.uid or "",
            has_uid=op.uid is not None,
            input_count=op.input_count,
        )
    return v


def vertex_from_proto(v: common_pb2.JobVertexProto) -> JobVertex:
    """Raises ValueError on an unknown operator kind."""
    return JobVertex(
        vertex_id=JobVertexId(v.vertex_id),
        name=v.name,
        parallelism=v.parallelism,
        max_parallelism=v.max_parallelism,
        slot_sharing_group=v.slot_sharing_group,
        operators=tuple(
            OperatorDescriptor(
                operator_id=OperatorId(op.operator_id),
                name=op.name,
                kind=OperatorKind(op.kind),
                payload=op.payload,
                chained_outputs=tuple(OperatorId(o) for o in op.chained_outputs),
                uid=op.uid if op.has_uid else None,
                input_count=op.input_count,
            )
            for op in v.operators
        ),
    )


def edge_to_proto(edge: JobEdge) -> common_pb2.JobEdgeProto:
    return common_pb2.JobEdgeProto(
        source_vertex=edge.source_vertex,
        source_operator=edge.source_operator,
        target_vertex=edge.target_vertex,
        input_index=edge.input_index,
        partitioner=edge.partitioner.value,
        partitioner_payload=edge.partitioner_payload,
        serializer=edge.serializer.value,
        output_tag=edge.output_tag,
    )


def edge_from_proto(e: common_pb2.JobEdgeProto) -> JobEdge:
    """Raises ValueError on an unknown partitioner or serializer."""
    return JobEdge(
        source_vertex=JobVertexId(e.source_vertex),
        source_operator=OperatorId(e.source_operator),
        target_vertex=JobVertexId(e.target_vertex),
        input_index=e.input_index,
        partitioner=PartitionerKind(e.partitioner),
        partitioner_payload=e.partitioner_payload,
        serializer=SerializerKind(e.serializer),
        output_tag=e.output_tag,
    )
