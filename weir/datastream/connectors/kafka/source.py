"""``KafkaSource`` and its builder (mirrors ``pyflink.datastream.connectors.kafka``).

The builder checks its settings on the client, where the program is written; the reader
(``_source_reader``) runs in every source subtask and is the only part that talks to
Kafka.
"""

from __future__ import annotations

import logging
import re
import secrets
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from weir.common.serialization import DeserializationSchema
from weir.common.typeinfo import TypeInformation
from weir.core.source import SourceReaderContext
from weir.datastream.connectors.kafka._source_reader import KafkaSourceReader
from weir.datastream.connectors.kafka.errors import KafkaConfigurationError
from weir.datastream.connectors.kafka.offsets import (
    KafkaOffsetsInitializer,
    KafkaTopicPartition,
)

logger = logging.getLogger(__name__)

__all__ = ["KafkaSource", "KafkaSourceBuilder"]

# Flink's KafkaSourceOptions: how often partitions are discovered (5 minutes by default;
# -1 or 0 turns discovery off, as set_bounded does), and whether offsets are committed to
# the consumer group when a checkpoint completes.
PARTITION_DISCOVERY_INTERVAL_MS = "partition.discovery.interval.ms"
COMMIT_OFFSETS_ON_CHECKPOINT = "commit.offsets.on.checkpoint"
CLIENT_ID_PREFIX = "client.id.prefix"
_DEFAULT_DISCOVERY_INTERVAL_MS = 300_000


@dataclass(frozen=True)
class _KafkaSourceSettings:
    """What every reader of one KafkaSource needs, as the builder checked it."""

    bootstrap_servers: str
    group_id: str | None
    topics: tuple[str, ...]
    topic_pattern: str | None
    partitions: frozenset[tuple[str, int]]
    starting: KafkaOffsetsInitializer
    stopping: KafkaOffsetsInitializer | None
    bounded: bool
    deserializer: DeserializationSchema
    client_id_prefix: str
    discovery_interval_ms: int
    commit_offsets: bool
    properties: Mapping[str, str] = field(default_factory=dict)


def _parse_bool(key: str, value: str) -> bool:
    lowered = str(value).strip().lower()
    if lowered in ("true", "false"):
        return lowered == "true"
    msg = f"KafkaSource property {key} must be true or false; got {value!r}"
    raise KafkaConfigurationError(msg)


class KafkaSource:
    """A source reading Kafka topics; build it with ``KafkaSource.builder()``::

        source = (KafkaSource.builder()
                  .set_bootstrap_servers("broker:9092")
                  .set_group_id("my-group")
                  .set_topics("orders")
                  .set_value_only_deserializer(SimpleStringSchema())
                  .set_starting_offsets(KafkaOffsetsInitializer.earliest())
                  .build())
        env.from_source(source, WatermarkStrategy.no_watermarks(), "orders")

    Each topic partition is a split; a subtask reads its share of them with one consumer
    and checkpoints its position in each. A restore reads on from the checkpointed
    offsets (never from the group's committed offsets, which are updated when a
    checkpoint completes, for monitoring). Records carry their Kafka timestamps as event
    time unless the watermark strategy assigns its own, and watermarks are generated per
    partition. Unbounded by default; ``set_bounded`` makes it stop at the stopping
    offsets, and the job end.
    """

    def __init__(
        self, settings: _KafkaSourceSettings, *, clock: Callable[[], float] | None = None
    ) -> None:
        self._settings = settings
        self._clock = clock

    @staticmethod
    def builder() -> KafkaSourceBuilder:
        """A KafkaSourceBuilder."""
        return KafkaSourceBuilder()

    def is_bounded(self) -> bool:
        return self._settings.bounded

    def create_reader(self, context: SourceReaderContext) -> KafkaSourceReader:
        return KafkaSourceReader(
            self._settings,
            context.get_index_of_this_subtask(),
            context.get_number_of_parallel_subtasks(),
            clock=self._clock or time.monotonic,
        )

    def get_produced_type(self) -> TypeInformation:
        return self._settings.deserializer.get_produced_type()

    def __repr__(self) -> str:
        settings = self._settings
        what = (
            ", ".join(settings.topics)
            or (settings.topic_pattern and f"/{settings.topic_pattern}/")
            or f"{len(settings.partitions)} partitions"
        )
        return f"KafkaSource({what} at {settings.bootstrap_servers})"


