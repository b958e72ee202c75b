"""Execution plans as JSON in Flink's shape: the StreamGraph's as PyFlink prints it
(``env.get_execution_plan()``) and a JobGraph's (what ``weir info`` prints, Flink's
``JsonPlanGenerator``).

PyFlink's plan is the StreamGraph of the Java job its API builds, which differs from ours
in ways a program can see:

- operators PyFlink adds: a ``_stream_key_by_map_operator`` before every ``key_by``
  (at the upstream's parallelism), a ``Map`` after ``get_side_output``,
  ``_partition_custom_map_operator`` and
  ``_keyed_stream_values_operator`` around a custom partitioning, a values operator
  before a sink on a keyed stream, a ``Map`` turning Python objects and Rows into strings
  before ``print()``, ``Extract-Timestamp`` / ``Timestamps/Watermarks`` /
  ``Remove-Timestamp`` for a timestamp assigner, ``Writer`` and ``Committer`` for a
  FileSink;
- consecutive Python operators of equal parallelism joined by a forward edge are fused
  into one node named ``"Map, Filter, ..."`` (whatever the chaining settings, except
  ``start_new_chain()`` and ``disable_chaining()``), described by the first one's
  description;
- nodes are listed by id with the sinks last, and the fused nodes, which get new ids,
  after the others.

The ids themselves are PyFlink's JVM-wide counters and are not reproduced; they are
consistent within one plan. The JSON is laid out as Jackson's pretty printer does.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from weir.common.typeinfo import PickledBytesTypeInfo, RowTypeInfo, TypeInformation
from weir.core.job_graph import JobGraph, OperatorKind, PartitionerKind
from weir.graph.stream_graph import StreamEdge, StreamGraph, StreamNode
from weir.graph.transformations import ChainingStrategy

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
# Operators PyFlink runs in its Python worker (and so may fuse).
_PYTHON = frozenset(
    {
        OperatorKind.MAP,
        OperatorKind.FILTER,
        OperatorKind.FLAT_MAP,
        OperatorKind.PROCESS,
        OperatorKind.KEYED_PROCESS,
        OperatorKind.REDUCE,
        OperatorKind.WINDOW,
        OperatorKind.CO_MAP,
        OperatorKind.CO_FLAT_MAP,
        OperatorKind.CO_PROCESS,
        OperatorKind.ASYNC_WAIT,
    }
)
_SINKS = frozenset({OperatorKind.SINK, OperatorKind.PRINT, OperatorKind.COLLECT})
_KEY_BY_MAP = "_stream_key_by_map_operator"
_CUSTOM_MAP = "_partition_custom_map_operator"
_VALUES = "_keyed_stream_values_operator"


@dataclass(eq=False)
class _PlanNode:
    """One node of PyFlink's StreamGraph, before fusion."""

    order: float
    """Where PyFlink would have created it among the others (its id order)."""
    name: str
    pact: str
    parallelism: int
    python: bool
    description: str | None = None
    sink: bool = False
    chaining: ChainingStrategy = ChainingStrategy.ALWAYS
    group: str = ""
    inputs: list[tuple[_PlanNode, str]] = field(default_factory=list)
    outputs: int = 0
    side_output: bool = False
    """It has an output read as a side output (PyFlink never fuses across one)."""


def execution_plan_json(graph: StreamGraph, default_parallelism: int = 1) -> str:
    """``graph`` as PyFlink's ``get_execution_plan()`` prints it (see the module docstring)."""
    nodes = _PlanBuilder(graph, default_parallelism).build()
    return _jackson({"nodes": _fused(nodes)})


