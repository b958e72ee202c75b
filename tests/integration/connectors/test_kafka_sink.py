"""KafkaSink against a real Kafka broker, its hooks driven as a task drives them: what a
``read_committed`` consumer sees with each delivery guarantee, recovery of pre-committed
transactions, lingering transactions, fencing, and the errors a user can cause."""

from __future__ import annotations

import time
import uuid

import pytest
from confluent_kafka import Producer

from weir.common import SimpleStringSchema
from weir.datastream.connectors import DeliveryGuarantee
from weir.datastream.connectors.kafka import KafkaRecordSerializationSchema, KafkaSink
from weir.datastream.connectors.kafka.errors import (
    KafkaProducerFencedError,
    KafkaTopicNotFoundError,
    KafkaUnreachableError,
)
from weir.taskmanager.operators.function_state import (
    initialize_function_state,
    snapshot_function_state,
)
from weir.taskmanager.state.operator_state import DefaultOperatorStateBackend


class RecordContext:
    """A sink's context for a record (``timestamp()``) or a batch (``batch_timestamps``)."""

    def __init__(self, timestamp=None, batch_timestamps=None) -> None:
        self._timestamp = timestamp
        self.batch_timestamps = batch_timestamps

    def timestamp(self):
        return self._timestamp


NO_TIMESTAMP = RecordContext()


class Ctx:
    def __init__(self, index: int = 0, parallelism: int = 1) -> None:
        self.index, self.parallelism = index, parallelism

    def get_index_of_this_subtask(self) -> int:
        return self.index

    def get_number_of_parallel_subtasks(self) -> int:
        return self.parallelism


class Subtask:
    """One sink subtask: its state store, restored from ``restored`` (a list of
    ``(data, partitions)`` snapshots of old subtasks) at checkpoint ``restored_id``."""

    def __init__(self, sink, ctx=None, restored=None, restored_id=None):
        self.sink = sink
        self.store = DefaultOperatorStateBackend()
        if restored is not None:
            self.store.restore(restored)
        initialize_function_state(
            sink, self.store, restored=restored is not None, restored_checkpoint_id=restored_id
        )
        sink.open(ctx or Ctx())

    def write(self, values):
        for value in values:
            self.sink.invoke(value, NO_TIMESTAMP)

    def checkpoint(self, checkpoint_id):
        snapshot_function_state(self.sink, self.store, checkpoint_id, 0)
        snapshot = self.store.snapshot()
        return (snapshot.data, snapshot.partitions)


def _sink(broker, topic, guarantee, prefix=None, **properties):
    # The test broker's transaction.max.timeout.ms is Kafka's default, 15 minutes.
    properties.setdefault("transaction_timeout_ms", "900000")
    builder = (
        KafkaSink.builder()
        .set_bootstrap_servers(broker.bootstrap_servers)
        .set_record_serializer(
            KafkaRecordSerializationSchema.builder()
            .set_topic(topic)
            .set_value_serialization_schema(SimpleStringSchema())
            .build()
        )
        .set_delivery_guarantee(guarantee)
        .set_transactional_id_prefix(prefix or f"p-{uuid.uuid4().hex[:8]}")
    )
    for key, value in properties.items():
        builder.set_property(key.replace("_", "."), value)
    return builder.build()


def _values(broker, topic, expected=None):
    return sorted(
        v.decode() for *_, v in broker.read_committed(topic, expected=expected, timeout=20)
    )


def _topic(broker, partitions=1):
    return broker.create_topic(f"sink-{uuid.uuid4().hex[:8]}", partitions)


def test_exactly_once_shows_records_when_their_checkpoint_completes(kafka_broker):
    topic = _topic(kafka_broker)
    task = Subtask(_sink(kafka_broker, topic, DeliveryGuarantee.EXACTLY_ONCE))
    task.write(["a", "b"])
    task.checkpoint(1)
    task.write(["c"])
    assert _values(kafka_broker, topic) == []  # pre-committed is not committed
    task.sink.notify_checkpoint_complete(1)
    assert _values(kafka_broker, topic, expected=2) == ["a", "b"]
    task.checkpoint(2)
    task.sink.notify_checkpoint_complete(2)
    task.sink.close()
    assert _values(kafka_broker, topic, expected=3) == ["a", "b", "c"]


