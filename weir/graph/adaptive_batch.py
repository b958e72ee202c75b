"""The parallelism of a BATCH job's operators that set none, decided as Flink's adaptive
batch scheduler decides it (``execution.batch.adaptive.auto-parallelism.*``).

Flink decides it vertex by vertex while the job runs, from the bytes the finished producers
wrote. Weir runs a BATCH job's stages together, so it decides when the job is built, from
the volume its sources will read (a collection's pickled size, the files' sizes, eight
bytes a number of a sequence), each operator taken to pass on what it consumes. The rules
are Flink's:

- an operator whose parallelism is set (``set_parallelism``, a non-parallel source, an
  operator that runs at 1) keeps it; ``env.set_parallelism`` sets none, it is the upper
  bound (``max-parallelism`` when given);
- a source that sets none runs at ``default-source-parallelism`` (the upper bound when not
  given), a FileSource at one subtask per file, up to it;
- an operator with inputs that come without a partitioning of their own (the default edge,
  which Flink keeps forward) runs at those producers' parallelism when they agree;
- any other: the bytes of its non-broadcast inputs divided by ``avg-data-volume-per-task``,
  rounded up, within ``min-parallelism`` and the upper bound (its max parallelism too, when
  set); with only broadcast inputs, ``min-parallelism``. A source whose volume is not
  known (Kafka, a SourceFunction) makes its consumers run at the upper bound.

An operator whose parallelism is decided and whose max parallelism is not set gets the upper
bound as its max parallelism (its number of key groups), as Flink gives it.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from weir.core import config as config_keys
from weir.core.errors import ConfigurationError

__all__ = ["AdaptiveBatchParallelism", "Decision", "InputEdge"]


@dataclass(frozen=True, slots=True)
class InputEdge:
    """One input of an operator: its producer's decision, and how the edge partitions."""

    producer: Decision
    partitioned: bool
    """The program gave the edge a partitioning (key_by, rebalance, broadcast, ...)."""
    broadcast: bool


@dataclass(frozen=True, slots=True)
class Decision:
    parallelism: int
    max_parallelism: int | None
    """The max parallelism the decision gives the operator; None: derived as usual."""
    volume_bytes: int | None
    """The estimated bytes the operator writes; None: not known."""


@dataclass(frozen=True, slots=True)
class AdaptiveBatchParallelism:
    max_parallelism: int
    min_parallelism: int
    avg_data_volume_per_task: int
    default_source_parallelism: int

    @classmethod
    def from_config(
        cls, entries: Mapping[str, str], job_parallelism: int
    ) -> AdaptiveBatchParallelism | None:
        """The decider of a job with these settings; None unless the job runs in BATCH mode
        with auto-parallelism on."""
        if config_keys.get(entries, config_keys.RUNTIME_MODE) != "BATCH":
            return None
        if not config_keys.get(entries, config_keys.ADAPTIVE_AUTO_PARALLELISM_ENABLED):
            return None
        max_key = config_keys.ADAPTIVE_AUTO_PARALLELISM_MAX_PARALLELISM
        upper = config_keys.get(entries, max_key)
        if upper <= 0:
            upper = job_parallelism
        lower = config_keys.get(entries, config_keys.ADAPTIVE_AUTO_PARALLELISM_MIN_PARALLELISM)
        if upper < lower:
            msg = (
                f"'{max_key.key}' ({upper}) is smaller than "
                f"'{config_keys.ADAPTIVE_AUTO_PARALLELISM_MIN_PARALLELISM.key}' ({lower}); "
                "raise the max parallelism (it defaults to the job's parallelism) or lower "
                "the min parallelism"
            )
            raise ConfigurationError(msg)
        volume_key = config_keys.ADAPTIVE_AUTO_PARALLELISM_AVG_DATA_VOLUME_PER_TASK
        volume = config_keys.get(entries, volume_key)
        if volume <= 0:
            msg = f"'{volume_key.key}' must be a positive size such as '16 mb'; got {volume}"
            raise ConfigurationError(msg)
        source_key = config_keys.ADAPTIVE_AUTO_PARALLELISM_DEFAULT_SOURCE_PARALLELISM
        source = config_keys.get(entries, source_key)
        return cls(upper, lower, volume, source if source > 0 else upper)

    def fixed(self, parallelism: int, source: Any | None, inputs: list[InputEdge]) -> Decision:
        """An operator whose parallelism is set; ``source`` is its source, if it is one."""
        if source is not None:
            return Decision(parallelism, None, _source_bytes(source))
        return Decision(parallelism, None, _sum([i.producer.volume_bytes for i in inputs]))

    def source(self, source: Any, max_parallelism: int | None) -> Decision:
        """A parallel source that sets no parallelism (its max parallelism, if set)."""
        bound = self._upper_bound(max_parallelism)
        parallelism = min(self.default_source_parallelism, bound)
        infer = getattr(source, "infer_parallelism", None)
        if callable(infer):
            parallelism = max(1, min(int(infer(parallelism)), parallelism))
        return Decision(parallelism, max_parallelism or self.max_parallelism, _source_bytes(source))

    def operator(self, inputs: list[InputEdge], max_parallelism: int | None) -> Decision:
        """An operator with inputs that sets no parallelism (its max parallelism, if set)."""
        volume = _sum([i.producer.volume_bytes for i in inputs])
        forward = [i.producer for i in inputs if not i.partitioned]
        if len({producer.parallelism for producer in forward}) == 1:
            # One forward group: the producers' parallelism (and max parallelism, as the
            # vertex it chains into has).
            first = forward[0]
            return Decision(first.parallelism, max_parallelism or first.max_parallelism, volume)
        keyed_max = max_parallelism or self.max_parallelism
        lower = self.min_parallelism
        upper = self._upper_bound(max_parallelism)
        lower = min(lower, upper)
        counted = [i for i in inputs if not i.broadcast]
        if not counted:
            return Decision(lower, keyed_max, volume)
        consumed = _sum([i.producer.volume_bytes for i in counted])
        if consumed is None:
            parallelism = upper
        else:
            parallelism = -(-consumed // self.avg_data_volume_per_task)
        return Decision(max(lower, min(parallelism, upper)), keyed_max, volume)

    def _upper_bound(self, max_parallelism: int | None) -> int:
        if max_parallelism is not None and max_parallelism < self.max_parallelism:
            return max_parallelism
        return self.max_parallelism


def _sum(volumes: list[int | None]) -> int | None:
    if any(v is None for v in volumes):
        return None
    return sum(v for v in volumes if v is not None)


def _source_bytes(source: Any) -> int | None:
    estimate = getattr(source, "estimated_size_bytes", None)
    if not callable(estimate):
        return None
    try:
        return int(estimate())
    except OSError:
        # A path the client cannot read (the TaskManagers may): the volume is not known.
        return None