class _PlanBuilder:
    def __init__(self, graph: StreamGraph, default_parallelism: int) -> None:
        self._graph = graph
        self._default = default_parallelism
        self._nodes: list[_PlanNode] = []
        self._last: dict[int, _PlanNode] = {}
        """The plan node whose output stands for each stream node's output."""
        self._shared: dict[tuple[int, int], _PlanNode] = {}
        """Operators one partitioning or side output adds, by (its transformation, kind)."""

    def _add(self, node: _PlanNode, inputs: list[tuple[_PlanNode, str]]) -> _PlanNode:
        # Edges of a union that meet again in one added operator (a key_by map) are one.
        node.inputs = []
        for upstream, strategy in inputs:
            if all(up is not upstream for up, _ in node.inputs):
                node.inputs.append((upstream, strategy))
                upstream.outputs += 1
        self._nodes.append(node)
        return node

    def build(self) -> list[_PlanNode]:
        for node in self._graph.topological_order():
            self._expand(node)
        return self._nodes

    def _python(self, order: float, name: str, parallelism: int, node: StreamNode) -> _PlanNode:
        return _PlanNode(order, name, "Operator", parallelism, True, group=node.slot_sharing_group)

    def _input(self, edge: StreamEdge, node: StreamNode) -> tuple[_PlanNode, str]:
        """The plan node feeding ``edge`` into ``node``, with the ship strategy, adding the
        operators PyFlink puts around a partitioning."""
        upstream = self._last[edge.source_id]
        if edge.output_tag:
            upstream.side_output = True
            # PyFlink's get_side_output maps the side output to its tag's type.
            side = edge.side_output_id if edge.side_output_id is not None else node.id
            key = (side, 2)
            mapper = self._shared.get(key)
            if mapper is None:
                mapper = self._add(
                    self._python(side, "Map", self._default, node),
                    [(upstream, _strategy(upstream, self._default))],
                )
                self._shared[key] = mapper
            upstream = mapper
        kind = edge.partitioner
        if edge.partition_id is None:  # the default: forward unless the parallelism changes
            return upstream, _strategy(upstream, node.parallelism)
        if kind not in (PartitionerKind.KEY_GROUP, PartitionerKind.CUSTOM):
            return upstream, _SHIP_STRATEGY[kind]
        partition = edge.partition_id if edge.partition_id is not None else node.id
        name = _KEY_BY_MAP if kind is PartitionerKind.KEY_GROUP else _CUSTOM_MAP
        # One map per key_by: a key_by of a union reads every stream of the union.
        key = (partition, 0)
        mapper = self._shared.get(key)
        if mapper is None:
            mapper = self._add(
                self._python(partition, name, upstream.parallelism, node),
                [(upstream, "FORWARD")],
            )
            self._shared[key] = mapper
        elif all(up is not upstream for up, _ in mapper.inputs):
            mapper.inputs.append((upstream, _strategy(upstream, mapper.parallelism)))
            upstream.outputs += 1
        strategy = _SHIP_STRATEGY[kind]
        if kind is PartitionerKind.CUSTOM:
            # partition_custom hands on the values again, at the default parallelism.
            key = (partition, 1)
            values = self._shared.get(key)
            if values is None:
                values = self._add(
                    self._python(partition + 0.5, _VALUES, self._default, node),
                    [(mapper, strategy)],
                )
                self._shared[key] = values
            return values, _strategy(values, node.parallelism)
        return mapper, strategy

    def _expand(self, node: StreamNode) -> None:
        kind = node.kind
        if kind is OperatorKind.SOURCE:
            self._last[node.id] = self._add(
                _PlanNode(node.id, node.name, "Data Source", node.parallelism, False), []
            )
            return
        if kind in _SINKS:
            self._expand_sink(node)
            return
        inputs = [self._input(e, node) for e in _sorted_inputs(node)]
        if kind is OperatorKind.TIMESTAMPS_WATERMARKS:
            self._expand_timestamps(node, inputs)
            return
        plan_node = _PlanNode(
            node.id,
            node.name,
            "Operator",
            node.parallelism,
            # project() is a Java operator in PyFlink.
            kind in _PYTHON and "projection" not in node.payload,
            description=node.transformation.description,
            chaining=node.chaining,
            group=node.slot_sharing_group,
        )
        self._last[node.id] = self._add(plan_node, inputs)

    def _expand_timestamps(self, node: StreamNode, inputs: list[tuple[_PlanNode, str]]) -> None:
        strategy = node.payload.get("watermark_strategy")
        if getattr(strategy, "timestamp_assigner", None) is None:
            # The Java operator alone, at its input's parallelism.
            parallelism = inputs[0][0].parallelism if inputs else node.parallelism
            self._last[node.id] = self._add(
                _PlanNode(node.id, node.name, "Operator", parallelism, False), inputs
            )
            return
        extract = self._add(
            self._python(node.id - 0.6, "Extract-Timestamp", self._default, node),
            [(up, _strategy(up, self._default, s)) for up, s in inputs],
        )
        assign = self._add(
            _PlanNode(node.id - 0.3, "Timestamps/Watermarks", "Operator", self._default, False),
            [(extract, "FORWARD")],
        )
        self._last[node.id] = self._add(
            _PlanNode(node.id, "Remove-Timestamp", "Operator", node.parallelism, False),
            [(assign, _strategy(assign, node.parallelism))],
        )

    def _expand_sink(self, node: StreamNode) -> None:
        inputs: list[tuple[_PlanNode, str]] = []
        for edge in _sorted_inputs(node):
            upstream, strategy = self._input(edge, node)
            if edge.partitioner is PartitionerKind.KEY_GROUP:
                # A sink on a KeyedStream: PyFlink first drops the key again.
                values = self._add(
                    self._python(node.id - 0.6, _VALUES, self._default, node),
                    [(upstream, strategy)],
                )
                upstream, strategy = values, "FORWARD"
            inputs.append((upstream, strategy))
        first = node.in_edges[0]
        stream_type = first.output_type if first.output_tag else self._type_of(first.source_id)
        if node.kind is OperatorKind.PRINT and _printed_through_a_map(stream_type):
            converter = self._add(
                self._python(node.id - 0.3, "Map", self._default, node),
                [(up, _strategy(up, self._default, s)) for up, s in inputs],
            )
            inputs = [(converter, "FORWARD")]
        inputs = [(up, _strategy(up, node.parallelism, s)) for up, s in inputs]
        function = node.payload.get("function")
        if node.kind is OperatorKind.SINK and type(function).__name__ == "FileSink":
            writer = self._add(
                _PlanNode(node.id, "Sink: Writer", "Operator", node.parallelism, False, sink=True),
                inputs,
            )
            self._add(
                _PlanNode(
                    node.id + 0.5, "Sink: Committer", "Operator", node.parallelism, False, sink=True
                ),
                [(writer, "FORWARD")],
            )
            return
        self._add(
            _PlanNode(node.id, node.name, "Data Sink", node.parallelism, False, sink=True), inputs
        )

    def _type_of(self, node_id: int) -> TypeInformation | None:
        return self._graph.nodes[node_id].output_type