def test_a_transaction_pre_committed_before_a_crash_is_committed_by_the_restored_job(
    kafka_broker,
):
    """The checkpoint completed, the process died before its commit reached Kafka: the
    restored sink commits the transaction from its producer id and epoch (a new producer
    initialising that id would abort it), and aborts what was written after it."""
    topic = _topic(kafka_broker)
    prefix = f"crash-{uuid.uuid4().hex[:8]}"
    first = Subtask(_sink(kafka_broker, topic, DeliveryGuarantee.EXACTLY_ONCE, prefix))
    first.write(["a", "b"])
    state = first.checkpoint(1)
    first.write(["lost-after-the-checkpoint"])
    first.sink._writer._current.producer.flush()
    # The crash: no notify_checkpoint_complete, no close; its producers are gone.
    first.sink._writer._executor.shutdown(wait=True)
    first.sink._writer = None

    restored = Subtask(
        _sink(kafka_broker, topic, DeliveryGuarantee.EXACTLY_ONCE, prefix),
        restored=[state],
        restored_id=1,
    )
    # Nothing lingers: the read_committed end is not held back by the crashed transaction.
    assert _values(kafka_broker, topic, expected=2) == ["a", "b"]
    restored.write(["c"])
    restored.checkpoint(2)
    restored.sink.notify_checkpoint_complete(2)
    restored.sink.close()
    assert _values(kafka_broker, topic, expected=3) == ["a", "b", "c"]


def test_recovery_commits_each_transaction_once_however_often_it_is_restored(kafka_broker):
    topic = _topic(kafka_broker)
    prefix = f"again-{uuid.uuid4().hex[:8]}"
    task = Subtask(_sink(kafka_broker, topic, DeliveryGuarantee.EXACTLY_ONCE, prefix))
    task.write(["a"])
    state = task.checkpoint(1)
    task.sink.notify_checkpoint_complete(1)  # committed before the crash
    task.sink._writer._executor.shutdown(wait=True)
    task.sink._writer = None
    for _ in range(2):
        again = Subtask(
            _sink(kafka_broker, topic, DeliveryGuarantee.EXACTLY_ONCE, prefix),
            restored=[state],
            restored_id=1,
        )
        again.sink.close()
    assert _values(kafka_broker, topic, expected=1) == ["a"]


def test_rescaled_sinks_commit_every_old_subtasks_transactions_and_abort_the_rest(kafka_broker):
    topic = _topic(kafka_broker, 2)
    prefix = f"rescale-{uuid.uuid4().hex[:8]}"
    old = [
        Subtask(_sink(kafka_broker, topic, DeliveryGuarantee.EXACTLY_ONCE, prefix), Ctx(i, 3))
        for i in range(3)
    ]
    states = []
    for i, task in enumerate(old):
        task.write([f"{i}-kept"])
        states.append(task.checkpoint(4))
        task.write([f"{i}-after"])
        task.sink._writer._current.producer.flush()
        task.sink._writer._executor.shutdown(wait=True)
        task.sink._writer = None
    # Two new subtasks: round-robin shares of the old states, as the task hands them.
    new = [
        Subtask(
            _sink(kafka_broker, topic, DeliveryGuarantee.EXACTLY_ONCE, prefix),
            Ctx(i, 2),
            restored=states[i::2],
            restored_id=4,
        )
        for i in range(2)
    ]
    assert _values(kafka_broker, topic, expected=3) == ["0-kept", "1-kept", "2-kept"]
    for task in new:
        task.sink.close()


def test_a_fenced_sink_names_the_prefix_setting(kafka_broker):
    topic = _topic(kafka_broker)
    task = Subtask(_sink(kafka_broker, topic, DeliveryGuarantee.EXACTLY_ONCE, "shared-prefix"))
    task.write(["a"])
    task.checkpoint(1)
    # Another producer with the same transactional id (another job with the same prefix).
    intruder = Producer(
        {
            "bootstrap.servers": kafka_broker.bootstrap_servers,
            "transactional.id": "shared-prefix-0-1",
        }
    )
    intruder.init_transactions()
    task.sink.notify_checkpoint_complete(1)  # commits in the background
    with pytest.raises(KafkaProducerFencedError, match="set_transactional_id_prefix"):
        task.sink.close()  # which waits for the commit, and fails with it
    assert _values(kafka_broker, topic) == []  # aborted, never committed


