"""The Kafka sink's writers: one producer per subtask for ``NONE`` and ``AT_LEAST_ONCE``,
one transactional producer per open transaction for ``EXACTLY_ONCE``.

Every call comes from the task thread. librdkafka batches and sends from its own
threads; a record's failure comes back through the delivery report (only failures are
reported: ``delivery.report.only.error``), served by ``poll`` every few hundred records
and by the ``flush`` of a checkpoint, and fails the job.

Exactly once, step by step (``_transactions`` has the why):

1. ``start``: commit the pre-committed transactions the restored checkpoint holds, with
   their producer ids and epochs; abort the lingering ones of earlier attempts; open
   transaction ``R + 1`` (R: the restored checkpoint, 0 on a fresh start).
2. ``prepare(c)``, at checkpoint ``c``: flush (every record acknowledged), keep the
   transaction pending under ``c`` with its producer id and epoch, and switch to
   transaction ``c + 1``, whose producer was initialised in the background meanwhile
   (``init_transactions`` takes ~80 ms here), its id and epoch then asked of the
   coordinator. A transaction without records is kept open instead.
3. ``commit_up_to(c)``, when checkpoint ``c`` completes: commit every pending transaction
   of a checkpoint up to ``c``, on the background thread, while the task writes on; each
   stays in the checkpoints' state until its commit is confirmed.
4. ``close``: abort the open transaction; pending ones stay for the restored job.
"""

from __future__ import annotations

import concurrent.futures
import logging
from collections.abc import Callable, Sequence
from itertools import repeat
from typing import Any

from weir.datastream.connectors.kafka._client import (
    api_timeout_ms,
    client_config,
    confluent,
    make_client,
    missing_topic,
    topic_partitions,
)
from weir.datastream.connectors.kafka._transactions import (
    PreparedTransaction,
    TransactionCoordinatorClient,
    abort_transaction,
    parse_transactional_id,
    transactional_id,
)
from weir.datastream.connectors.kafka.errors import (
    KafkaConfigurationError,
    KafkaProduceError,
    KafkaProducerFencedError,
    KafkaTransactionError,
)

logger = logging.getLogger(__name__)

# Delivery reports are served every this many records (and at every flush): often enough
# that a failure stops the job soon, rarely enough to cost nothing per record.
_POLL_EVERY = 500
# Flink's KafkaSink default (DEFAULT_KAFKA_TRANSACTION_TIMEOUT): an hour, well above any
# checkpoint interval plus restart time. Brokers refuse a timeout above their
# transaction.max.timeout.ms (15 minutes by default): as with Flink, a job sets a lower
# one (the README's example does) or the brokers' limit is raised.
DEFAULT_TRANSACTION_TIMEOUT_MS = 3_600_000

Serialize = Callable[[Any], tuple[str, bytes | None, bytes]]
SerializeAll = Callable[[Sequence[Any]], tuple[str, list[bytes | None] | None, list[bytes]]]
"""A batch of records -> (their one topic, their keys or None, their values)."""


class _Deliveries:
    """Failed deliveries librdkafka reported (its delivery callback runs inside
    ``poll``/``flush`` on the calling thread)."""

    def __init__(self) -> None:
        self.failures: list[str] = []

    def on_delivery(self, error: Any, message: Any) -> None:
        if error is not None:
            self.failures.append(
                f"{error.str()} (topic {message.topic()}, partition {message.partition()})"
            )

    def check(self, servers: str) -> None:
        if self.failures:
            failures, self.failures = self.failures, []
            msg = (
                f"Kafka refused or lost {len(failures)} record(s) written to {servers}: "
                f"{failures[0]}; check the topic and the producer properties "
                "(message.timeout.ms, acks)"
            )
            raise KafkaProduceError(msg)


