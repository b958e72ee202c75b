"""The Kafka source's reader: one per subtask, reading its partitions with one consumer.

Splits, as Flink's KafkaSource has them: each topic partition is a split whose state is
its next offset (and its stopping offset in bounded mode). The consumer is assigned its
partitions (no group rebalancing: ``assign``, never ``subscribe``), so a restore reads
exactly from the checkpointed offsets, never from the group's committed ones; those are
committed only when a checkpoint completes, for monitoring (``commit.offsets.on.checkpoint``).

Partition discovery without a coordinator: the partitions are dealt to subtasks by
Flink's ``getSplitOwner`` (a topic-dependent start, then round-robin). Besides its
partitions, a reader holds *discovery classes* as splits: class ``c`` of ``m`` with the
partitions it has already taken. At every ``partition.discovery.interval.ms`` the reader
lists the topics and takes the partitions of its classes it has not seen, from the
earliest offset, as Flink does for partitions found after the first discovery. A fresh
job has one class per subtask; after a rescale the classes are dealt out round-robin with
the partitions, so every new partition is still taken by exactly one reader.

Every batch ``poll_batch`` returns holds records of one partition
(``current_split_id``), with their Kafka timestamps beside them
(``current_timestamps``), so watermarks can be generated per partition.
"""

from __future__ import annotations

import collections
import logging
import re
import time
from collections.abc import Callable, Sequence
from typing import Any

from weir.core.source import SourceStateError
from weir.datastream.connectors.kafka._client import (
    api_timeout_ms,
    client_config,
    confluent,
    make_client,
    missing_topic,
    split_owner,
    topic_partitions,
)
from weir.datastream.connectors.kafka._run_deserializer import RunDeserializer
from weir.datastream.connectors.kafka.errors import KafkaConnectorError
from weir.datastream.connectors.kafka.offsets import KafkaOffsetsInitializer, resolve

logger = logging.getLogger(__name__)

TP = tuple[str, int]

# Checkpoints whose offsets wait for their completion to be committed; older ones are
# subsumed by a later completion anyway.
_MAX_PENDING_COMMITS = 16
# How often an idle reader with stopping offsets asks the consumer where it is: past the
# last record of a transactional partition come markers, which no record reports.
_STOP_CHECK_INTERVAL_S = 0.2


# librdkafka's defaults that the source changes (a property of the same name wins):
# - fetch.queue.backoff.ms (1000 in librdkafka): once a partition's local queue holds
#   queued.min.messages, its next fetch waits this long. The task drains such a queue in a
#   fraction of that, then found nothing for the rest of the second and read a topic that
#   was already there at a seventh of the rate it reads it at with 10 ms. Kafka's Java
#   consumer, which Flink's source uses, has no such wait.
_CONSUMER_DEFAULTS = {"fetch.queue.backoff.ms": "10"}


def _unset(_message: Any) -> Any:
    """A Message method before the consumer started (never called)."""
    raise AssertionError


class _Split:
    """One partition being read: the next offset and where to stop (None: never)."""

    __slots__ = ("next", "partition", "split_id", "stop", "topic")

    def __init__(self, topic: str, partition: int, next_offset: int, stop: int | None) -> None:
        self.topic = topic
        self.partition = partition
        self.next = next_offset
        self.stop = stop
        self.split_id = f"{topic}-{partition}"

    @property
    def finished(self) -> bool:
        return self.stop is not None and self.next >= self.stop


class _DiscoveryClass:
    """Partitions ``p`` with ``split_owner(p, count) == index``; ``known``: taken already."""

    __slots__ = ("count", "index", "known")

    def __init__(self, index: int, count: int, known: set[TP]) -> None:
        self.index = index
        self.count = count
        self.known = known


