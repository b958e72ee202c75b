"""KafkaSource's reader against a real Kafka broker: partitions as splits, positions in
checkpoints, rescaling, partition discovery, offsets committed on checkpoint completion,
bounded reading, and the errors a user can cause."""

from __future__ import annotations

import logging
import time
import uuid

import pytest

from weir.common import SimpleStringSchema, Types
from weir.core.source import assign_splits
from weir.datastream.connectors.kafka import (
    KafkaOffsetsInitializer,
    KafkaSource,
    KafkaTopicPartition,
)
from weir.datastream.connectors.kafka.errors import (
    KafkaDeserializationError,
    KafkaTopicNotFoundError,
    KafkaUnreachableError,
)
from weir.datastream.formats.json import JsonRowDeserializationSchema


class Ctx:
    def __init__(self, index: int = 0, parallelism: int = 1) -> None:
        self.index, self.parallelism = index, parallelism

    def get_index_of_this_subtask(self) -> int:
        return self.index

    def get_number_of_parallel_subtasks(self) -> int:
        return self.parallelism


class FakeClock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def _topic(broker, partitions: int) -> str:
    return broker.create_topic(f"src-{uuid.uuid4().hex[:8]}", partitions)


def _builder(broker, topic, **properties):
    builder = (
        KafkaSource.builder()
        .set_bootstrap_servers(broker.bootstrap_servers)
        .set_topics(topic)
        .set_value_only_deserializer(SimpleStringSchema())
    )
    for key, value in properties.items():
        builder.set_property(key.replace("_", "."), value)
    return builder


def _drain(reader, until: int | None = None, seconds: float = 30.0):
    """Batches as (split, records, timestamps) until the reader ends (or holds ``until``
    records), polling as an idle source task does."""
    batches, count = [], 0
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        batch = reader.poll_batch(100)
        if batch is None:
            return batches
        if batch:
            batches.append((reader.current_split_id(), batch, reader.current_timestamps()))
            count += len(batch)
            if until is not None and count >= until:
                return batches
        else:
            time.sleep(0.005)
    if until is None or until > 0:
        raise AssertionError(f"the reader did not end or read {until} records: {batches}")
    return batches


def _read_all(readers, count: int) -> list:
    """What several readers read together, until ``count`` records."""
    found: list = []
    deadline = time.monotonic() + 30
    while len(found) < count and time.monotonic() < deadline:
        for reader in readers:
            found.extend(reader.poll_batch(100) or [])
        time.sleep(0.005)
    return found


def _records(batches):
    return [r for _, batch, _ in batches for r in batch]


def test_bounded_readers_share_the_partitions_and_end(kafka_broker):
    topic = _topic(kafka_broker, 3)
    for p in range(3):
        kafka_broker.produce(
            topic,
            [f"{p}-{i}" for i in range(20)],
            partition=p,
            timestamps=[1000 * (p + 1) + i for i in range(20)],
        )
    source = _builder(kafka_broker, topic).set_bounded(KafkaOffsetsInitializer.latest()).build()
    seen = []
    for index in range(2):
        reader = source.create_reader(Ctx(index, 2))
        batches = _drain(reader)
        reader.close()
        for split, records, timestamps in batches:
            # one partition per batch, records with their Kafka timestamps
            partition = int(split.rsplit("-", 1)[1])
            assert all(r.startswith(f"{partition}-") for r in records)
            assert timestamps == [1000 * (partition + 1) + int(r.split("-")[1]) for r in records]
        seen.extend(_records(batches))
    assert sorted(seen) == sorted(f"{p}-{i}" for p in range(3) for i in range(20))


def test_a_restored_reader_continues_from_the_checkpoint_at_another_parallelism(kafka_broker):
    topic = _topic(kafka_broker, 4)
    for p in range(4):
        kafka_broker.produce(topic, [f"{p}-{i}" for i in range(30)], partition=p)
    source = _builder(kafka_broker, topic).set_bounded(KafkaOffsetsInitializer.latest()).build()
    readers = [source.create_reader(Ctx(i, 2)) for i in range(2)]
    before = [_records(_drain(r, until=25)) for r in readers]
    split_lists = [r.snapshot_splits(1) for r in readers]
    for reader in readers:
        reader.close()  # the rest is read again by the restored readers
    after = []
    for index in range(3):
        reader = source.create_reader(Ctx(index, 3))
        reader.restore_splits(assign_splits(split_lists, index, 3))
        after.extend(_records(_drain(reader)))
        reader.close()
    everything = [r for records in before for r in records] + after
    assert sorted(everything) == sorted(f"{p}-{i}" for p in range(4) for i in range(30))


