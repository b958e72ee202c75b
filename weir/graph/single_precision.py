"""Which operator outputs PyFlink serialises, so that their FLOAT values reach the next
function rounded to 32 bits (``weir.taskmanager.operators.float_rounding`` rounds them).

PyFlink runs each Python function in an operator of its own and serialises every record
between operators, with the declared type, except where its Python chaining
(``python.operator-chaining.enabled``, on by default) fuses a function with the one
before it: the downstream one is a plain map, filter, flat_map or process function, the
upstream one a Python function too, the edge between them forward, their parallelism,
max parallelism and slot sharing group equal, the downstream one may chain, and the
upstream one has no other consumer. Sources, timestamp assigners and broadcast functions
are never fused, and neither is a side output. ``print()`` counts as fused: PyFlink
prints a typed record as Java renders it, which the rounding does not change, and turns
a Row into text in a Python function fused with the one before it.

The TaskManager's operator chains keep Weir's own chaining; this module only says where a
value would have been serialised, as payload keys of the producing operator:
``float_output`` (the spec of its declared type, when its main output is serialised) and
``float_side_outputs`` (tag id to spec, for its side outputs).
"""

from __future__ import annotations

from typing import Any

from weir.common.typeinfo import single_precision_spec
from weir.core.job_graph import OperatorKind, PartitionerKind
from weir.graph.stream_graph import StreamGraph, StreamNode
from weir.graph.transformations import ChainingStrategy

__all__ = ["single_precision_outputs"]

# Operators PyFlink runs as Python (keyed) (co-)process functions: they may be fused with
# the plain function after them.
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
    }
)
# What PyFlink fuses to the function before it.
_FUSED_AFTER = frozenset(
    {
        OperatorKind.MAP,
        OperatorKind.FILTER,
        OperatorKind.FLAT_MAP,
        OperatorKind.PROCESS,
        OperatorKind.PRINT,
    }
)


def single_precision_outputs(graph: StreamGraph, node: StreamNode) -> dict[str, Any]:
    """The payload keys saying which outputs of ``node`` round their FLOAT values."""
    found: dict[str, Any] = {}
    main = single_precision_spec(node.output_type)
    if main is not None and not _fused_with_its_consumer(graph, node):
        found["float_output"] = main
    side = {
        e.output_tag: spec
        for e in node.out_edges
        if e.output_tag and (spec := single_precision_spec(e.output_type)) is not None
    }
    if side:
        found["float_side_outputs"] = side
    return found


def _fused_with_its_consumer(graph: StreamGraph, node: StreamNode) -> bool:
    if node.kind not in _PYTHON_FUNCTIONS or len(node.out_edges) != 1:
        return False
    (edge,) = node.out_edges
    consumer = graph.nodes[edge.target_id]
    return (
        consumer.kind in _FUSED_AFTER
        and not edge.output_tag
        and edge.partitioner is PartitionerKind.FORWARD
        and len(consumer.in_edges) == 1
        and consumer.parallelism == node.parallelism
        and consumer.max_parallelism == node.max_parallelism
        and consumer.slot_sharing_group == node.slot_sharing_group
        and node.chaining is not ChainingStrategy.NEVER
        and consumer.chaining is ChainingStrategy.ALWAYS
    )
