"""Where PyFlink serialises an operator's output with its declared type, so that the
TaskManager codes it there and nowhere else (``weir.core.type_coders`` does the coding).

PyFlink runs each Python function in a Java operator of its own and serialises what it
emits with the declared output type wherever the record leaves Python, except where its
Python chaining (``python.operator-chaining.enabled``, on by default; Java's
``PythonOperatorChainingOptimizer``) fuses a function with the one before it into one
Python runner. Between fused functions a record is the Python object the first one made:
no Row names, no HashMap order, no FLOAT rounding, no type check. A function is fused with
the one before it when

* the one before is a Python function: a map, flat_map, filter or process function, keyed
  or not, a keyed reduce or aggregation, a window function, a co-map, co-flat_map or
  co-process function, or an async function (not a source, a timestamp assigner or a
  broadcast process function);
* it is run by a non-keyed Python process operator: a map, flat_map, filter or process
  function, an async function, ``key_by`` and ``partition_custom`` (each adds a process
  function that computes the key or the partition, so their key selector sees the record
  as made), ``assign_timestamps_and_watermarks`` with a timestamp assigner (its first step
  is a process function that calls the assigner) and ``print()`` of a Row type (a map that
  turns the Row into text);
* the one before has no other consumer (a side output counts as one), the edge between
  them is forward, their parallelism, max parallelism and slot sharing group are the same
  as they were set (``key_by``'s function takes the environment's parallelism and neither
  of the others), the one before may chain and the other chains always.

Every other output is serialised: to sinks, ``execute_and_collect()``, Java operators,
across shuffles, from sources, and side outputs (by their tag's type). Weir's own chaining
is separate: it decides which operators share a task, this module only what a record is
made when it reaches the next one.

The payload keys it adds to the producing operator: ``output_coder`` (a
``DeclaredTypeCoder``: its main output is coded), ``output_coded_after_routing`` (the coder
runs in the record writer of a ``key_by`` or ``partition_custom`` edge after the key is
taken from the record as made), and ``side_output_coders`` (tag id to coder).
"""

from __future__ import annotations

import enum
from typing import Any

from weir.common.typed_values import type_coder
from weir.common.typeinfo import RowTypeInfo
from weir.core import config
from weir.core.job_graph import OperatorKind, PartitionerKind
from weir.graph.stream_graph import StreamGraph, StreamNode
from weir.graph.transformations import ChainingStrategy

__all__ = ["coded_outputs"]

# Operators PyFlink runs as Python (keyed) (co-)process functions: the function after them
# may be fused with them.
_PYTHON_FUNCTIONS = frozenset(
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
# Run by PyFlink's non-keyed Python process operator: fused with the function before them.
_PROCESS_FUNCTIONS = frozenset(
    {
        OperatorKind.MAP,
        OperatorKind.FILTER,
        OperatorKind.FLAT_MAP,
        OperatorKind.PROCESS,
        OperatorKind.ASYNC_WAIT,
    }
)
# The edges key_by and partition_custom make: a process function before the shuffle.
_KEYING_PARTITIONERS = frozenset({PartitionerKind.KEY_GROUP, PartitionerKind.CUSTOM})


class _Fusion(enum.Enum):
    NONE = "none"
    """Serialised on its way to every consumer."""
    CONSUMER = "consumer"
    """Fused with its only consumer: the record reaches it as made."""
    PARTITIONER = "partitioner"
    """Fused with the function of its key_by or partition_custom: serialised after the
    key (or partition) is taken from the record as made."""


def coded_outputs(graph: StreamGraph) -> dict[int, dict[str, Any]]:
    """Per node id, the payload keys that say which of its outputs are coded."""
    fusion = {node.id: _fusion(graph, node) for node in graph.nodes.values()}
    found: dict[int, dict[str, Any]] = {}
    for node in graph.nodes.values():
        keys: dict[str, Any] = {}
        coder = _main_output_coder(graph, node, fusion)
        if coder is not None:
            keys["output_coder"] = coder
            if fusion[node.id] is _Fusion.PARTITIONER:
                keys["output_coded_after_routing"] = True
        side = {
            e.output_tag: c
            for e in node.out_edges
            if e.output_tag
            and (c := type_coder(e.output_type, what=f"side output {e.output_tag!r}")) is not None
        }
        if side:
            keys["side_output_coders"] = side
        if keys:
            found[node.id] = keys
    return found


def _main_output_coder(graph: StreamGraph, node: StreamNode, fusion: dict[int, _Fusion]) -> Any:
    if fusion[node.id] is _Fusion.CONSUMER or not any(not e.output_tag for e in node.out_edges):
        return None
    if node.kind is OperatorKind.SOURCE:
        # PyFlink's sources run in Java: their records are Java objects already, which
        # the next function reads back with the type. Nothing there refuses a record
        # as the Python coder would, so what does not fit is left as it is.
        return type_coder(node.output_type, strict=False)
    if node.kind is OperatorKind.TIMESTAMPS_WATERMARKS:
        # Java passes the records through: coded only when the timestamp assigner's
        # function was fused with the function before it (whose output it then carries).
        fused_into = any(fusion[e.source_id] is _Fusion.CONSUMER for e in node.in_edges)
        return type_coder(node.output_type) if fused_into else None
    return type_coder(node.output_type)


def _python_chaining(graph: StreamGraph) -> bool:
    return bool(config.get(graph.config, config.PYTHON_OPERATOR_CHAINING))


def _fusion(graph: StreamGraph, node: StreamNode) -> _Fusion:
    if (
        node.kind not in _PYTHON_FUNCTIONS
        or len(node.out_edges) != 1
        or node.chaining is ChainingStrategy.NEVER
        or not _python_chaining(graph)
    ):
        return _Fusion.NONE
    (edge,) = node.out_edges
    if edge.output_tag:
        return _Fusion.NONE
    made = node.transformation
    if edge.partitioner in _KEYING_PARTITIONERS:
        # key_by's (and partition_custom's) process function has the environment's
        # parallelism, no max parallelism and no slot sharing group of its own.
        default = config.get(graph.config, config.PARALLELISM_DEFAULT)
        if (
            node.parallelism == default
            and not made.max_parallelism
            and made.slot_sharing_group is None
        ):
            return _Fusion.PARTITIONER
        return _Fusion.NONE
    consumer = graph.nodes[edge.target_id]
    taken = consumer.transformation
    if (
        edge.partitioner is not PartitionerKind.FORWARD
        or len(consumer.in_edges) != 1
        or consumer.parallelism != node.parallelism
        or (taken.max_parallelism or -1) != (made.max_parallelism or -1)
        or taken.slot_sharing_group != made.slot_sharing_group
        or consumer.chaining is not ChainingStrategy.ALWAYS
    ):
        return _Fusion.NONE
    if _runs_as_process_function(consumer, node):
        return _Fusion.CONSUMER
    return _Fusion.NONE


def _runs_as_process_function(consumer: StreamNode, upstream: StreamNode) -> bool:
    """Whether PyFlink runs ``consumer`` (reading ``upstream``) in a non-keyed Python
    process operator that starts with a Python function."""
    if consumer.kind in _PROCESS_FUNCTIONS:
        return True
    if consumer.kind is OperatorKind.PRINT:
        # print() of a Row (or untyped) stream first maps it to text in Python.
        return upstream.output_type is None or isinstance(upstream.output_type, RowTypeInfo)
    if consumer.kind is OperatorKind.TIMESTAMPS_WATERMARKS:
        strategy = consumer.payload.get("watermark_strategy")
        return getattr(strategy, "_timestamp_assigner", None) is not None
    return False
