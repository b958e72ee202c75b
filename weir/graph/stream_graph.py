"""The StreamGraph: one node per operator, edges with resolved partitioners and parallelism."""

from __future__ import annotations

import heapq
from dataclasses import dataclass, field
from typing import Any

from weir.common.typeinfo import TypeInformation
from weir.core.errors import JobGraphError
from weir.core.job_graph import OperatorKind, PartitionerKind
from weir.core.key_groups import default_max_parallelism
from weir.graph.adaptive_batch import AdaptiveBatchParallelism, Decision, InputEdge
from weir.graph.transformations import (
    ChainingStrategy,
    PartitionTransformation,
    PhysicalTransformation,
    SideOutputTransformation,
    Transformation,
    UnionTransformation,
)

__all__ = ["StreamEdge", "StreamGraph", "StreamNode", "build_stream_graph"]

DEFAULT_SLOT_SHARING_GROUP = "default"
# Flink names sources and sinks in the graph it builds, whatever name the program gave.
_PREFIXES = {
    OperatorKind.SOURCE: "Source: ",
    OperatorKind.PRINT: "Sink: ",
    OperatorKind.SINK: "Sink: ",
}


@dataclass(eq=False)
class StreamEdge:
    source_id: int
    target_id: int
    input_index: int
    partitioner: PartitionerKind
    partitioner_payload: dict[str, Any]
    output_tag: str = ""
    """The side output of the source node this edge carries; empty for the main output."""
    output_type: TypeInformation | None = None
    """The type of the records on this edge when it is a side output's (the tag's)."""
    partition_id: int | None = None
    """The id of the partition transformation (``key_by``, ``rebalance``, ...) that set
    this edge's partitioner; None for a default one."""
    side_output_id: int | None = None
    """The id of the ``get_side_output`` transformation this edge reads; None for the main
    output."""


@dataclass(eq=False)
class StreamNode:
    id: int
    name: str
    kind: OperatorKind
    parallelism: int
    max_parallelism: int
    slot_sharing_group: str
    chaining: ChainingStrategy
    uid: str | None
    uid_hash: str | None
    payload: dict[str, Any]
    input_count: int
    output_type: TypeInformation | None
    transformation: PhysicalTransformation
    in_edges: list[StreamEdge] = field(default_factory=list)
    out_edges: list[StreamEdge] = field(default_factory=list)


@dataclass(eq=False)
class StreamGraph:
    job_name: str
    nodes: dict[int, StreamNode]
    edges: list[StreamEdge]
    chaining_enabled: bool
    config: dict[str, str] = field(default_factory=dict)
    job_parameters: dict[str, str] = field(default_factory=dict)

    def topological_order(self) -> list[StreamNode]:
        """Nodes with every input before them; ties broken by creation order (stable)."""
        pending = {nid: len({e.source_id for e in n.in_edges}) for nid, n in self.nodes.items()}
        ready = [nid for nid, count in pending.items() if count == 0]
        heapq.heapify(ready)
        order: list[StreamNode] = []
        while ready:
            nid = heapq.heappop(ready)
            order.append(self.nodes[nid])
            for target in sorted({e.target_id for e in self.nodes[nid].out_edges}):
                pending[target] -= 1
                if pending[target] == 0:
                    heapq.heappush(ready, target)
        if len(order) != len(self.nodes):
            msg = "the program's operators form a cycle"
            raise JobGraphError(msg)
        return order

    def is_chainable(self, edge: StreamEdge) -> bool:
        """Flink's rule: forward edge, equal parallelism, same slot sharing group, the
        downstream has exactly this one input edge, and neither side forbids chaining."""
        upstream = self.nodes[edge.source_id]
        downstream = self.nodes[edge.target_id]
        return (
            self.chaining_enabled
            and edge.partitioner is PartitionerKind.FORWARD
            and not edge.output_tag
            and len(downstream.in_edges) == 1
            and upstream.parallelism == downstream.parallelism
            and upstream.slot_sharing_group == downstream.slot_sharing_group
            and upstream.chaining is not ChainingStrategy.NEVER
            and downstream.chaining is ChainingStrategy.ALWAYS
        )