def test_new_partitions_are_discovered_by_one_reader_each_and_read_from_the_start(kafka_broker):
    topic = _topic(kafka_broker, 1)
    kafka_broker.produce(topic, ["a"], partition=0)
    clock = FakeClock()
    source = _builder(kafka_broker, topic, partition_discovery_interval_ms="1000").build()
    source._clock = clock
    readers = [source.create_reader(Ctx(i, 2)) for i in range(2)]
    assert _read_all(readers, 1) == ["a"]
    # Rescale from the checkpoint: 2 discovery classes over 3 readers.
    split_lists = [reader.snapshot_splits(1) for reader in readers]
    for reader in readers:
        reader.close()
    readers = []
    for index in range(3):
        reader = source.create_reader(Ctx(index, 3))
        reader.restore_splits(assign_splits(split_lists, index, 3))
        assert _drain(reader, until=0, seconds=0.2) == []
        readers.append(reader)
    kafka_broker.add_partitions(topic, 4)
    for p in range(1, 4):
        kafka_broker.produce(topic, [f"new-{p}"], partition=p)
    clock.now += 2  # past the discovery interval
    assert sorted(_read_all(readers, 3)) == ["new-1", "new-2", "new-3"]
    for reader in readers:
        assert _drain(reader, until=0, seconds=0.5) == []  # nothing read twice
        reader.close()


def test_offsets_are_committed_to_the_group_only_when_the_checkpoint_completes(kafka_broker):
    from confluent_kafka import Consumer, TopicPartition

    topic = _topic(kafka_broker, 1)
    kafka_broker.produce(topic, [str(i) for i in range(10)])
    group = f"group-{uuid.uuid4().hex[:6]}"
    reader = _builder(kafka_broker, topic).set_group_id(group).build().create_reader(Ctx())
    assert len(_records(_drain(reader, until=10))) == 10
    reader.snapshot_splits(5)

    def committed():
        probe = Consumer({"bootstrap.servers": kafka_broker.bootstrap_servers, "group.id": group})
        try:
            return probe.committed([TopicPartition(topic, 0)], timeout=10)[0].offset
        finally:
            probe.close()

    assert committed() < 0
    reader.notify_checkpoint_complete(5)
    reader.poll_batch(10)  # serves the asynchronous commit
    deadline = time.monotonic() + 30
    while committed() != 10 and time.monotonic() < deadline:
        reader.poll_batch(10)
        time.sleep(0.1)
    assert committed() == 10
    reader.close()


def test_starting_offsets_and_a_transactional_topic_read_to_its_end(kafka_broker):
    from confluent_kafka import Consumer, Producer, TopicPartition

    topic = _topic(kafka_broker, 1)
    producer = Producer(
        {"bootstrap.servers": kafka_broker.bootstrap_servers, "transactional.id": topic}
    )
    producer.init_transactions()
    producer.begin_transaction()
    for i in range(10):
        producer.produce(topic, str(i).encode())
    producer.commit_transaction()
    # The commit returns once the coordinator logged it; the markers that move the
    # partition's last stable offset (a read_committed reader's end) follow. Await them,
    # or the reader's end is the offset before the transaction.
    probe = Consumer(
        {
            "bootstrap.servers": kafka_broker.bootstrap_servers,
            "group.id": f"probe-{topic}",
            "isolation.level": "read_committed",
        }
    )
    deadline = time.monotonic() + 60
    while probe.get_watermark_offsets(TopicPartition(topic, 0), timeout=10)[1] < 11:
        assert time.monotonic() < deadline, "the transaction's commit marker never came"
        time.sleep(0.05)
    probe.close()
    # The partition ends with a commit marker: the bounded reader must still end.
    source = (
        _builder(kafka_broker, topic, isolation_level="read_committed")
        .set_starting_offsets(KafkaOffsetsInitializer.offsets({KafkaTopicPartition(topic, 0): 4}))
        .set_bounded(KafkaOffsetsInitializer.latest())
        .build()
    )
    reader = source.create_reader(Ctx())
    assert _records(_drain(reader)) == [str(i) for i in range(4, 10)]
    reader.close()


class TestBadInput:
    def test_an_unreachable_broker_names_the_servers_and_the_setting(self):
        source = (
            KafkaSource.builder()
            .set_bootstrap_servers("127.0.0.1:1")
            .set_topics("t")
            .set_value_only_deserializer(SimpleStringSchema())
            .set_property("default.api.timeout.ms", "1500")
            .build()
        )
        reader = source.create_reader(Ctx())
        with pytest.raises(KafkaUnreachableError, match=r"127\.0\.0\.1:1.*set_bootstrap_servers"):
            reader.poll_batch(10)
        reader.close()

    def test_a_missing_topic_names_the_topic_and_the_setting(self, kafka_broker):
        reader = _builder(kafka_broker, "no-such-topic").build().create_reader(Ctx())
        with pytest.raises(KafkaTopicNotFoundError, match=r"'no-such-topic'.*set_topics"):
            reader.poll_batch(10)
        reader.close()

    def test_a_record_that_does_not_deserialize_names_its_offset(self, kafka_broker):
        topic = _topic(kafka_broker, 1)
        kafka_broker.produce(topic, [b'{"id": 1}', b'{"id": 2}', b"garbage", b'{"id": 4}'])
        schema = (
            JsonRowDeserializationSchema.builder()
            .type_info(Types.ROW_NAMED(["id"], [Types.INT()]))
            .build()
        )
        reader = (
            _builder(kafka_broker, topic)
            .set_value_only_deserializer(schema)
            .set_bounded(KafkaOffsetsInitializer.latest())
            .build()
            .create_reader(Ctx())
        )
        with pytest.raises(
            KafkaDeserializationError,
            match=rf"offset 2 of Kafka partition {topic}-0 \(b'garbage'\)",
        ):
            _drain(reader)
        reader.close()


