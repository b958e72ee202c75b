"""From the transformations the API records to the JobGraph the cluster runs."""

from weir.graph.execution_plan import execution_plan_json, job_graph_plan, job_graph_plan_json
from weir.graph.job_graph_generator import JobGraphResult, create_job_graph
from weir.graph.operator_ids import operator_ids, uid_to_operator_id
from weir.graph.stream_graph import StreamEdge, StreamGraph, StreamNode, build_stream_graph
from weir.graph.transformations import (
    ChainingStrategy,
    PartitionTransformation,
    PhysicalTransformation,
    Transformation,
    UnionTransformation,
)

__all__ = [
    "ChainingStrategy",
    "JobGraphResult",
    "PartitionTransformation",
    "PhysicalTransformation",
    "StreamEdge",
    "StreamGraph",
    "StreamNode",
    "Transformation",
    "UnionTransformation",
    "build_stream_graph",
    "create_job_graph",
    "execution_plan_json",
    "job_graph_plan",
    "job_graph_plan_json",
    "operator_ids",
    "uid_to_operator_id",
]
