"""Execution plans as JSON in Flink's shape: a StreamGraph's (``env.get_execution_plan()``,
Flink's ``JSONGenerator``) and a JobGraph's (what ``weir info`` prints, Flink's
``JsonPlanGenerator``).

Both list nodes with Flink's keys (``id``, ``type``, ``pact``, ``contents``,
``parallelism``, ``predecessors``) and name an edge's partitioner as Flink's
partitioners print themselves (``ship_strategy``).
"""

from __future__ import annotations

import json
from typing import Any

from weir.core.job_graph import JobGraph, OperatorKind, PartitionerKind
from weir.graph.stream_graph import StreamGraph

__all__ = ["execution_plan_json", "job_graph_plan", "job_graph_plan_json"]

_SHIP_STRATEGY = {
    PartitionerKind.FORWARD: "FORWARD",
    PartitionerKind.REBALANCE: "REBALANCE",
    PartitionerKind.RESCALE: "RESCALE",
    PartitionerKind.SHUFFLE: "SHUFFLE",
    PartitionerKind.BROADCAST: "BROADCAST",
    PartitionerKind.GLOBAL: "GLOBAL",
    PartitionerKind.KEY_GROUP: "HASH",
    PartitionerKind.CUSTOM: "CUSTOM",
}
_SINKS = (OperatorKind.SINK, OperatorKind.PRINT, OperatorKind.COLLECT)


def execution_plan_json(graph: StreamGraph) -> str:
    """The StreamGraph's plan: one node per operator, in topological order."""
    nodes: list[dict[str, Any]] = []
    for node in graph.topological_order():
        if node.kind is OperatorKind.SOURCE:
            pact = "Data Source"
        elif node.kind in _SINKS:
            pact = "Data Sink"
        else:
            pact = "Operator"
        entry = _node(node.id, node.name, pact, node.name, node.parallelism)
        if node.in_edges:
            # Every input is "second": Flink's JSONGenerator decides the side after adding
            # the input to the list, which is then never empty.
            entry["predecessors"] = [
                _predecessor(e.source_id, e.partitioner, "second") for e in node.in_edges
            ]
        nodes.append(entry)
    return json.dumps({"nodes": nodes}, indent=2)


def job_graph_plan(graph: JobGraph) -> dict[str, Any]:
    """The JobGraph's plan: one node per vertex (a chain of operators), numbered from 1."""
    nodes = []
    index = {v.vertex_id: n for n, v in enumerate(graph.vertices, start=1)}
    for vertex in graph.vertices:
        if vertex.is_source:
            pact = "Data Source"
        elif not graph.outputs_of(vertex.vertex_id):
            pact = "Data Sink"
        else:
            pact = "Operator"
        node = _node(
            index[vertex.vertex_id],
            vertex.head.kind.value,
            pact,
            vertex.name,
            vertex.parallelism,
        )
        node["max_parallelism"] = vertex.max_parallelism
        node["operators"] = [
            {"id": op.operator_id, "name": op.name, "kind": op.kind.value, "uid": op.uid}
            for op in vertex.operators
        ]
        predecessors = [
            _predecessor(
                index[e.source_vertex], e.partitioner, "second" if e.input_index else "first"
            )
            for _, e in graph.inputs_of(vertex.vertex_id)
        ]
        if predecessors:
            node["predecessors"] = predecessors
        nodes.append(node)
    return {"jid": graph.job_id, "name": graph.job_name, "nodes": nodes}


def job_graph_plan_json(graph: JobGraph) -> str:
    return json.dumps(job_graph_plan(graph), indent=2)


def _node(node_id: int, kind: str, pact: str, contents: str, parallelism: int) -> dict[str, Any]:
    return {
        "id": node_id,
        "type": kind,
        "pact": pact,
        "contents": contents,
        "parallelism": parallelism,
    }


def _predecessor(source_id: int, partitioner: PartitionerKind, side: str) -> dict[str, Any]:
    return {"id": source_id, "ship_strategy": _SHIP_STRATEGY[partitioner], "side": side}
