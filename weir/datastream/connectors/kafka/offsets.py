"""Where a Kafka source starts and stops in each partition (PyFlink's
``KafkaOffsetsInitializer``, ``KafkaOffsetResetStrategy`` and ``KafkaTopicPartition``).

An initializer is a description; the source reader turns it into a concrete offset per
partition when it first takes the partition (``resolve``), so a checkpoint always holds
offsets, never "latest", and a restore never skips what arrived in between.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from enum import Enum
from typing import Any

from weir.datastream.connectors.kafka._client import confluent, unreachable
from weir.datastream.connectors.kafka.errors import KafkaConfigurationError

__all__ = ["KafkaOffsetResetStrategy", "KafkaOffsetsInitializer", "KafkaTopicPartition"]


class KafkaTopicPartition:
    """A partition of a topic (Kafka's ``TopicPartition``)::

    KafkaTopicPartition("orders", 0)
    """

    def __init__(self, topic: str, partition: int) -> None:
        self._topic = topic
        self._partition = int(partition)

    @property
    def topic(self) -> str:
        return self._topic

    @property
    def partition(self) -> int:
        return self._partition

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, KafkaTopicPartition):
            return False
        return self._topic == other._topic and self._partition == other._partition

    def __hash__(self) -> int:
        return 31 * (31 + self._partition) + hash(self._topic)

    def __repr__(self) -> str:
        return f"KafkaTopicPartition({self._topic!r}, {self._partition})"


class KafkaOffsetResetStrategy(Enum):
    """Where to start when there is no valid offset: the latest, the earliest, or fail."""

    LATEST = 0
    EARLIEST = 1
    NONE = 2


@dataclass(frozen=True)
class KafkaOffsetsInitializer:
    """The starting or stopping offset of each partition; build one with the factories.

    ``earliest()`` (the default start), ``latest()``, ``timestamp(ms)``,
    ``offsets({KafkaTopicPartition: offset}, reset)`` and ``committed_offsets(reset)``.
    """

    kind: str
    timestamp_ms: int | None = None
    specified: tuple[tuple[str, int, int], ...] = field(default=())
    reset: KafkaOffsetResetStrategy = KafkaOffsetResetStrategy.NONE

    @staticmethod
    def committed_offsets(
        offset_reset_strategy: KafkaOffsetResetStrategy = KafkaOffsetResetStrategy.NONE,
    ) -> KafkaOffsetsInitializer:
        """The consumer group's committed offsets (``set_group_id``); where the group has
        none, ``offset_reset_strategy`` decides (NONE: the job fails, saying so)."""
        return KafkaOffsetsInitializer("committed", reset=offset_reset_strategy)

    @staticmethod
    def timestamp(timestamp: int) -> KafkaOffsetsInitializer:
        """The first record whose timestamp is at or after ``timestamp`` (ms); the end of a
        partition that has none."""
        return KafkaOffsetsInitializer("timestamp", timestamp_ms=int(timestamp))

    @staticmethod
    def earliest() -> KafkaOffsetsInitializer:
        """The earliest offset of each partition still held by the broker."""
        return KafkaOffsetsInitializer("earliest", reset=KafkaOffsetResetStrategy.EARLIEST)

    @staticmethod
    def latest() -> KafkaOffsetsInitializer:
        """The end of each partition when the source first takes it."""
        return KafkaOffsetsInitializer("latest", reset=KafkaOffsetResetStrategy.LATEST)

    @staticmethod
    def offsets(
        offsets: Mapping[KafkaTopicPartition, int],
        offset_reset_strategy: KafkaOffsetResetStrategy = KafkaOffsetResetStrategy.EARLIEST,
    ) -> KafkaOffsetsInitializer:
        """The given offset of each listed partition; partitions not listed (and offsets
        out of range) follow ``offset_reset_strategy``."""
        specified = tuple(sorted((tp.topic, tp.partition, int(o)) for tp, o in offsets.items()))
        return KafkaOffsetsInitializer("offsets", specified=specified, reset=offset_reset_strategy)

    @property
    def auto_offset_reset(self) -> str:
        """librdkafka's ``auto.offset.reset`` for offsets found out of range."""
        return {
            KafkaOffsetResetStrategy.LATEST: "latest",
            KafkaOffsetResetStrategy.EARLIEST: "earliest",
            KafkaOffsetResetStrategy.NONE: "error",
        }[self.reset if self.kind != "timestamp" else KafkaOffsetResetStrategy.LATEST]

    def __repr__(self) -> str:
        if self.kind == "timestamp":
            return f"KafkaOffsetsInitializer.timestamp({self.timestamp_ms})"
        if self.kind == "offsets":
            return f"KafkaOffsetsInitializer.offsets({len(self.specified)} partitions)"
        if self.kind == "committed":
            return f"KafkaOffsetsInitializer.committed_offsets({self.reset.name})"
        return f"KafkaOffsetsInitializer.{self.kind}()"


def resolve(
    initializer: KafkaOffsetsInitializer,
    consumer: Any,
    partitions: Iterable[tuple[str, int]],
    *,
    bootstrap_servers: str,
    group_id: str | None,
    timeout_ms: int,
) -> dict[tuple[str, int], int]:
    """A concrete offset for each of ``partitions`` under ``initializer``."""
    kafka = confluent()
    tp_class = kafka.TopicPartition
    partitions = list(partitions)
    if not partitions:
        return {}
    timeout = timeout_ms / 1000

    def watermarks(part: tuple[str, int]) -> tuple[int, int]:
        try:
            low, high = consumer.get_watermark_offsets(tp_class(*part), timeout=timeout)
        except kafka.KafkaException as exc:
            raise unreachable(bootstrap_servers, timeout_ms, exc) from exc
        return int(low), int(high)

    def by_reset(part: tuple[str, int], reason: str) -> int:
        if initializer.reset is KafkaOffsetResetStrategy.EARLIEST:
            return watermarks(part)[0]
        if initializer.reset is KafkaOffsetResetStrategy.LATEST:
            return watermarks(part)[1]
        msg = (
            f"Kafka partition {part[0]}-{part[1]}: {reason}, and the offset reset strategy "
            "is NONE; give one, e.g. KafkaOffsetsInitializer.committed_offsets("
            "KafkaOffsetResetStrategy.EARLIEST)"
        )
        raise KafkaConfigurationError(msg)

    kind = initializer.kind
    if kind == "earliest":
        return {p: watermarks(p)[0] for p in partitions}
    if kind == "latest":
        return {p: watermarks(p)[1] for p in partitions}
    if kind == "offsets":
        given = {(t, p): o for t, p, o in initializer.specified}
        return {
            p: given[p] if p in given else by_reset(p, "no offset was given for it")
            for p in partitions
        }
    if kind == "timestamp":
        assert initializer.timestamp_ms is not None
        try:
            found = consumer.offsets_for_times(
                [tp_class(t, p, initializer.timestamp_ms) for t, p in partitions], timeout=timeout
            )
        except kafka.KafkaException as exc:
            raise unreachable(bootstrap_servers, timeout_ms, exc) from exc
        return {
            (tp.topic, tp.partition): tp.offset
            if tp.offset >= 0
            else watermarks((tp.topic, tp.partition))[1]
            for tp in found
        }
    if kind == "committed":
        if not group_id:
            msg = (
                "KafkaOffsetsInitializer.committed_offsets() needs the consumer group whose "
                "offsets to start from: set_group_id(...)"
            )
            raise KafkaConfigurationError(msg)
        try:
            committed = consumer.committed([tp_class(t, p) for t, p in partitions], timeout=timeout)
        except kafka.KafkaException as exc:
            raise unreachable(bootstrap_servers, timeout_ms, exc) from exc
        return {
            (tp.topic, tp.partition): tp.offset
            if tp.offset >= 0
            else by_reset((tp.topic, tp.partition), f"group {group_id!r} has committed no offset")
            for tp in committed
        }
    msg = f"unknown offsets initializer {initializer!r}"
    raise KafkaConfigurationError(msg)