class _Writer:
    """What both writers share: the producer configuration and the write path."""

    def __init__(
        self, settings: Any, serialize: Serialize, serialize_all: SerializeAll | None = None
    ) -> None:
        self._settings = settings
        self._serialize = serialize
        self._serialize_all = serialize_all
        self._timeout_ms = api_timeout_ms(settings.properties)
        self._deliveries = _Deliveries()
        self._checked_topics: set[str] = set()
        self._unpolled = 0

    def _producer_config(self, **overrides: Any) -> dict[str, Any]:
        return client_config(
            self._settings.properties,
            **{
                "bootstrap.servers": self._settings.bootstrap_servers,
                "delivery.report.only.error": True,
                "on_delivery": self._deliveries.on_delivery,
                "logger": logger,
                **overrides,
            },
        )

    def _check_topic(self, producer: Any, topic: str) -> None:
        """A missing topic fails at once, naming it (librdkafka would retry the records
        until message.timeout.ms)."""
        servers = self._settings.bootstrap_servers
        found = topic_partitions(producer, servers, topic, self._timeout_ms, serve=producer.poll)
        if topic not in found:
            raise missing_topic(topic, servers, "the record serializer's set_topic(...)")
        self._checked_topics.add(topic)

    def _produce(self, producer: Any, value: Any, timestamp: int | None) -> None:
        """One record, with its timestamp as the Kafka record's (Flink's KafkaSink writes
        the element's timestamp; none, or a negative one, leaves it to the producer)."""
        self._produce_batch(producer, (value,), (timestamp,))

    def _produce_batch(
        self, producer: Any, values: Sequence[Any], timestamps: Sequence[int | None] | None
    ) -> None:
        """The records of a batch in one loop: the task's batch goes to librdkafka with
        one Python call per record, ``produce`` itself."""
        if self._serialize_all is not None and len(values) > 1:
            self._produce_serialized(producer, *self._serialize_all(values), timestamps)
            return
        serialize = self._serialize
        produce = producer.produce
        checked = self._checked_topics
        if timestamps is None:
            timestamps = (None,) * len(values)
        for value, timestamp in zip(values, timestamps, strict=True):
            topic, key, payload = serialize(value)
            if topic not in checked:
                self._check_topic(producer, topic)
            # librdkafka reads 0 as "now": no timestamp of the record's own.
            ms = timestamp if timestamp is not None and timestamp > 0 else 0
            try:
                produce(topic, payload, key, timestamp=ms)
            except BufferError:
                # librdkafka's queue is full: serve it until there is room.
                while True:
                    producer.poll(0.05)
                    try:
                        produce(topic, payload, key, timestamp=ms)
                        break
                    except BufferError:
                        continue
        self._unpolled += len(values)
        if self._unpolled >= _POLL_EVERY:
            self._unpolled = 0
            producer.poll(0)
            self._deliveries.check(self._settings.bootstrap_servers)

    def _produce_serialized(
        self,
        producer: Any,
        topic: str,
        keys: list[bytes | None] | None,
        payloads: list[bytes],
        timestamps: Sequence[int | None] | None,
    ) -> None:
        """A batch serialized at once (one topic): ``produce`` per record and nothing
        else. Its arguments go by position (topic, value, key, partition, on_delivery,
        callback, timestamp): confluent-kafka parses keywords at about twice the cost of
        the rest of the call."""
        if topic not in self._checked_topics:
            self._check_topic(producer, topic)
        produce = producer.produce
        if timestamps is not None and type(timestamps) is not list:
            timestamps = timestamps.tolist()  # type: ignore[attr-defined]  # an int64 column
        # repeat() stands in for a missing list, so the zip is not strict.
        stamps = repeat(None) if timestamps is None else timestamps
        for payload, key, t in zip(
            payloads, repeat(None) if keys is None else keys, stamps, strict=False
        ):
            # librdkafka reads 0 as "now": no timestamp of the record's own.
            ms = t if t is not None and t > 0 else 0
            try:
                produce(topic, payload, key, -1, None, None, ms)
            except BufferError:
                # librdkafka's queue is full: serve it until there is room.
                while True:
                    producer.poll(0.05)
                    try:
                        produce(topic, payload, key, -1, None, None, ms)
                        break
                    except BufferError:
                        continue
        self._unpolled += len(payloads)
        if self._unpolled >= _POLL_EVERY:
            self._unpolled = 0
            producer.poll(0)
            self._deliveries.check(self._settings.bootstrap_servers)

    def _flush(self, producer: Any) -> None:
        remaining = producer.flush(self._timeout_ms / 1000)
        self._deliveries.check(self._settings.bootstrap_servers)
        if remaining:
            msg = (
                f"{remaining} record(s) were not acknowledged by Kafka at "
                f"{self._settings.bootstrap_servers} within {self._timeout_ms} ms; check "
                "that the brokers are up (property default.api.timeout.ms sets the wait)"
            )
            raise KafkaProduceError(msg)


