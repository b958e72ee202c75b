"""A JobGraph as Flink's JSON execution plan (what `weir info` prints)."""

from __future__ import annotations

import json

from weir.core.job_graph import JobGraph, PartitionerKind

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


def job_graph_plan(graph: JobGraph) -> dict[str, object]:
    nodes = []
    index = {v.vertex_id: n for n, v in enumerate(graph.vertices, start=1)}
    for vertex in graph.vertices:
        predecessors = [
            {
                "id": index[e.source_vertex],
                "ship_strategy": _SHIP_STRATEGY[e.partitioner],
                "side": "second" if e.input_index else "first",
            }
            for _, e in graph.inputs_of(vertex.vertex_id)
        ]
        node: dict[str, object] = {
            "id": index[vertex.vertex_id],
            "type": vertex.head.kind.value,
            "pact": "Data Source"
            if vertex.is_source
            else ("Data Sink" if not graph.outputs_of(vertex.vertex_id) else "Operator"),
            "contents": vertex.name,
            "parallelism": vertex.parallelism,
            "max_parallelism": vertex.max_parallelism,
            "operators": [
                {"id": op.operator_id, "name": op.name, "kind": op.kind.value, "uid": op.uid}
                for op in vertex.operators
            ],
        }
        if predecessors:
            node["predecessors"] = predecessors
        nodes.append(node)
    return {"jid": graph.job_id, "name": graph.job_name, "nodes": nodes}


def job_graph_plan_json(graph: JobGraph) -> str:
    return json.dumps(job_graph_plan(graph), indent=2)