def _sorted_inputs(node: StreamNode) -> list[StreamEdge]:
    return sorted(node.in_edges, key=lambda e: e.input_index)


def _strategy(upstream: _PlanNode, parallelism: int, strategy: str = "FORWARD") -> str:
    """A forward edge between different parallelisms becomes a rebalance, as in Flink."""
    if strategy == "FORWARD" and upstream.parallelism != parallelism:
        return "REBALANCE"
    return strategy


def _printed_through_a_map(stream_type: TypeInformation | None) -> bool:
    """PyFlink's ``print()`` first maps pickled Python objects and Rows to strings."""
    return stream_type is None or isinstance(stream_type, (PickledBytesTypeInfo, RowTypeInfo))


# --- fusion --------------------------------------------------------------------------


def _fusable(upstream: _PlanNode, downstream: _PlanNode, strategy: str) -> bool:
    return (
        upstream.python
        and downstream.python
        and strategy == "FORWARD"
        and upstream.parallelism == downstream.parallelism
        and upstream.outputs == 1
        and not upstream.side_output
        and len(downstream.inputs) == 1
        and upstream.group == downstream.group
        and upstream.chaining is not ChainingStrategy.NEVER
        and downstream.chaining is ChainingStrategy.ALWAYS
    )


def _fused(nodes: list[_PlanNode]) -> list[dict[str, Any]]:
    """The plan's JSON nodes after PyFlink fuses its Python operators."""
    head: dict[int, _PlanNode] = {}
    chains: dict[int, list[_PlanNode]] = {}
    for node in sorted(nodes, key=lambda n: n.order):
        inputs = node.inputs
        if len(inputs) == 1 and _fusable(inputs[0][0], node, inputs[0][1]):
            first = head[id(inputs[0][0])]
        else:
            first = node
        head[id(node)] = first
        chains.setdefault(id(first), []).append(node)
    heads = [n for n in sorted(nodes, key=lambda n: n.order) if head[id(n)] is n]
    single = [h for h in heads if len(chains[id(h)]) == 1 and not h.sink]
    fused = [h for h in heads if len(chains[id(h)]) > 1]
    sinks = [h for h in heads if len(chains[id(h)]) == 1 and h.sink]
    ordered = single + fused + sinks
    # Ids in listing order: single nodes by creation, then fused ones (PyFlink gives them
    # new, larger ids), then sinks; a fused chain is known by its last node's output.
    ids = {id(h): i for i, h in enumerate(ordered, start=1)}
    tail_id = {id(n): ids[id(head[id(n)])] for n in nodes}
    out: list[dict[str, Any]] = []
    for h in ordered:
        chain = chains[id(h)]
        name = ", ".join(n.name for n in chain)
        entry: dict[str, Any] = {
            "id": ids[id(h)],
            "type": name,
            "pact": h.pact,
            "contents": h.description or name,
            "parallelism": h.parallelism,
        }
        if h.inputs:
            entry["predecessors"] = [
                {"id": tail_id[id(up)], "ship_strategy": strategy, "side": "second"}
                for up, strategy in h.inputs
            ]
        out.append(entry)
    return out


# --- Jackson's pretty printer ---------------------------------------------------------


def _jackson(value: Any, indent: int = 0) -> str:
    """``json`` laid out as Jackson's DefaultPrettyPrinter does (``"key" : value``,
    arrays opened on the same line as their first object)."""
    pad = "  " * indent
    if isinstance(value, dict):
        if not value:
            return "{ }"
        inner = ",\n".join(
            f"{pad}  {json.dumps(k, ensure_ascii=False)} : {_jackson(v, indent + 1)}"
            for k, v in value.items()
        )
        return "{\n" + inner + "\n" + pad + "}"
    if isinstance(value, list):
        if not value:
            return "[ ]"
        return "[ " + ", ".join(_jackson(v, indent) for v in value) + " ]"
    return json.dumps(value, ensure_ascii=False)


# --- the JobGraph's plan ---------------------------------------------------------------


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