class NonTransactionalWriter(_Writer):
    """``NONE`` and ``AT_LEAST_ONCE``: one producer; a checkpoint waits for every record
    to be acknowledged unless the guarantee is NONE."""

    def __init__(
        self,
        settings: Any,
        serialize: Serialize,
        *,
        flush_on_checkpoint: bool,
        serialize_all: SerializeAll | None = None,
    ):
        super().__init__(settings, serialize, serialize_all)
        self._flush_on_checkpoint = flush_on_checkpoint
        kafka = confluent()
        self._producer = make_client(kafka.Producer, self._producer_config(), "producer")
        self.write = self._write

    def start(self, restored: list[Any], restored_checkpoint_id: int | None) -> None:
        """Nothing to recover: a restart may write records again (AT_LEAST_ONCE)."""
        for topic in self._settings.fixed_topics:
            self._check_topic(self._producer, topic)

    def _write(self, value: Any, timestamp: int | None = None) -> None:
        self._produce(self._producer, value, timestamp)

    def write_batch(self, values: Sequence[Any], timestamps: Sequence[int | None] | None) -> None:
        self._produce_batch(self._producer, values, timestamps)

    def prepare(self, checkpoint_id: int) -> dict[str, Any] | None:
        if self._flush_on_checkpoint:
            self._flush(self._producer)
        else:
            self._producer.poll(0)
            self._deliveries.check(self._settings.bootstrap_servers)
        return None

    def commit_up_to(self, checkpoint_id: int) -> None:
        """Nothing to commit: records are visible once written."""

    def finish(self) -> None:
        if self._flush_on_checkpoint:
            self._flush(self._producer)

    def close(self) -> None:
        producer, self._producer = self._producer, None
        if producer is not None:
            # What NONE left in flight gets a moment; then it is given up.
            producer.flush(1.0 if not self._flush_on_checkpoint else 0)


class _Transaction:
    __slots__ = ("epoch", "number", "producer", "producer_id", "records", "tid")

    def __init__(self, tid: str, number: int, producer: Any, identity: tuple[int, int]) -> None:
        self.tid = tid
        self.number = number
        self.producer = producer
        self.producer_id, self.epoch = identity
        self.records = 0