def _collect(sinks: list[Transformation]) -> list[Transformation]:
    seen: dict[int, Transformation] = {}
    stack = list(sinks)
    while stack:
        t = stack.pop()
        if t.id in seen:
            continue
        seen[t.id] = t
        stack.extend(t.inputs)
    return [seen[i] for i in sorted(seen)]


def build_stream_graph(
    transformations: list[Transformation],
    *,
    job_name: str,
    default_parallelism: int,
    default_max_parallelism_setting: int,
    chaining_enabled: bool,
    adaptive_batch: AdaptiveBatchParallelism | None = None,
) -> StreamGraph:
    """Translate the recorded transformations (and everything they read from); with
    ``adaptive_batch``, the parallelism of operators that set none is decided by it."""
    if not transformations:
        msg = (
            "No operators defined in streaming topology. Cannot execute. Add a sink "
            "(print(), add_sink(), execute_and_collect()) or another operation to a stream."
        )
        raise JobGraphError(msg)
    all_transformations = _collect(transformations)
    nodes: dict[int, StreamNode] = {}
    edges: list[StreamEdge] = []
    decisions: dict[int, Decision] = {}
    for t in all_transformations:
        if not isinstance(t, PhysicalTransformation):
            continue
        decided = None
        if adaptive_batch is not None:
            decided = _decide(
                adaptive_batch,
                t,
                nodes=nodes,
                decisions=decisions,
                default_parallelism=default_parallelism,
                default_max=default_max_parallelism_setting,
            )
            decisions[t.id] = decided
        node = _make_node(t, nodes, default_parallelism, default_max_parallelism_setting, decided)
        nodes[t.id] = node
        for index, upstream in enumerate(t.input_streams):
            for source_id, partition, payload, side in _resolve(upstream):
                partitioner = None if partition is None else partition.partitioner
                edge = _make_edge(nodes[source_id], node, index, partitioner, payload)
                edge.partition_id = None if partition is None else partition.id
                if side is not None:
                    edge.output_tag, edge.output_type = side.tag_id, side.output_type
                    edge.side_output_id = side.id
                nodes[source_id].out_edges.append(edge)
                node.in_edges.append(edge)
                edges.append(edge)
    return StreamGraph(job_name, nodes, edges, chaining_enabled)


_Resolved = tuple[
    int, PartitionTransformation | None, dict[str, Any], SideOutputTransformation | None
]


def _resolve(t: Transformation) -> list[_Resolved]:
    """The physical operators behind ``t``, the partition a virtual node put on them, and
    the side output read from them (None: the main output)."""
    if isinstance(t, PhysicalTransformation):
        return [(t.id, None, {}, None)]
    if isinstance(t, PartitionTransformation):
        assert t.input is not None
        return [(nid, t, t.partitioner_payload, side) for nid, _, _, side in _resolve(t.input)]
    if isinstance(t, SideOutputTransformation):
        assert t.input is not None
        return [(nid, partition, payload, t) for nid, partition, payload, _ in _resolve(t.input)]
    if isinstance(t, UnionTransformation):
        return [resolved for upstream in t.union_inputs for resolved in _resolve(upstream)]
    msg = f"unknown transformation {t!r}"
    raise JobGraphError(msg)


