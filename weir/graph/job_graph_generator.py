"""StreamGraph -> JobGraph: chaining operators into vertices and pickling their functions."""

from __future__ import annotations

import heapq
import logging
from collections.abc import Mapping
from typing import Any

import cloudpickle

from weir.common.typeinfo import serializer_kind_of
from weir.core import config as config_keys
from weir.core.errors import JobGraphError
from weir.core.ids import JobId, JobVertexId, OperatorId, new_job_id
from weir.core.job_graph import (
    JobEdge,
    JobGraph,
    JobVertex,
    OperatorDescriptor,
    OperatorKind,
)
from weir.core.local_paths import absolute_local_path
from weir.graph.coded_outputs import coded_outputs
from weir.graph.columns_read import columns_read
from weir.graph.operator_ids import operator_ids
from weir.graph.python_dependencies import (
    pack_python_archives,
    pack_python_files,
    pack_python_requirements,
)
from weir.graph.stream_graph import StreamEdge, StreamGraph, StreamNode
from weir.graph.user_code import shipping_user_modules

__all__ = ["JobGraphResult", "create_job_graph"]

logger = logging.getLogger(__name__)


class JobGraphResult:
    """The JobGraph and the operator id given to each stream node."""

    def __init__(self, job_graph: JobGraph, operator_ids: dict[int, OperatorId]) -> None:
        self.job_graph = job_graph
        self.operator_ids = operator_ids


def _pickle(what: dict[str, Any], description: str) -> bytes:
    try:
        return cloudpickle.dumps(what)
    except Exception as exc:  # pickling raises anything the object's __reduce__ raises
        msg = (
            f"{description} cannot be pickled: {type(exc).__name__}: {exc}. Functions are "
            f"pickled and sent to every subtask: make the function picklable, and create "
            f"resources such as connections, clients, locks and open files in open() "
            f"rather than in __init__ or a closure"
        )
        raise JobGraphError(msg) from exc


# Keys holding a path the JobMaster and the tasks read, each in its own directory.
_LOCAL_PATH_KEYS = (
    config_keys.CHECKPOINTING_DIR.key,
    config_keys.CHECKPOINTING_DIR_DEPRECATED.key,
    config_keys.SAVEPOINT_DIR.key,
    config_keys.SAVEPOINT_DIR_DEPRECATED.key,
    config_keys.STATE_RECOVERY_PATH.key,
    config_keys.STATE_RECOVERY_PATH_DEPRECATED.key,
)


def _job_config(entries: Mapping[str, str]) -> dict[str, str]:
    known: dict[str, str] = {}
    for key, value in entries.items():
        if config_keys.is_known_key(key):
            known[key] = value
        else:
            # PyFlink programs set keys that mean nothing here (python.*, pipeline.jars, ...);
            # refusing the job for them would break programs that otherwise run unchanged.
            logger.warning("configuration key %r is not used by Weir; ignored", key)
    for key in _LOCAL_PATH_KEYS:
        if known.get(key):
            known[key] = absolute_local_path(known[key])
    # The job's Python dependencies travel in its configuration, read here where the paths
    # name files: TaskManagers may run on other hosts.
    for option, packed_key, pack in (
        (config_keys.PYTHON_FILES, config_keys.PYTHON_FILES_ARCHIVE, pack_python_files),
        (config_keys.PYTHON_ARCHIVES, config_keys.PYTHON_ARCHIVES_PACKED, pack_python_archives),
        (
            config_keys.PYTHON_REQUIREMENTS,
            config_keys.PYTHON_REQUIREMENTS_PACKED,
            pack_python_requirements,
        ),
    ):
        paths = known.get(option.key)
        if paths:
            known[packed_key] = pack(paths)
    return config_keys.validate(known)


def _chained_name(graph: StreamGraph, node: StreamNode) -> str:
    """Flink's name of the chain from ``node`` on: ``A -> B``, and ``A -> (B -> C, D)`` where
    ``A`` feeds several chained operators (in the order it got them)."""
    outputs = [e.target_id for e in node.out_edges if graph.is_chainable(e)]
    if not outputs:
        return node.name
    names = [_chained_name(graph, graph.nodes[target]) for target in outputs]
    if len(names) == 1:
        return f"{node.name} -> {names[0]}"
    return f"{node.name} -> ({', '.join(names)})"


def create_job_graph(graph: StreamGraph, job_id: JobId | None = None) -> JobGraphResult:
    """Chain the stream graph into vertices and build the JobGraph (validated)."""
    with shipping_user_modules():
        return _create_job_graph(graph, job_id)