def test_a_checkpoint_before_the_first_poll_holds_the_starting_offsets(kafka_broker):
    topic = _topic(kafka_broker, 2)
    for p in range(2):
        kafka_broker.produce(topic, [f"{p}-{i}" for i in range(5)], partition=p)
    source = _builder(kafka_broker, topic).set_bounded(KafkaOffsetsInitializer.latest()).build()
    first = source.create_reader(Ctx())
    splits = first.snapshot_splits(1)  # a checkpoint the task took before polling
    first.close()
    restored = source.create_reader(Ctx())
    restored.restore_splits(splits)
    assert sorted(_records(_drain(restored))) == sorted(
        f"{p}-{i}" for p in range(2) for i in range(5)
    )
    restored.close()


def test_a_bounded_read_that_starts_at_a_partitions_end_releases_no_partition_it_never_took(
    kafka_broker, caplog
):
    """A partition already at its stopping offset when the read starts is never assigned,
    so it is not unassigned either: librdkafka would log "Can't subtract from empty
    assignment" for it (and for any partition not in the assignment)."""
    topic = _topic(kafka_broker, 3)
    kafka_broker.produce(topic, ["a", "b"], partition=1)  # 0 and 2 stay empty
    source = _builder(kafka_broker, topic).set_bounded(KafkaOffsetsInitializer.latest()).build()
    with caplog.at_level(logging.DEBUG):
        reader = source.create_reader(Ctx())
        assert _records(_drain(reader)) == ["a", "b"]
        # Restored with partition 0 at its end (next offset = stopping offset).
        restored = source.create_reader(Ctx())
        restored.restore_splits([("partition", topic, 0, 0, 0), ("partition", topic, 1, 0, 2)])
        assert _records(_drain(restored)) == ["a", "b"]
        reader.close()
        restored.close()
    complaints = [r.getMessage() for r in caplog.records if "assignment" in r.getMessage()]
    assert complaints == []


def test_json_rows_read_as_columns_are_the_rows_read_one_by_one(kafka_broker):
    """``poll_columns`` hands a batch of JSON Rows of numbers and strings over as
    columns: their records are the Rows ``poll_batch`` gives, with the same timestamps,
    splits and offsets; a batch with a null number comes as Rows."""
    topic = _topic(kafka_broker, 2)
    for p in range(2):
        messages = [f'{{"id": {i}, "name": "n{i}", "score": {i / 4}}}' for i in range(40)]
        if p == 1:
            messages[7] = '{"id": null, "name": "none"}'
        kafka_broker.produce(topic, messages, partition=p, timestamps=[1000 + i for i in range(40)])
    row = Types.ROW_NAMED(["id", "name", "score"], [Types.LONG(), Types.STRING(), Types.DOUBLE()])
    schema = JsonRowDeserializationSchema.builder().type_info(row).build()
    source = (
        _builder(kafka_broker, topic)
        .set_value_only_deserializer(schema)
        .set_bounded(KafkaOffsetsInitializer.latest())
        .build()
    )
    by_rows, by_columns = source.create_reader(Ctx()), source.create_reader(Ctx())
    kinds = set()
    rows, columns = [], []
    for reader, out, poll in (
        (by_rows, rows, by_rows.poll_batch),
        (by_columns, columns, by_columns.poll_columns),
    ):
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            batch = poll(100)
            if batch is None:
                break
            if batch:
                if reader is by_columns:
                    kinds.add((reader.current_split_id(), type(batch).__name__))
                out.append((reader.current_split_id(), list(batch), reader.current_timestamps()))
            else:
                time.sleep(0.005)
        # Both read their partitions to the end: only the discovery split is left.
        assert [s[0] for s in reader.snapshot_splits(1)] == ["discovery"]
        reader.close()
    assert sorted(columns, key=lambda b: b[0]) == sorted(rows, key=lambda b: b[0])
    assert (f"{topic}-0", "ColumnBatch") in kinds
    assert (f"{topic}-1", "list") in kinds  # the null id: Rows
    assert all(type(r) is type(rows[0][1][0]) for _, batch, _ in columns for r in batch)
