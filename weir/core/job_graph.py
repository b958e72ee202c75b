"""The JobGraph: the program as the cluster sees it, chained into vertices.

A JobGraph is built on the client (``weir.graph``) and decoded by the Dispatcher and
the JobMaster. It holds no live user objects: every operator's user code travels as
``payload``, an opaque cloudpickle blob that only a TaskExecutor unpickles, so the
master processes never import or run user code.

Operator payloads (what ``cloudpickle.loads(payload)`` gives, a ``dict``), by kind:

=================  ==========================================================
``source``         ``{"source": Source}`` (see ``weir.core.source``) or
                   ``{"source_function": SourceFunction}`` (``run(ctx)``/``cancel()``)
``map``            ``{"function": MapFunction | callable}``
``flat_map``       ``{"function": FlatMapFunction | callable}``
``filter``         ``{"function": FilterFunction | callable}``
``process``        ``{"function": ProcessFunction}``
``keyed_process``  ``{"function": KeyedProcessFunction}``
``reduce``         ``{"function": ReduceFunction | callable}`` (keyed, running reduce)
``window``         ``{"assigner": WindowAssigner, "trigger": Trigger, "allowed_lateness": int
                   (ms), "late_data_tag": str | None, "window_state": "reducing" |
                   "aggregating" | "list", "state_function": ReduceFunction | callable |
                   AggregateFunction | None, "window_function": InternalWindowFunction |
                   None (emit the reduced/aggregated value), "fast_path": {"size", "slide",
                   "offset", "event_time"} | None (aligned time windows with their default
                   trigger)}`` (keyed)
``co_map``         ``{"function": CoMapFunction}`` (two inputs)
``co_flat_map``    ``{"function": CoFlatMapFunction}`` (two inputs)
``co_process``     ``{"function": CoProcessFunction | KeyedCoProcessFunction}`` (two inputs)
``broadcast_process`` ``{"function": BroadcastProcessFunction, "broadcast_state_descriptors":
                   [MapStateDescriptor]}`` (input 0 the non-broadcast stream, input 1 the
                   broadcast one)
``keyed_broadcast_process`` the same with a KeyedBroadcastProcessFunction; input 0 keyed
``timestamps_watermarks`` ``{"watermark_strategy": WatermarkStrategy}``
``sink``           ``{"function": SinkFunction | callable}``
``print``          ``{"sink_identifier": str | None}``
``collect``        ``{}`` (records go to the client through the JobMaster)
=================  ==========================================================

Every payload may also carry ``"key_selectors"``: a list with one key selector per
input (``None`` for an input that is not keyed). An operator whose input is keyed
runs with a current key, so ``RuntimeContext.get_state`` works in it, as in PyFlink.
"""

from __future__ import annotations

import enum
from collections.abc import Mapping
from dataclasses import dataclass, field

from weir.core.errors import JobGraphError
from weir.core.ids import JobId, JobVertexId, OperatorId


class OperatorKind(enum.Enum):
    SOURCE = "source"
    MAP = "map"
    FLAT_MAP = "flat_map"
    MAP_BATCHES = "map_batches"
    KEYED_MAP_BATCHES = "keyed_map_batches"
    FILTER = "filter"
    PROCESS = "process"
    KEYED_PROCESS = "keyed_process"
    REDUCE = "reduce"
    WINDOW = "window"
    CO_MAP = "co_map"
    CO_FLAT_MAP = "co_flat_map"
    CO_PROCESS = "co_process"
    BROADCAST_PROCESS = "broadcast_process"
    KEYED_BROADCAST_PROCESS = "keyed_broadcast_process"
    TIMESTAMPS_WATERMARKS = "timestamps_watermarks"
    SINK = "sink"
    PRINT = "print"
    COLLECT = "collect"
    ASYNC_WAIT = "async_wait"


class PartitionerKind(enum.Enum):
    """How records of an edge are spread over the target's subtasks (Flink's partitioners)."""

    FORWARD = "forward"
    REBALANCE = "rebalance"
    RESCALE = "rescale"
    SHUFFLE = "shuffle"
    BROADCAST = "broadcast"
    GLOBAL = "global"
    KEY_GROUP = "key_group"  # payload: {"key_selector": callable}
    CUSTOM = "custom"  # payload: {"partitioner": Partitioner | callable, "key_selector": callable}


class SerializerKind(enum.Enum):
    """The serializer a buffer is tried with first; see ``weir.core.serializers``."""

    MARSHAL = "marshal"
    PICKLE = "pickle"