def _create_job_graph(graph: StreamGraph, job_id: JobId | None) -> JobGraphResult:
    order = graph.topological_order()
    position = {node.id: i for i, node in enumerate(order)}
    ids = operator_ids(graph)

    # Chain heads: every node that is not chained to its (single) input.
    head_of: dict[int, int] = {}
    for node in order:
        if len(node.in_edges) == 1 and graph.is_chainable(node.in_edges[0]):
            head_of[node.id] = head_of[node.in_edges[0].source_id]
        else:
            head_of[node.id] = node.id
    members: dict[int, list[StreamNode]] = {}
    for node in order:
        members.setdefault(head_of[node.id], []).append(node)

    coded = coded_outputs(graph)
    descriptors: dict[int, OperatorDescriptor] = {}
    for node in order:
        descriptors[node.id] = _descriptor(graph, node, ids, coded.get(node.id, {}))

    vertex_id = {head: JobVertexId(ids[head]) for head in members}
    vertices: dict[int, JobVertex] = {}
    for head, chain in members.items():
        head_node = graph.nodes[head]
        vertices[head] = JobVertex(
            vertex_id=vertex_id[head],
            name=_chained_name(graph, head_node),
            parallelism=head_node.parallelism,
            max_parallelism=head_node.max_parallelism,
            operators=tuple(descriptors[n.id] for n in chain),
            slot_sharing_group=head_node.slot_sharing_group,
        )

    vertex_order = _vertex_order(graph, members, head_of, position)
    rank = {head: i for i, head in enumerate(vertex_order)}
    cross_edges = [e for e in graph.edges if not graph.is_chainable(e)]
    cross_edges.sort(
        key=lambda e: (rank[head_of[e.target_id]], e.input_index, position[e.source_id])
    )
    job_edges = tuple(_job_edge(graph, e, ids, vertex_id, head_of) for e in cross_edges)

    job_graph = JobGraph(
        job_id=job_id or new_job_id(),
        job_name=graph.job_name,
        vertices=tuple(vertices[h] for h in vertex_order),
        edges=job_edges,
        config=_job_config(graph.config),
        job_parameters=dict(graph.job_parameters),
    )
    job_graph.validate()
    return JobGraphResult(job_graph, ids)


def _descriptor(
    graph: StreamGraph,
    node: StreamNode,
    ids: dict[int, OperatorId],
    coded: dict[str, Any],
) -> OperatorDescriptor:
    chained = tuple(ids[e.target_id] for e in node.out_edges if graph.is_chainable(e))
    content = node.payload
    if coded and isinstance(content, dict):
        # The outputs PyFlink serialises with their declared type are coded (records made
        # what its coders make of them, and checked), the others pass as made.
        content = {**content, **coded}
    payload = _pickle(content, f"the function of operator {node.name!r} ({node.kind.value})")
    input_count = 0 if node.kind is OperatorKind.SOURCE else node.input_count
    return OperatorDescriptor(
        operator_id=ids[node.id],
        name=node.name,
        kind=node.kind,
        payload=payload,
        chained_outputs=chained,
        uid=node.uid,
        input_count=input_count,
    )


def _job_edge(
    graph: StreamGraph,
    edge: StreamEdge,
    ids: dict[int, OperatorId],
    vertex_id: dict[int, JobVertexId],
    head_of: dict[int, int],
) -> JobEdge:
    upstream = graph.nodes[edge.source_id]
    downstream = graph.nodes[edge.target_id]
    payload = b""
    partitioner_payload = edge.partitioner_payload
    read = columns_read(edge, downstream)
    if read is not None:
        partitioner_payload = {**partitioner_payload, "columns_read": read}
    if partitioner_payload:
        payload = _pickle(
            partitioner_payload,
            f"the partitioner/key selector of the edge {upstream.name!r} -> {downstream.name!r}",
        )
    return JobEdge(
        source_vertex=vertex_id[head_of[edge.source_id]],
        source_operator=ids[edge.source_id],
        target_vertex=vertex_id[head_of[edge.target_id]],
        input_index=edge.input_index,
        partitioner=edge.partitioner,
        partitioner_payload=payload,
        serializer=serializer_kind_of(
            edge.output_type if edge.output_tag else upstream.output_type
        ),
        output_tag=edge.output_tag,
    )


def _vertex_order(
    graph: StreamGraph,
    members: dict[int, list[StreamNode]],
    head_of: dict[int, int],
    position: dict[int, int],
) -> list[int]:
    """Vertices (by head) in topological order; ties by the head's position."""
    preds: dict[int, set[int]] = {head: set() for head in members}
    succs: dict[int, set[int]] = {head: set() for head in members}
    for e in graph.edges:
        a, b = head_of[e.source_id], head_of[e.target_id]
        if a != b:
            preds[b].add(a)
            succs[a].add(b)
    ready = [(position[h], h) for h in members if not preds[h]]
    heapq.heapify(ready)
    order: list[int] = []
    remaining = {h: len(p) for h, p in preds.items()}
    while ready:
        _, head = heapq.heappop(ready)
        order.append(head)
        for nxt in succs[head]:
            remaining[nxt] -= 1
            if remaining[nxt] == 0:
                heapq.heappush(ready, (position[nxt], nxt))
    if len(order) != len(members):
        msg = "the chained operators form a cycle"
        raise JobGraphError(msg)
    return order