class ExactlyOnceWriter(_Writer):
    """``EXACTLY_ONCE``: a Kafka transaction per checkpoint (see the module docstring)."""

    def __init__(
        self,
        settings: Any,
        serialize: Serialize,
        subtask: int,
        parallelism: int,
        serialize_all: SerializeAll | None = None,
    ):
        super().__init__(settings, serialize, serialize_all)
        self._subtask = subtask
        self._parallelism = parallelism
        self._prefix = settings.transactional_id_prefix
        self._coordinator = TransactionCoordinatorClient(
            settings.bootstrap_servers, self._timeout_ms, dict(settings.properties)
        )
        self._current: _Transaction | None = None
        self._pending: dict[int, tuple[_Transaction, PreparedTransaction]] = {}
        self._finished = False
        self._executor = concurrent.futures.ThreadPoolExecutor(
            1, thread_name_prefix=f"kafka-sink-{subtask}-producer-init"
        )
        self._next: tuple[int, concurrent.futures.Future[Any]] | None = None
        # Commits under way, with what the checkpoint keeps of them: until a commit is
        # confirmed its transaction stays in every checkpoint's state, so a restore from a
        # later checkpoint still commits it if the process died before the commit did.
        self._commits: list[tuple[concurrent.futures.Future[None], PreparedTransaction]] = []
        self.write = self._write

    # -- the producers -------------------------------------------------------------------
    def _transaction_config(self, tid: str) -> dict[str, Any]:
        return self._producer_config(
            **{
                "transactional.id": tid,
                "transaction.timeout.ms": int(
                    self._settings.properties.get(
                        "transaction.timeout.ms", DEFAULT_TRANSACTION_TIMEOUT_MS
                    )
                ),
            }
        )

    def _new_producer(self, tid: str) -> tuple[Any, tuple[int, int]]:
        """A producer of ``tid`` with its transactions initialised (which fences any earlier
        producer of ``tid`` and aborts what it left open), and the producer id and epoch
        the coordinator gave it: those of the one transaction it will run."""
        kafka = confluent()
        producer = make_client(kafka.Producer, self._transaction_config(tid), "producer")
        try:
            producer.init_transactions(self._timeout_ms / 1000)
        except kafka.KafkaException as exc:
            error = exc.args[0]
            if error.code() == kafka.KafkaError.INVALID_TRANSACTION_TIMEOUT:
                timeout_ms = self._transaction_config(tid)["transaction.timeout.ms"]
                msg = (
                    f"the Kafka brokers at {self._settings.bootstrap_servers} refuse the "
                    f"sink's transaction.timeout.ms ({timeout_ms} ms"
                    + (", Flink's default" if timeout_ms == DEFAULT_TRANSACTION_TIMEOUT_MS else "")
                    + "): it is above their transaction.max.timeout.ms (15 minutes unless "
                    "raised). Lower it on the sink, e.g. KafkaSink.builder()"
                    ".set_property('transaction.timeout.ms', '900000'), keeping it above the "
                    "checkpoint interval plus the restart time; or raise "
                    "transaction.max.timeout.ms in the brokers' server.properties"
                )
                raise KafkaConfigurationError(msg) from exc
            msg = f"initialising the Kafka transactions of {tid} failed: {error.str()}"
            raise KafkaTransactionError(msg) from exc
        return producer, self._coordinator.producer_of(tid)

    def _open(self, number: int) -> _Transaction:
        """Transaction ``number``: the producer made in the background if it is that one,
        else a new one; the one after it starts being made."""
        tid = transactional_id(self._prefix, self._subtask, number)
        made = None
        if self._next is not None:
            next_number, future = self._next
            self._next = None
            if next_number == number:
                made = future.result()
            else:
                future.cancel()
        if made is None:
            made = self._new_producer(tid)
        producer, identity = made
        producer.begin_transaction()
        following = number + 1
        self._next = (
            following,
            self._executor.submit(
                self._new_producer, transactional_id(self._prefix, self._subtask, following)
            ),
        )
        return _Transaction(tid, number, producer, identity)

    # -- the writer protocol ---------------------------------------------------------------
    def start(self, restored: list[Any], restored_checkpoint_id: int | None) -> None:
        keep: set[str] = set()
        for entry in restored:
            for prepared in sorted(
                (PreparedTransaction(*p) for p in entry["pending"]), key=lambda p: p.checkpoint_id
            ):
                keep.add(prepared.transactional_id)
                self._coordinator.commit(prepared)
        for tid in self._coordinator.ongoing(self._prefix):
            parsed = parse_transactional_id(self._prefix, tid)
            if parsed is None or tid in keep:
                continue
            if parsed[0] % self._parallelism == self._subtask:
                abort_transaction(tid, self._producer_config())
        self._current = self._open((restored_checkpoint_id or 0) + 1)
        for topic in self._settings.fixed_topics:
            self._check_topic(self._current.producer, topic)

    def _write(self, value: Any, timestamp: int | None = None) -> None:
        self.write_batch((value,), (timestamp,))

    def write_batch(self, values: Sequence[Any], timestamps: Sequence[int | None] | None) -> None:
        current = self._current
        if current is None:
            msg = "the exactly-once Kafka sink got a record after the end of its input"
            raise KafkaTransactionError(msg)
        self._produce_batch(current.producer, values, timestamps)
        current.records += len(values)

    def prepare(self, checkpoint_id: int) -> dict[str, Any]:
        self._raise_failed_commits()
        current = self._current
        if current is not None and current.records:
            self._flush(current.producer)
            prepared = PreparedTransaction(
                current.tid, current.producer_id, current.epoch, checkpoint_id
            )
            self._pending[checkpoint_id] = (current, prepared)
            self._current = None if self._finished else self._open(checkpoint_id + 1)
        elif current is not None and self._finished:
            self._abort(current)
            self._current = None
        unconfirmed = [p for _, p in self._commits] + [p for _, p in self._pending.values()]
        return {
            "prefix": self._prefix,
            "subtask": self._subtask,
            "pending": [
                (p.transactional_id, p.producer_id, p.epoch, p.checkpoint_id) for p in unconfirmed
            ],
        }

    def commit_up_to(self, checkpoint_id: int) -> None:
        """Commits in the background thread: the task goes on writing meanwhile. A failed
        commit fails the task at its next checkpoint, notification or close."""
        self._raise_failed_commits()
        for number in sorted(self._pending):
            if number > checkpoint_id:
                break
            transaction, prepared = self._pending.pop(number)
            self._commits.append((self._executor.submit(self._commit, transaction), prepared))

    def _raise_failed_commits(self, wait: bool = False) -> None:
        if wait:
            concurrent.futures.wait([f for f, _ in self._commits])
        done = [f for f, _ in self._commits if f.done()]
        self._commits = [(f, p) for f, p in self._commits if not f.done()]
        for future in done:
            future.result()  # raises what the commit raised

    def _commit(self, transaction: _Transaction) -> None:
        """On the background thread; the producer is released there too (destroying a
        librdkafka client joins its threads)."""
        kafka = confluent()
        try:
            try:
                transaction.producer.commit_transaction(self._timeout_ms / 1000)
            except kafka.KafkaException as exc:
                error = exc.args[0]
                if error.code() in (
                    kafka.KafkaError._FENCED,
                    kafka.KafkaError.PRODUCER_FENCED,
                    kafka.KafkaError.INVALID_PRODUCER_EPOCH,
                ):
                    msg = (
                        f"the Kafka transaction {transaction.tid} was taken over by another "
                        "producer with the same transactional id before it could commit: "
                        "another job (or a copy of this one) uses the transactional id "
                        f"prefix {self._prefix!r}; give each job its own "
                        "set_transactional_id_prefix(...)"
                    )
                    raise KafkaProducerFencedError(msg) from exc
                msg = f"committing the Kafka transaction {transaction.tid} failed: {error.str()}"
                raise KafkaTransactionError(msg) from exc
        finally:
            transaction.producer = None

    def finish(self) -> None:
        """End of input: the open transaction is pre-committed by the final checkpoint,
        and no other opens."""
        self._finished = True
        if self._next is not None:
            _, future = self._next
            self._next = None
            future.cancel()

    def close(self) -> None:
        current, self._current = self._current, None
        if current is not None:
            self._abort(current)
        self._pending.clear()  # left for the restored job to commit
        if self._next is not None:
            self._next[1].cancel()
            self._next = None
        try:
            # Commits under way finish first: a bounded job's last one is its output.
            self._raise_failed_commits(wait=True)
        finally:
            self._executor.shutdown(wait=False, cancel_futures=True)
            self._coordinator.close()

    def _abort(self, transaction: _Transaction) -> None:
        kafka = confluent()
        try:
            transaction.producer.abort_transaction(min(self._timeout_ms / 1000, 10.0))
        except kafka.KafkaException as exc:
            # Left open, it is aborted by the next attempt's start or when it expires.
            logger.warning("aborting the Kafka transaction %s failed: %s", transaction.tid, exc)