@dataclass(frozen=True, slots=True)
class OperatorDescriptor:
    operator_id: OperatorId
    """32 hex chars; from the uid (or ``set_uid_hash``) or derived from the graph."""
    name: str
    kind: OperatorKind
    payload: bytes
    """cloudpickled dict, see the module docstring."""
    chained_outputs: tuple[OperatorId, ...] = ()
    """Operators of the same vertex fed directly by this one, in declaration order."""
    uid: str | None = None
    input_count: int = 1
    """0 for sources, 2 for co-operators, else 1."""


@dataclass(frozen=True, slots=True)
class JobVertex:
    vertex_id: JobVertexId
    name: str
    parallelism: int
    max_parallelism: int
    operators: tuple[OperatorDescriptor, ...]
    """The chain, head first, then in topological order."""
    slot_sharing_group: str = "default"

    @property
    def head(self) -> OperatorDescriptor:
        return self.operators[0]

    @property
    def is_source(self) -> bool:
        return self.operators[0].kind is OperatorKind.SOURCE


@dataclass(frozen=True, slots=True)
class JobEdge:
    source_vertex: JobVertexId
    source_operator: OperatorId
    """The operator of the source chain whose output this edge carries."""
    target_vertex: JobVertexId
    input_index: int
    """Which input of the target's head operator (0, or 1 for the second input of a co-operator)."""
    partitioner: PartitionerKind
    partitioner_payload: bytes = b""
    """cloudpickled dict for KEY_GROUP and CUSTOM; empty otherwise."""
    serializer: SerializerKind = SerializerKind.PICKLE
    output_tag: str = ""
    """The side output (``OutputTag.tag_id``) of the source operator this edge carries;
    empty for its main output."""


@dataclass(frozen=True, slots=True)
class JobGraph:
    job_id: JobId
    job_name: str
    vertices: tuple[JobVertex, ...]
    """In topological order (sources first)."""
    edges: tuple[JobEdge, ...]
    """Edge ``i`` is referred to by its index in this tuple."""
    config: Mapping[str, str] = field(default_factory=dict)
    """Job-level configuration (Flink key names) as strings."""
    job_parameters: Mapping[str, str] = field(default_factory=dict)
    """What ``RuntimeContext.get_job_parameter`` returns."""

    def vertex(self, vertex_id: str) -> JobVertex:
        for v in self.vertices:
            if v.vertex_id == vertex_id:
                return v
        msg = f"no vertex {vertex_id!r} in job {self.job_id}"
        raise JobGraphError(msg)

    def inputs_of(self, vertex_id: str) -> list[tuple[int, JobEdge]]:
        return [(i, e) for i, e in enumerate(self.edges) if e.target_vertex == vertex_id]

    def outputs_of(self, vertex_id: str) -> list[tuple[int, JobEdge]]:
        return [(i, e) for i, e in enumerate(self.edges) if e.source_vertex == vertex_id]

    @property
    def total_subtasks(self) -> int:
        return sum(v.parallelism for v in self.vertices)

    def validate(self) -> None:
        """Check the structure; raises JobGraphError naming what is wrong."""
        if not self.vertices:
            msg = f"job {self.job_name!r} has no operators; add a source and a sink"
            raise JobGraphError(msg)
        ids = [v.vertex_id for v in self.vertices]
        if len(set(ids)) != len(ids):
            msg = "duplicate vertex ids in the JobGraph"
            raise JobGraphError(msg)
        position = {vid: i for i, vid in enumerate(ids)}
        op_ids = [op.operator_id for v in self.vertices for op in v.operators]
        if len(set(op_ids)) != len(op_ids):
            msg = "duplicate operator ids (two operators with the same uid?)"
            raise JobGraphError(msg)
        for v in self.vertices:
            if v.parallelism < 1 or v.max_parallelism < v.parallelism:
                msg = (
                    f"vertex {v.name!r}: parallelism {v.parallelism} must be >= 1 and <= "
                    f"max parallelism {v.max_parallelism}"
                )
                raise JobGraphError(msg)
            if not v.operators:
                msg = f"vertex {v.name!r} has no operators"
                raise JobGraphError(msg)
        for e in self.edges:
            if e.source_vertex not in position or e.target_vertex not in position:
                msg = f"edge {e.source_vertex} -> {e.target_vertex} names an unknown vertex"
                raise JobGraphError(msg)
            if position[e.source_vertex] >= position[e.target_vertex]:
                msg = "the JobGraph has a cycle or is not in topological order"
                raise JobGraphError(msg)