class KafkaSourceBuilder:
    """Configures a KafkaSource. Required: the bootstrap servers, what to read
    (``set_topics``, ``set_topic_pattern`` or ``set_partitions``) and the deserializer.
    Starting offsets default to ``KafkaOffsetsInitializer.earliest()``; the source is
    unbounded (``set_bounded``/``set_unbounded`` give stopping offsets)."""

    def __init__(self) -> None:
        self._bootstrap_servers: str | None = None
        self._group_id: str | None = None
        self._topics: tuple[str, ...] = ()
        self._topic_pattern: str | None = None
        self._partitions: frozenset[tuple[str, int]] = frozenset()
        self._starting = KafkaOffsetsInitializer.earliest()
        self._stopping: KafkaOffsetsInitializer | None = None
        self._bounded = False
        self._deserializer: DeserializationSchema | None = None
        self._client_id_prefix: str | None = None
        self._properties: dict[str, str] = {}

    def build(self) -> KafkaSource:
        """The KafkaSource; fails here, naming the missing or conflicting settings."""
        properties = dict(self._properties)
        servers = self._bootstrap_servers or properties.pop("bootstrap.servers", None)
        properties.pop("bootstrap.servers", None)
        if not servers:
            msg = "KafkaSource: set_bootstrap_servers(...) is required"
            raise KafkaConfigurationError(msg)
        subscriptions = [
            name
            for name, given in (
                ("set_topics", self._topics),
                ("set_topic_pattern", self._topic_pattern),
                ("set_partitions", self._partitions),
            )
            if given
        ]
        if len(subscriptions) != 1:
            msg = (
                "KafkaSource: give exactly one of set_topics, set_topic_pattern and "
                f"set_partitions; got {subscriptions or 'none'}"
            )
            raise KafkaConfigurationError(msg)
        if self._deserializer is None:
            msg = "KafkaSource: set_value_only_deserializer(...) is required"
            raise KafkaConfigurationError(msg)
        group_id = self._group_id or properties.pop("group.id", None)
        properties.pop("group.id", None)
        prefix = (
            self._client_id_prefix
            or properties.pop(CLIENT_ID_PREFIX, None)
            or f"{group_id or 'weir-kafka-source'}-{secrets.randbelow(1 << 62)}"
        )
        properties.pop(CLIENT_ID_PREFIX, None)
        interval = properties.pop(PARTITION_DISCOVERY_INTERVAL_MS, None)
        try:
            interval_ms = int(interval) if interval is not None else _DEFAULT_DISCOVERY_INTERVAL_MS
        except ValueError as exc:
            msg = (
                f"KafkaSource property {PARTITION_DISCOVERY_INTERVAL_MS} must be a number "
                f"of ms; got {interval!r}"
            )
            raise KafkaConfigurationError(msg) from exc
        if self._bounded:
            interval_ms = -1  # as Flink's set_bounded: the partitions at the start only
        commit = properties.pop(COMMIT_OFFSETS_ON_CHECKPOINT, None)
        commit_offsets = (
            True if commit is None else _parse_bool(COMMIT_OFFSETS_ON_CHECKPOINT, commit)
        )
        if commit_offsets and not group_id:
            # Flink turns it off too: there is no group to commit to.
            commit_offsets = False
        return KafkaSource(
            _KafkaSourceSettings(
                bootstrap_servers=servers,
                group_id=group_id,
                topics=self._topics,
                topic_pattern=self._topic_pattern,
                partitions=self._partitions,
                starting=self._starting,
                stopping=self._stopping,
                bounded=self._bounded,
                deserializer=self._deserializer,
                client_id_prefix=prefix,
                discovery_interval_ms=interval_ms,
                commit_offsets=commit_offsets,
                properties=properties,
            )
        )

    def set_bootstrap_servers(self, bootstrap_servers: str) -> KafkaSourceBuilder:
        """The Kafka brokers to start from: ``"host:port,host:port"``."""
        self._bootstrap_servers = bootstrap_servers
        return self

    def set_group_id(self, group_id: str) -> KafkaSourceBuilder:
        """The consumer group whose offsets are committed when checkpoints complete (and
        read by ``KafkaOffsetsInitializer.committed_offsets``)."""
        self._group_id = group_id
        return self

    def set_topics(self, *topics: str) -> KafkaSourceBuilder:
        """Read every partition of these topics."""
        if not topics or not all(isinstance(t, str) and t for t in topics):
            msg = f"set_topics needs topic names; got {topics!r}"
            raise KafkaConfigurationError(msg)
        self._topics = tuple(topics)
        return self

    def set_topic_pattern(self, topic_pattern: str) -> KafkaSourceBuilder:
        """Read every topic whose whole name matches this regular expression (new ones
        too, at partition discovery)."""
        try:
            re.compile(topic_pattern)
        except re.error as exc:
            msg = f"set_topic_pattern: {topic_pattern!r} is not a regular expression: {exc}"
            raise KafkaConfigurationError(msg) from exc
        self._topic_pattern = topic_pattern
        return self

    def set_partitions(self, partitions: set[KafkaTopicPartition]) -> KafkaSourceBuilder:
        """Read exactly these partitions."""
        self._partitions = frozenset((tp.topic, tp.partition) for tp in partitions)
        if not self._partitions:
            msg = "set_partitions needs at least one KafkaTopicPartition"
            raise KafkaConfigurationError(msg)
        return self

    def set_starting_offsets(
        self, starting_offsets_initializer: KafkaOffsetsInitializer
    ) -> KafkaSourceBuilder:
        """Where each partition is read from (default: ``earliest()``)."""
        self._starting = _initializer(starting_offsets_initializer, "set_starting_offsets")
        return self

    def set_unbounded(
        self, stopping_offsets_initializer: KafkaOffsetsInitializer
    ) -> KafkaSourceBuilder:
        """Stay a streaming source, but stop each partition at these offsets; once all of
        them are reached the source ends."""
        self._stopping = _initializer(stopping_offsets_initializer, "set_unbounded")
        self._bounded = False
        return self

    def set_bounded(
        self, stopping_offsets_initializer: KafkaOffsetsInitializer
    ) -> KafkaSourceBuilder:
        """A bounded source: it reads the partitions there are at the start up to these
        offsets (``latest()``: what is there at the start), then ends, and the job ends
        when the rest of it has."""
        self._stopping = _initializer(stopping_offsets_initializer, "set_bounded")
        self._bounded = True
        return self

    def set_value_only_deserializer(
        self, deserialization_schema: DeserializationSchema
    ) -> KafkaSourceBuilder:
        """Turns each record's value into the record the stream carries (the key and
        headers are ignored)."""
        if not callable(getattr(deserialization_schema, "deserialize", None)):
            msg = (
                "set_value_only_deserializer needs a DeserializationSchema (e.g. "
                f"SimpleStringSchema()); got {type(deserialization_schema)!r}"
            )
            raise KafkaConfigurationError(msg)
        self._deserializer = deserialization_schema
        return self

    def set_client_id_prefix(self, prefix: str) -> KafkaSourceBuilder:
        """Each subtask's consumer is named ``{prefix}-{subtask}``."""
        self._client_id_prefix = prefix
        return self

    def set_property(self, key: str, value: str) -> KafkaSourceBuilder:
        """A Kafka consumer property (Kafka's client names) or one of Flink's source
        options: ``partition.discovery.interval.ms``, ``commit.offsets.on.checkpoint``,
        ``client.id.prefix``."""
        self._properties[str(key)] = str(value)
        return self

    def set_properties(self, props: Mapping[str, str]) -> KafkaSourceBuilder:
        for key, value in props.items():
            self.set_property(key, value)
        return self


def _initializer(value: Any, method: str) -> KafkaOffsetsInitializer:
    if not isinstance(value, KafkaOffsetsInitializer):
        msg = (
            f"{method} needs a KafkaOffsetsInitializer (e.g. KafkaOffsetsInitializer."
            f"earliest()); got {type(value)!r}"
        )
        raise KafkaConfigurationError(msg)
    return value