class KafkaSourceReader:
    """Reads the partitions of one subtask (see the module docstring). Called on the task
    thread only."""

    def __init__(
        self,
        config: Any,  # KafkaSource's settings (source._KafkaSourceSettings)
        subtask: int,
        parallelism: int,
        *,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._config = config
        self._subtask = subtask
        self._parallelism = parallelism
        self._clock = clock
        self._timeout_ms = api_timeout_ms(config.properties)
        self._splits: dict[TP, _Split] = {}
        # The partitions in the consumer's assignment: a split found at its end is never
        # assigned, and librdkafka refuses (and logs) the removal of a partition it lacks.
        self._assigned: set[TP] = set()
        self._classes: list[_DiscoveryClass] = []
        self._restored: list[Any] | None = None
        self._consumer: Any = None
        self._pending: collections.deque[tuple[_Split, Sequence[Any], list[int | None], int]] = (
            collections.deque()
        )
        self._current_split_id = ""
        self._current_timestamps: list[int | None] | None = None
        self._next_discovery = float("inf")
        self._next_stop_check = 0.0
        self._commits: dict[int, dict[TP, int]] = {}
        # Set by _start (it needs confluent_kafka's Message type).
        self._runs: RunDeserializer | None = None
        self._columns = False
        self._partition_of: Callable[[Any], Any] = _unset

    # --- SourceReader -----------------------------------------------------------------

    def poll_batch(self, max_records: int) -> list[Any] | None:
        return self._poll(max_records)  # type: ignore[return-value]  # lists, columns off

    def _poll(self, max_records: int) -> Sequence[Any] | None:
        if self._consumer is None:
            self._start()
        if self._pending:
            return self._take_pending()
        if self._clock() >= self._next_discovery:
            self._discover(initial=False)
        if not self._splits:
            return None if self._finishes() else []
        messages = self._consumer.consume(max_records, 0)
        if not messages:
            self._check_stops()
            return None if not self._splits and self._finishes() else []
        self._split_into_runs(messages)
        return self._take_pending() if self._pending else []

    def poll_columns(self, max_records: int) -> Sequence[Any] | None:
        """``poll_batch``, each run of one partition a ColumnBatch where the schema makes
        columns of it (``deserialize_columns``), else a list; offsets, timestamps and
        splits exactly as ``poll_batch`` keeps them."""
        if not self._columns:
            self._columns = True
            if self._runs is not None:
                self._runs.columns = True
        return self._poll(max_records)

    def close(self) -> None:
        consumer, self._consumer = self._consumer, None
        self._pending.clear()
        self._assigned.clear()
        if consumer is not None:
            consumer.close()

    # --- SplitSourceReader -------------------------------------------------------------

    def split_ids(self) -> list[str]:
        return [s.split_id for s in self._splits.values()]

    def current_split_id(self) -> str:
        return self._current_split_id

    def current_timestamps(self) -> list[int | None] | None:
        """The Kafka timestamps of the records of the last batch (None for a record
        without one)."""
        return self._current_timestamps

    # --- SplitCheckpointedSourceReader -------------------------------------------------

    def snapshot_splits(self, checkpoint_id: int) -> list[Any]:
        if self._consumer is None:
            if self._restored is not None:
                return list(self._restored)  # not started yet: what it was given
            # A checkpoint before the first poll: the partitions and their starting
            # offsets are taken now, so the checkpoint holds them.
            self._start()
        splits: list[Any] = [
            ("partition", s.topic, s.partition, s.next, s.stop) for s in self._splits.values()
        ]
        splits.extend(
            ("discovery", c.index, c.count, tuple(sorted(c.known))) for c in self._classes
        )
        if self._config.commit_offsets:
            self._commits[checkpoint_id] = {key: s.next for key, s in self._splits.items()}
            while len(self._commits) > _MAX_PENDING_COMMITS:
                del self._commits[min(self._commits)]
        return splits

    def restore_splits(self, splits: list[Any]) -> None:
        for split in splits:
            if not (isinstance(split, tuple) and split and split[0] in ("partition", "discovery")):
                msg = (
                    f"KafkaSource: cannot restore the split {split!r}; the checkpoint was "
                    "taken with another source (drop its state with --allowNonRestoredState)"
                )
                raise SourceStateError(msg)
        self._restored = list(splits)

    def notify_checkpoint_complete(self, checkpoint_id: int) -> None:
        """Commits the offsets of ``checkpoint_id`` to the consumer group, for monitoring
        (the source never starts from them on restore)."""
        offsets = self._commits.pop(checkpoint_id, None)
        for older in [c for c in self._commits if c < checkpoint_id]:
            del self._commits[older]
        if not offsets or self._consumer is None or not self._config.group_id:
            return
        kafka = confluent()
        try:
            self._consumer.commit(
                offsets=[kafka.TopicPartition(t, p, o) for (t, p), o in offsets.items()],
                asynchronous=True,
            )
        except kafka.KafkaException as exc:
            # Committed offsets are for monitoring only; the next checkpoint tries again.
            logger.warning(
                "committing the offsets of checkpoint %d to group %s failed: %s",
                checkpoint_id,
                self._config.group_id,
                exc,
            )

    # --- internals ---------------------------------------------------------------------

    def _finishes(self) -> bool:
        """Whether a reader without partitions is done: in bounded mode, or with stopping
        offsets (set_unbounded), once every partition it took reached them."""
        return self._config.stopping is not None

    def _start(self) -> None:
        config = self._config
        kafka = confluent()
        self._runs = RunDeserializer(config.deserializer, kafka.Message)
        self._runs.columns = self._columns
        self._partition_of = kafka.Message.partition
        group_id = config.group_id or f"weir-kafka-source-{config.client_id_prefix}"
        self._consumer = make_client(
            kafka.Consumer,
            client_config(
                {**_CONSUMER_DEFAULTS, **config.properties},
                **{
                    "bootstrap.servers": config.bootstrap_servers,
                    "group.id": group_id,
                    "client.id": f"{config.client_id_prefix}-{self._subtask}",
                    "enable.auto.commit": False,
                    "enable.auto.offset.store": False,
                    "enable.partition.eof": False,
                    "auto.offset.reset": config.starting.auto_offset_reset,
                    "isolation.level": config.properties.get("isolation.level", "read_uncommitted"),
                    "logger": logger,
                },
            ),
            "consumer",
        )
        if self._restored is not None:
            for split in self._restored:
                if split[0] == "partition":
                    _, topic, partition, next_offset, stop = split
                    self._splits[(topic, partition)] = _Split(topic, partition, next_offset, stop)
                else:
                    _, index, count, known = split
                    self._classes.append(_DiscoveryClass(index, count, {tuple(k) for k in known}))
            self._restored = None
            self._drop_finished()
            self._assign(list(self._splits.values()))
        else:
            self._classes = [_DiscoveryClass(self._subtask, self._parallelism, set())]
            self._discover(initial=True)
        interval = config.discovery_interval_ms
        if interval > 0:
            self._next_discovery = self._clock() + interval / 1000

    def _discover(self, *, initial: bool) -> None:
        """Take the partitions of this reader's classes not taken yet; at the start with
        the starting offsets, later from the earliest offset."""
        config = self._config
        if self._config.discovery_interval_ms > 0:
            self._next_discovery = self._clock() + config.discovery_interval_ms / 1000
        if not self._classes:
            return
        # Before the first assignment polling takes no record: it serves the callbacks.
        found = self._list_partitions(serve=self._consumer.poll if initial else None)
        new: list[TP] = []
        for cls in self._classes:
            for tp in found:
                if tp not in cls.known and split_owner(tp[0], tp[1], cls.count) == cls.index:
                    new.append(tp)
                    cls.known.add(tp)
        if not new:
            return
        starting = config.starting if initial else KafkaOffsetsInitializer.earliest()
        common = {
            "bootstrap_servers": config.bootstrap_servers,
            "group_id": config.group_id,
            "timeout_ms": self._timeout_ms,
        }
        starts = resolve(starting, self._consumer, new, **common)
        stops = (
            resolve(config.stopping, self._consumer, new, **common)
            if config.stopping is not None
            else {}
        )
        added = [_Split(t, p, starts[(t, p)], stops.get((t, p))) for t, p in new]
        if not initial:
            logger.info("Kafka source subtask %d discovered partitions %s", self._subtask, new)
        for split in added:
            self._splits[(split.topic, split.partition)] = split
        self._drop_finished()
        self._assign([s for s in added if not s.finished], incremental=not initial)

    def _list_partitions(self, serve: Callable[[float], Any] | None) -> list[TP]:
        config = self._config
        servers = config.bootstrap_servers
        if config.topics:
            found: list[TP] = []
            for topic in config.topics:
                partitions = topic_partitions(
                    self._consumer, servers, topic, self._timeout_ms, serve=serve
                )
                if topic not in partitions:
                    raise missing_topic(topic, servers, "set_topics(...)")
                found.extend((topic, p) for p in partitions[topic])
            return found
        if config.topic_pattern is not None:
            pattern = re.compile(config.topic_pattern)
            listed = topic_partitions(self._consumer, servers, None, self._timeout_ms, serve=serve)
            return [
                (topic, p)
                for topic, partitions in sorted(listed.items())
                if pattern.fullmatch(topic)
                for p in partitions
            ]
        listed_topics: dict[str, list[int]] = {}
        for topic, partition in config.partitions:
            if topic not in listed_topics:
                listed_topics.update(
                    topic_partitions(self._consumer, servers, topic, self._timeout_ms, serve=serve)
                )
                if topic not in listed_topics:
                    raise missing_topic(topic, servers, "set_partitions(...)")
            if partition not in listed_topics[topic]:
                msg = f"partition {partition} of Kafka topic {topic!r}"
                raise missing_topic(msg, servers, "set_partitions(...)")
        return sorted(config.partitions)

    def _assign(self, splits: list[_Split], *, incremental: bool = False) -> None:
        if not splits:
            return
        kafka = confluent()
        partitions = [kafka.TopicPartition(s.topic, s.partition, s.next) for s in splits]
        if incremental:
            self._consumer.incremental_assign(partitions)
        else:
            self._consumer.assign(partitions)
            self._assigned.clear()
        self._assigned.update((s.topic, s.partition) for s in splits)

    def _drop_finished(self) -> None:
        done = [key for key, split in self._splits.items() if split.finished]
        if not done:
            return
        for key in done:
            del self._splits[key]
        assigned = [key for key in done if key in self._assigned]
        if assigned and self._consumer is not None:
            self._assigned.difference_update(assigned)
            kafka = confluent()
            try:
                self._consumer.incremental_unassign(
                    [kafka.TopicPartition(t, p) for t, p in assigned]
                )
            except kafka.KafkaException:
                logger.debug("unassigning finished partitions %s", assigned, exc_info=True)

    def _check_stops(self) -> None:
        """Finish partitions whose consumer position passed their stopping offset
        without a record to show it (a transaction marker ends them)."""
        now = self._clock()
        if now < self._next_stop_check:
            return
        self._next_stop_check = now + _STOP_CHECK_INTERVAL_S
        bounded = [s for s in self._splits.values() if s.stop is not None]
        if not bounded:
            return
        kafka = confluent()
        positions = self._consumer.position(
            [kafka.TopicPartition(s.topic, s.partition) for s in bounded]
        )
        for tp in positions:
            split = self._splits.get((tp.topic, tp.partition))
            if split is not None and tp.offset >= 0 and split.stop is not None:
                if tp.offset >= split.stop:
                    split.next = max(split.next, split.stop)
        self._drop_finished()

    def _split_into_runs(self, messages: list[Any]) -> None:
        """Cut what the consumer returned into runs of one partition, deserialized, with
        their timestamps and the offset after them."""
        n = len(messages)
        start = 0
        # Mostly all of one partition (one fetch's): then one run, found without a
        # Python call per message.
        partitions = list(map(self._partition_of, messages))
        one_topic = len({topic for topic, _ in self._splits}) == 1
        whole = one_topic and partitions.count(partitions[0]) == n
        while start < n:
            first = messages[start]
            if first.error() is not None:
                self._raise_consumer_error(first)
            partition = partitions[start]
            topic = first.topic()
            end = start + 1
            if whole:
                end = n
            else:
                while end < n and partitions[end] == partition and messages[end].topic() == topic:
                    end += 1
            run = messages[start:end] if start or end != n else messages
            start = end
            split = self._splits.get((topic, partition))
            if split is None:
                continue  # fetched before the partition finished
            if run[-1].error() is not None:
                for message in run:
                    if message.error() is not None:
                        self._raise_consumer_error(message)
            stop = split.stop
            if stop is not None and run[-1].offset() >= stop:
                run = [m for m in run if m.offset() < stop]
                next_offset = stop
            else:
                next_offset = run[-1].offset() + 1
            if run and run[0].offset() < split.next:
                # A duplicate fetch after a seek: keep the records not yet returned.
                run = [m for m in run if m.offset() >= split.next]
            assert self._runs is not None
            values, timestamps = self._runs.run(split.split_id, run)
            self._pending.append((split, values, timestamps, next_offset))

    def _take_pending(self) -> Sequence[Any]:
        """The next run: its records count as read, and its partition as the current one."""
        while self._pending:
            split, values, timestamps, next_offset = self._pending.popleft()
            if (split.topic, split.partition) not in self._splits:
                continue
            split.next = max(split.next, next_offset)
            if split.finished:
                self._drop_finished()
            if values:
                self._current_split_id = split.split_id
                self._current_timestamps = timestamps
                return values
        return []

    def _raise_consumer_error(self, message: Any) -> None:
        error = message.error()
        msg = (
            f"reading Kafka partition {message.topic()}-{message.partition()} failed: "
            f"{error.str()} (bootstrap.servers={self._config.bootstrap_servers!r})"
        )
        raise KafkaConnectorError(msg)
