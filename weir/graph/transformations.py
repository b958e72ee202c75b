"""The transformations the DataStream API records: Flink's ``Transformation`` tree.

Physical transformations become operators; partition and union transformations are
virtual and only shape the edges between them (as Flink's ``PartitionTransformation``
and ``UnionTransformation``).
"""

from __future__ import annotations

import enum
from dataclasses import dataclass, field
from typing import Any

from weir.common.typeinfo import TypeInformation
from weir.core.job_graph import OperatorKind, PartitionerKind

__all__ = [
    "CacheTransformation",
    "ChainingStrategy",
    "PartitionTransformation",
    "PhysicalTransformation",
    "SideOutputTransformation",
    "Transformation",
    "UnionTransformation",
]


class ChainingStrategy(enum.Enum):
    ALWAYS = "always"
    """Chains to its predecessor and successors where the edge allows."""
    HEAD = "head"
    """Starts a new chain (``start_new_chain()``); successors may chain to it."""
    NEVER = "never"
    """Chains to nothing (``disable_chaining()``)."""


@dataclass(eq=False)
class Transformation:
    id: int
    name: str
    output_type: TypeInformation | None = None
    parallelism: int | None = None
    max_parallelism: int | None = None
    uid: str | None = None
    uid_hash: str | None = None
    slot_sharing_group: str | None = None
    chaining: ChainingStrategy = ChainingStrategy.ALWAYS
    buffer_timeout_ms: int | None = None
    description: str | None = None

    @property
    def inputs(self) -> list[Transformation]:
        return []


@dataclass(eq=False)
class PhysicalTransformation(Transformation):
    """One operator. ``input_streams[i]`` feeds input ``i``; ``payload`` holds live objects
    (pickled only when the JobGraph is built)."""

    kind: OperatorKind = OperatorKind.MAP
    input_streams: list[Transformation] = field(default_factory=list)
    payload: dict[str, Any] = field(default_factory=dict)
    non_parallel: bool = False
    """Sources that cannot run in parallel (from_collection, SourceFunction)."""

    @property
    def inputs(self) -> list[Transformation]:
        return list(self.input_streams)


@dataclass(eq=False)
class PartitionTransformation(Transformation):
    input: Transformation | None = None
    partitioner: PartitionerKind = PartitionerKind.FORWARD
    partitioner_payload: dict[str, Any] = field(default_factory=dict)

    @property
    def inputs(self) -> list[Transformation]:
        return [self.input] if self.input is not None else []


@dataclass(eq=False)
class UnionTransformation(Transformation):
    union_inputs: list[Transformation] = field(default_factory=list)

    @property
    def inputs(self) -> list[Transformation]:
        return list(self.union_inputs)


@dataclass(eq=False)
class SideOutputTransformation(Transformation):
    """The side output ``tag_id`` of ``input`` (``get_side_output``): virtual, it marks
    the edges that leave ``input`` from that side output (Flink's
    ``SideOutputTransformation``)."""

    input: Transformation | None = None
    tag_id: str = ""

    @property
    def inputs(self) -> list[Transformation]:
        return [self.input] if self.input is not None else []


@dataclass(eq=False)
class CacheTransformation(PhysicalTransformation):
    """A cached stream (``DataStream.cache()``): before each job is built the environment
    makes it either a pass-through of ``upstream`` whose output the job also writes to
    ``cache``, or, once the cache is complete, a source reading it (Flink's
    ``CacheTransformation``, which the StreamGraph generator resolves alike)."""

    upstream: Transformation | None = None
    cache: Any = None
