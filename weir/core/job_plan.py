"""A JobGraph as Flink's REST API shows it (``JobPlanInfo``, ``/jobs/{id}/plan``): one node
per JobVertex with its chained operators in the description, and its inputs with the
ship strategy of each edge."""

from __future__ import annotations

from typing import Any

from weir.core.job_graph import JobGraph, PartitionerKind

__all__ = ["SHIP_STRATEGIES", "job_plan"]

# Flink's names for the partitioners, as its plan shows them.
SHIP_STRATEGIES = {
    PartitionerKind.FORWARD: "FORWARD",
    PartitionerKind.REBALANCE: "REBALANCE",
    PartitionerKind.RESCALE: "RESCALE",
    PartitionerKind.SHUFFLE: "SHUFFLE",
    PartitionerKind.BROADCAST: "BROADCAST",
    PartitionerKind.GLOBAL: "GLOBAL",
    PartitionerKind.KEY_GROUP: "HASH",
    PartitionerKind.CUSTOM: "CUSTOM",
}


def job_plan(graph: JobGraph) -> dict[str, Any]:
    """``{"jid", "name", "type", "nodes": [...]}`` with Flink's field names."""
    nodes = []
    for vertex in graph.vertices:
        inputs = [
            {
                "num": edge.input_index,
                "id": str(edge.source_vertex),
                "ship_strategy": SHIP_STRATEGIES.get(edge.partitioner, edge.partitioner.name),
                "exchange": "pipelined_bounded",
            }
            for edge in graph.edges
            if edge.target_vertex == vertex.vertex_id
        ]
        node: dict[str, Any] = {
            "id": str(vertex.vertex_id),
            "parallelism": vertex.parallelism,
            "maxParallelism": vertex.max_parallelism,
            "operator": "",
            "operator_strategy": "",
            "description": " -> ".join(op.name for op in vertex.operators) or vertex.name,
            "optimizer_properties": {},
        }
        if inputs:
            node["inputs"] = inputs
        nodes.append(node)
    return {"jid": str(graph.job_id), "name": graph.job_name, "type": "STREAMING", "nodes": nodes}
