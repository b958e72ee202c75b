"""The execution plan as JSON in Flink's shape (``env.get_execution_plan()``)."""

from __future__ import annotations

import json
from typing import Any

from weir.core.job_graph import OperatorKind, PartitionerKind
from weir.graph.stream_graph import StreamGraph

__all__ = ["execution_plan_json"]

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
    nodes: list[dict[str, Any]] = []
    for node in graph.topological_order():
        if node.kind is OperatorKind.SOURCE:
            pact = "Data Source"
        elif node.kind in _SINKS:
            pact = "Data Sink"
        else:
            pact = "Operator"
        entry: dict[str, Any] = {
            "id": node.id,
            "type": node.name,
            "pact": pact,
            "contents": node.name,
            "parallelism": node.parallelism,
        }
        if node.in_edges:
            entry["predecessors"] = [
                {
                    "id": e.source_id,
                    "ship_strategy": _SHIP_STRATEGY[e.partitioner],
                    "side": "second",
                }
                for e in node.in_edges
            ]
        nodes.append(entry)
    return json.dumps({"nodes": nodes}, indent=2)