def test_at_least_once_flushes_at_every_checkpoint(kafka_broker):
    topic = _topic(kafka_broker)
    task = Subtask(_sink(kafka_broker, topic, DeliveryGuarantee.AT_LEAST_ONCE, linger_ms="60000"))
    task.write([str(i) for i in range(100)])
    task.checkpoint(1)  # returns only once Kafka acknowledged all of them
    assert len(kafka_broker.read_committed(topic, timeout=0)) == 100
    task.sink.close()


class TestBadInput:
    def test_a_missing_topic_names_it(self, kafka_broker):
        sink = _sink(kafka_broker, "no-such-topic", DeliveryGuarantee.AT_LEAST_ONCE)
        with pytest.raises(KafkaTopicNotFoundError, match=r"'no-such-topic'.*set_topic"):
            Subtask(sink)
        sink.close()

    def test_an_unreachable_broker_names_the_servers(self):
        sink = (
            KafkaSink.builder()
            .set_bootstrap_servers("127.0.0.1:1")
            .set_record_serializer(
                KafkaRecordSerializationSchema.builder()
                .set_topic("t")
                .set_value_serialization_schema(SimpleStringSchema())
                .build()
            )
            .set_property("default.api.timeout.ms", "1500")
            .build()
        )
        with pytest.raises(KafkaUnreachableError, match=r"127\.0\.0\.1:1.*set_bootstrap_servers"):
            Subtask(sink)
        sink.close()


def test_a_transaction_whose_commit_was_under_way_stays_in_later_checkpoints(kafka_broker):
    """Checkpoint 1 completed and its commit was queued behind other work when the process
    died after checkpoint 2: checkpoint 2 must still hold transaction 1, or the restored
    job aborts it as lingering and its records are lost."""
    import threading

    topic = _topic(kafka_broker)
    prefix = f"under-way-{uuid.uuid4().hex[:8]}"
    task = Subtask(_sink(kafka_broker, topic, DeliveryGuarantee.EXACTLY_ONCE, prefix))
    writer = task.sink._writer
    task.write(["a"])
    task.checkpoint(1)
    busy = threading.Event()
    writer._executor.submit(busy.wait)  # the background thread is busy
    task.sink.notify_checkpoint_complete(1)  # so this commit waits in its queue
    task.write(["b"])
    state = task.checkpoint(2)
    # The crash: the queued commit never runs.
    writer._executor.shutdown(wait=False, cancel_futures=True)
    busy.set()
    task.sink._writer = None

    restored = Subtask(
        _sink(kafka_broker, topic, DeliveryGuarantee.EXACTLY_ONCE, prefix),
        restored=[state],
        restored_id=2,
    )
    restored.sink.close()
    assert _values(kafka_broker, topic, expected=2) == ["a", "b"]


@pytest.mark.parametrize(
    "guarantee", [DeliveryGuarantee.AT_LEAST_ONCE, DeliveryGuarantee.EXACTLY_ONCE]
)
def test_records_carry_their_timestamps_into_kafka_as_flinks_sink_writes_them(
    kafka_broker, guarantee
):
    """Flink's KafkaSink sets each Kafka record's timestamp to the element's; an element
    without one (or with a negative one) is stamped by the producer when it is written."""
    topic = _topic(kafka_broker)
    task = Subtask(_sink(kafka_broker, topic, guarantee))
    before = int(time.time() * 1000)
    task.sink.invoke_batch(
        ["a", "b", "c", "d"], RecordContext(batch_timestamps=[1_000, None, 3_000, -5])
    )
    task.sink.invoke("e", RecordContext(timestamp=5_000))
    task.sink.invoke_batch(["f"], RecordContext(batch_timestamps=None))
    task.checkpoint(1)
    task.sink.notify_checkpoint_complete(1)
    task.sink.close()
    found = kafka_broker.read_timestamps(topic, expected=6)
    assert {v: found[v] for v in (b"a", b"c", b"e")} == {b"a": 1_000, b"c": 3_000, b"e": 5_000}
    for value in (b"b", b"d", b"f"):
        assert found[value] >= before, (value, found[value])