def _decide(
    adaptive: AdaptiveBatchParallelism,
    t: PhysicalTransformation,
    *,
    nodes: dict[int, StreamNode],
    decisions: dict[int, Decision],
    default_parallelism: int,
    default_max: int,
) -> Decision:
    source = t.payload.get("source") if t.kind is OperatorKind.SOURCE else None
    own = _declared_parallelism(t, default_parallelism)
    inputs = [
        InputEdge(
            decisions[source_id],
            # As Flink's graph: an edge without a partitioning is forward only between
            # operators of the same parallelism as the program declared them (the job's for
            # those that set none); otherwise a rebalance.
            partitioned=partition is not None
            or _declared_parallelism(nodes[source_id].transformation, default_parallelism) != own,
            broadcast=partition is not None and partition.partitioner is PartitionerKind.BROADCAST,
        )
        for upstream in t.input_streams
        for source_id, partition, _, _ in _resolve(upstream)
    ]
    if t.non_parallel or t.parallelism:
        return adaptive.fixed(1 if t.non_parallel else t.parallelism or 1, source, inputs)
    max_parallelism = t.max_parallelism if t.max_parallelism and t.max_parallelism > 0 else None
    if max_parallelism is None and default_max > 0:
        max_parallelism = default_max
    if t.kind is OperatorKind.SOURCE:
        return adaptive.source(source, max_parallelism)
    return adaptive.operator(inputs, max_parallelism)


def _declared_parallelism(t: PhysicalTransformation, default_parallelism: int) -> int:
    return 1 if t.non_parallel else (t.parallelism or default_parallelism)


def _make_node(
    t: PhysicalTransformation,
    nodes: dict[int, StreamNode],
    default_parallelism: int,
    default_max: int,
    decided: Decision | None = None,
) -> StreamNode:
    parallelism = 1 if t.non_parallel else (t.parallelism or default_parallelism)
    if decided is not None:
        parallelism = decided.parallelism
    if t.max_parallelism is not None and t.max_parallelism > 0:
        max_parallelism = t.max_parallelism
    elif decided is not None and decided.max_parallelism is not None:
        max_parallelism = decided.max_parallelism
    elif default_max > 0:
        max_parallelism = default_max
    else:
        max_parallelism = default_max_parallelism(parallelism)
    if max_parallelism < parallelism:
        msg = (
            f"operator {t.name!r}: parallelism {parallelism} is larger than its max "
            f"parallelism {max_parallelism}; raise the max parallelism or lower the "
            f"parallelism"
        )
        raise JobGraphError(msg)
    group = t.slot_sharing_group
    if group is None:
        upstream_groups = {
            nodes[nid].slot_sharing_group
            for upstream in t.input_streams
            for nid, _, _, _ in _resolve(upstream)
        }
        group = upstream_groups.pop() if len(upstream_groups) == 1 else DEFAULT_SLOT_SHARING_GROUP
    return StreamNode(
        id=t.id,
        name=_PREFIXES.get(t.kind, "") + t.name,
        kind=t.kind,
        parallelism=parallelism,
        max_parallelism=max_parallelism,
        slot_sharing_group=group,
        chaining=t.chaining,
        uid=t.uid,
        uid_hash=t.uid_hash,
        payload=t.payload,
        input_count=len(t.input_streams),
        output_type=t.output_type,
        transformation=t,
    )


def _make_edge(
    upstream: StreamNode,
    downstream: StreamNode,
    input_index: int,
    partitioner: PartitionerKind | None,
    payload: dict[str, Any],
) -> StreamEdge:
    same = upstream.parallelism == downstream.parallelism
    if partitioner is None:
        partitioner = PartitionerKind.FORWARD if same else PartitionerKind.REBALANCE
    elif partitioner is PartitionerKind.FORWARD and not same:
        msg = (
            f"Forward partitioning does not allow change of parallelism. Upstream operation: "
            f"{upstream.name!r} parallelism: {upstream.parallelism}, downstream operation: "
            f"{downstream.name!r} parallelism: {downstream.parallelism}. You must use another "
            f"partitioning strategy, such as broadcast, rebalance, shuffle or global."
        )
        raise JobGraphError(msg)
    return StreamEdge(upstream.id, downstream.id, input_index, partitioner, payload)
