"""``KafkaSink``, its builder and the record serialization schema (mirrors
``pyflink.datastream.connectors.kafka``).

The sink is a SinkFunction with operator state and checkpoint notifications; the task
calls it on its own thread, in this order::

    initialize_state(context)      the restored writer states (pending transactions)
    check_job_configuration(cfg)   the job's configuration: warns when
                                   transaction.timeout.ms is too short for it
    open(runtime_context)          the writer starts: recovery commits, lingering aborts
    invoke_batch(batch, context)*  (or invoke(value, context)) interleaved with, per
                                   checkpoint n:
        snapshot_state(context)      pre-commit (EXACTLY_ONCE) / flush (AT_LEAST_ONCE)
        notify_checkpoint_complete(n)  commit
    finish()                       end of bounded input
    close()                        aborts the open transaction, never a pending one
"""

from __future__ import annotations

import abc
import logging
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from weir.common.serialization import SerializationSchema
from weir.common.typeinfo import Types
from weir.core import config as config_keys
from weir.core.checkpointed_function import (
    CheckpointedFunction,
    FunctionInitializationContext,
    FunctionSnapshotContext,
)
from weir.core.columnar import ColumnBatch
from weir.datastream.connectors.base import DeliveryGuarantee
from weir.datastream.connectors.kafka._sink_writer import (
    DEFAULT_TRANSACTION_TIMEOUT_MS,
    ExactlyOnceWriter,
    NonTransactionalWriter,
)
from weir.datastream.connectors.kafka.errors import KafkaConfigurationError
from weir.datastream.functions import CheckpointListener, RuntimeContext, SinkFunction
from weir.datastream.state import ListState, ListStateDescriptor

logger = logging.getLogger(__name__)

__all__ = [
    "KafkaRecordSerializationSchema",
    "KafkaRecordSerializationSchemaBuilder",
    "KafkaSink",
    "KafkaSinkBuilder",
    "KafkaTopicSelector",
]

# Flink's KafkaSink caps the prefix at 6400 bytes (MAXIMUM_PREFIX_BYTES).
_MAXIMUM_PREFIX_BYTES = 6400
_DEFAULT_PREFIX = "kafka-sink"


class KafkaTopicSelector(abc.ABC):
    """Selects the topic of each record."""

    @abc.abstractmethod
    def apply(self, data: Any) -> str:
        pass


class _FunctionTopicSelector(KafkaTopicSelector):
    def __init__(self, function: Callable[[Any], str]) -> None:
        self._function = function

    def apply(self, data: Any) -> str:
        return self._function(data)


class KafkaRecordSerializationSchema:
    """Turns a record into a Kafka record: its topic, key and value. Build one with
    ``KafkaRecordSerializationSchema.builder()``."""

    def __init__(
        self,
        topic: str | None,
        topic_selector: KafkaTopicSelector | None,
        key_schema: SerializationSchema | None,
        value_schema: SerializationSchema,
    ) -> None:
        self._topic = topic
        self._topic_selector = topic_selector
        self._key_schema = key_schema
        self._value_schema = value_schema

    @staticmethod
    def builder() -> KafkaRecordSerializationSchemaBuilder:
        return KafkaRecordSerializationSchemaBuilder()

    @property
    def fixed_topic(self) -> str | None:
        return self._topic

    def open(self) -> None:
        for schema in (self._key_schema, self._value_schema):
            opener = getattr(schema, "open", None)
            if schema is not None and callable(opener):
                opener()

    def serializer(self) -> Callable[[Any], tuple[str, bytes | None, bytes]]:
        """``record -> (topic, key, value)``, specialised for this schema."""
        serialize_value = self._value_schema.serialize
        serialize_key = self._key_schema.serialize if self._key_schema is not None else None
        topic = self._topic
        select = self._topic_selector.apply if self._topic_selector is not None else None
        if select is None and serialize_key is None:
            assert topic is not None
            return lambda record: (topic, None, serialize_value(record))
        if select is None:
            assert topic is not None and serialize_key is not None
            return lambda record: (topic, serialize_key(record), serialize_value(record))

        def serialize(record: Any) -> tuple[str, bytes | None, bytes]:
            key = serialize_key(record) if serialize_key is not None else None
            return select(record), key, serialize_value(record)

        return serialize

    def batch_serializer(
        self,
    ) -> Callable[[Sequence[Any]], tuple[str, list[bytes | None] | None, list[bytes]]] | None:
        """``records -> (topic, keys or None, values)`` for a batch at once, through the
        schemas' ``serialize_batch`` (Weir's own; the same bytes as ``serializer()``);
        None when the topic is chosen per record."""
        topic = self._topic
        if topic is None or self._topic_selector is not None:
            return None
        value_schema, key_schema = self._value_schema, self._key_schema
        values_of = _batch_of(value_schema)
        keys_of = None if key_schema is None else _batch_of(key_schema)

        def serialize_all(
            records: Sequence[Any],
        ) -> tuple[str, list[bytes | None] | None, list[bytes]]:
            keys = None if keys_of is None else keys_of(records)
            return topic, keys, values_of(records)

        return serialize_all


def _batch_of(schema: SerializationSchema) -> Callable[[Sequence[Any]], list[Any]]:
    """A schema's ``serialize_batch``, or ``serialize`` in a loop for a schema without
    one (duck-typed, not a SerializationSchema)."""
    batch = getattr(schema, "serialize_batch", None)
    if callable(batch):
        return batch  # type: ignore[no-any-return]
    serialize = schema.serialize
    return lambda records: [serialize(record) for record in records]


class KafkaRecordSerializationSchemaBuilder:
    """Builder of a KafkaRecordSerializationSchema: a topic (``set_topic``) or a topic
    selector, the value schema, and optionally a key schema::

        KafkaRecordSerializationSchema.builder() \\
            .set_topic("out") \\
            .set_value_serialization_schema(SimpleStringSchema()) \\
            .build()
    """

    def __init__(self) -> None:
        self._topic: str | None = None
        self._topic_selector: KafkaTopicSelector | None = None
        self._key_schema: SerializationSchema | None = None
        self._value_schema: SerializationSchema | None = None

    def build(self) -> KafkaRecordSerializationSchema:
        if self._topic is None and self._topic_selector is None:
            msg = (
                "KafkaRecordSerializationSchema: set_topic(...) or set_topic_selector(...) "
                "is required"
            )
            raise KafkaConfigurationError(msg)
        if self._value_schema is None:
            msg = "KafkaRecordSerializationSchema: set_value_serialization_schema(...) is required"
            raise KafkaConfigurationError(msg)
        return KafkaRecordSerializationSchema(
            self._topic, self._topic_selector, self._key_schema, self._value_schema
        )

    def set_topic(self, topic: str) -> KafkaRecordSerializationSchemaBuilder:
        """Every record goes to ``topic``."""
        self._topic = topic
        self._topic_selector = None
        return self

    def set_topic_selector(
        self, topic_selector: Callable[[Any], str] | KafkaTopicSelector
    ) -> KafkaRecordSerializationSchemaBuilder:
        """Each record goes to the topic ``topic_selector`` gives it."""
        if not isinstance(topic_selector, KafkaTopicSelector) and not callable(topic_selector):
            msg = "topic_selector must be KafkaTopicSelector or a callable"
            raise TypeError(msg)
        if not isinstance(topic_selector, KafkaTopicSelector):
            topic_selector = _FunctionTopicSelector(topic_selector)
        self._topic_selector = topic_selector
        self._topic = None
        return self

    def set_key_serialization_schema(
        self, key_serialization_schema: SerializationSchema
    ) -> KafkaRecordSerializationSchemaBuilder:
        """The record's key (optional: without it keys are null)."""
        self._key_schema = key_serialization_schema
        return self

    def set_value_serialization_schema(
        self, value_serialization_schema: SerializationSchema
    ) -> KafkaRecordSerializationSchemaBuilder:
        """The record's value (required)."""
        self._value_schema = value_serialization_schema
        return self


@dataclass(frozen=True)
class _KafkaSinkSettings:
    bootstrap_servers: str
    delivery_guarantee: DeliveryGuarantee
    transactional_id_prefix: str
    fixed_topics: tuple[str, ...]
    properties: Mapping[str, str] = field(default_factory=dict)


class KafkaSink(SinkFunction, CheckpointedFunction, CheckpointListener):
    """A sink writing records to Kafka topics, with the delivery guarantee chosen::

        sink = (KafkaSink.builder()
                .set_bootstrap_servers("broker:9092")
                .set_record_serializer(KafkaRecordSerializationSchema.builder()
                                       .set_topic("out")
                                       .set_value_serialization_schema(SimpleStringSchema())
                                       .build())
                .set_delivery_guarantee(DeliveryGuarantee.EXACTLY_ONCE)
                .set_transactional_id_prefix("my-job")
                .build())
        ds.sink_to(sink)

    * ``NONE`` (the default): nothing is waited for.
    * ``AT_LEAST_ONCE``: a checkpoint completes only once Kafka acknowledged every record
      written before it; a restart may write some twice.
    * ``EXACTLY_ONCE``: each subtask writes in a Kafka transaction committed when the
      checkpoint after it completes; a ``read_committed`` consumer sees every record once,
      whatever fails and when. Give each job its own ``set_transactional_id_prefix``, and a
      ``transaction.timeout.ms`` above the checkpoint interval plus the restart time.
    """

    def __init__(
        self, settings: _KafkaSinkSettings, record_serializer: KafkaRecordSerializationSchema
    ) -> None:
        self._settings = settings
        self._record_serializer = record_serializer
        self._writer: Any = None
        self._state: ListState | None = None
        self._restored: list[Any] = []
        self._restored_checkpoint_id: int | None = None

    @staticmethod
    def builder() -> KafkaSinkBuilder:
        return KafkaSinkBuilder()

    # -- the hooks the task calls -------------------------------------------------------
    def initialize_state(self, context: FunctionInitializationContext) -> None:
        self._state = context.get_operator_state_store().get_list_state(
            ListStateDescriptor("kafka-writer-states", Types.PICKLED_BYTE_ARRAY())
        )
        if context.is_restored():
            self._restored = [s for s in self._state.get() if s]
            self._restored_checkpoint_id = context.get_restored_checkpoint_id()

    def check_job_configuration(self, job_config: Mapping[str, str]) -> None:
        """Warns when a pre-committed transaction could expire before a restored job
        commits it: ``transaction.timeout.ms`` must exceed the checkpoint interval plus
        the time a restart takes (its delay and noticing a lost TaskManager)."""
        if self._settings.delivery_guarantee is not DeliveryGuarantee.EXACTLY_ONCE:
            return
        interval = config_keys.get(job_config, config_keys.CHECKPOINTING_INTERVAL)
        if not interval:
            logger.warning(
                "KafkaSink with EXACTLY_ONCE in a job without checkpoints: its records are "
                "committed only at the end of bounded input; enable checkpointing "
                "(env.enable_checkpointing(ms))"
            )
            return
        restart_delay = _restart_delay_ms(job_config)
        heartbeat = config_keys.get(job_config, config_keys.HEARTBEAT_TIMEOUT)
        needed = interval + restart_delay + heartbeat
        timeout = int(
            self._settings.properties.get("transaction.timeout.ms", DEFAULT_TRANSACTION_TIMEOUT_MS)
        )
        if timeout <= needed:
            logger.warning(
                "KafkaSink: transaction.timeout.ms (%d ms) does not exceed the checkpoint "
                "interval (%d ms) plus the time a restart may take (%d ms: restart delay "
                "%d ms and heartbeat.timeout %d ms): Kafka may abort a pre-committed "
                "transaction before the restored job commits it, and its records are then "
                "lost. Raise it with set_property('transaction.timeout.ms', ...) above %d",
                timeout,
                interval,
                restart_delay + heartbeat,
                restart_delay,
                heartbeat,
                needed,
            )

    def open(self, runtime_context: RuntimeContext) -> None:
        self._start(
            runtime_context.get_index_of_this_subtask(),
            runtime_context.get_number_of_parallel_subtasks(),
        )

    def _start(self, subtask: int, parallelism: int) -> None:
        self._record_serializer.open()
        serialize = self._record_serializer.serializer()
        serialize_all = self._record_serializer.batch_serializer()
        guarantee = self._settings.delivery_guarantee
        if guarantee is DeliveryGuarantee.EXACTLY_ONCE:
            self._writer = ExactlyOnceWriter(
                self._settings, serialize, subtask, parallelism, serialize_all
            )
        else:
            self._writer = NonTransactionalWriter(
                self._settings,
                serialize,
                flush_on_checkpoint=guarantee is DeliveryGuarantee.AT_LEAST_ONCE,
                serialize_all=serialize_all,
            )
        self._writer.start(self._restored, self._restored_checkpoint_id)
        self._restored = []
        self.invoke = self._invoke_writer  # type: ignore[method-assign]

    def invoke(self, value: Any, context: Any) -> None:
        if self._writer is None:
            self._start(0, 1)
        self._writer.write(value, context.timestamp())

    def _invoke_writer(self, value: Any, context: Any) -> None:
        self._writer.write(value, context.timestamp())

    def invoke_batch(self, batch: Any, context: Any) -> None:
        """A batch of the task's records at once, each with its timestamp (Weir's batch
        hook; ``invoke`` takes one record)."""
        if self._writer is None:
            self._start(0, 1)
        if isinstance(batch, ColumnBatch):
            batch = batch.records()
        self._writer.write_batch(batch, context.batch_timestamps)

    def snapshot_state(self, context: FunctionSnapshotContext) -> None:
        """Pre-commit (EXACTLY_ONCE) or flush (AT_LEAST_ONCE)."""
        if self._writer is None:
            return
        state = self._writer.prepare(context.get_checkpoint_id())
        if self._state is not None:
            self._state.update([state] if state else [])

    def notify_checkpoint_complete(self, checkpoint_id: int) -> None:
        """Commits the transactions of every checkpoint up to ``checkpoint_id``."""
        if self._writer is not None:
            self._writer.commit_up_to(checkpoint_id)

    def notify_checkpoint_aborted(self, checkpoint_id: int) -> None:
        """A pre-committed transaction stays pending: the next completed checkpoint
        commits it."""

    def finish(self) -> None:
        if self._writer is not None:
            self._writer.finish()

    def close(self) -> None:
        writer, self._writer = self._writer, None
        if writer is not None:
            writer.close()

    def __getstate__(self) -> dict[str, Any]:
        state = self.__dict__.copy()
        state["_writer"] = None
        state.pop("invoke", None)
        return state

    def __repr__(self) -> str:
        s = self._settings
        return f"KafkaSink({s.bootstrap_servers}, {s.delivery_guarantee.name})"


def _restart_delay_ms(job_config: Mapping[str, str]) -> int:
    kind = str(config_keys.get(job_config, config_keys.RESTART_STRATEGY_TYPE) or "").lower()
    if kind in ("fixed-delay", "fixeddelay", "fixed_delay"):
        return int(config_keys.get(job_config, config_keys.RESTART_FIXED_DELAY_DELAY))
    if kind in ("failure-rate", "failurerate", "failure_rate"):
        return int(config_keys.get(job_config, config_keys.RESTART_FAILURE_RATE_DELAY))
    if kind in ("exponential-delay", "exponentialdelay", "exponential_delay"):
        return int(config_keys.get(job_config, config_keys.RESTART_EXPONENTIAL_MAX_BACKOFF))
    return 0


class KafkaSinkBuilder:
    """Configures a KafkaSink. Required: the bootstrap servers and the record serializer;
    the delivery guarantee is ``NONE`` unless set."""

    def __init__(self) -> None:
        self._bootstrap_servers: str | None = None
        self._delivery_guarantee = DeliveryGuarantee.NONE
        self._transactional_id_prefix = _DEFAULT_PREFIX
        self._record_serializer: KafkaRecordSerializationSchema | None = None
        self._properties: dict[str, str] = {}

    def build(self) -> KafkaSink:
        properties = dict(self._properties)
        servers = self._bootstrap_servers or properties.pop("bootstrap.servers", None)
        properties.pop("bootstrap.servers", None)
        if not servers:
            msg = "KafkaSink: set_bootstrap_servers(...) is required"
            raise KafkaConfigurationError(msg)
        if self._record_serializer is None:
            msg = "KafkaSink: set_record_serializer(...) is required"
            raise KafkaConfigurationError(msg)
        if "transactional.id" in properties:
            msg = (
                "KafkaSink: do not set transactional.id; the sink makes one per subtask and "
                "checkpoint from set_transactional_id_prefix(...)"
            )
            raise KafkaConfigurationError(msg)
        timeout = properties.get("transaction.timeout.ms")
        if timeout is not None and not str(timeout).isdigit():
            msg = f"KafkaSink: transaction.timeout.ms must be a number of ms; got {timeout!r}"
            raise KafkaConfigurationError(msg)
        topic = self._record_serializer.fixed_topic
        return KafkaSink(
            _KafkaSinkSettings(
                bootstrap_servers=servers,
                delivery_guarantee=self._delivery_guarantee,
                transactional_id_prefix=self._transactional_id_prefix,
                fixed_topics=(topic,) if topic else (),
                properties=properties,
            ),
            self._record_serializer,
        )

    def set_bootstrap_servers(self, bootstrap_servers: str) -> KafkaSinkBuilder:
        """The Kafka brokers to start from: ``"host:port,host:port"``."""
        self._bootstrap_servers = bootstrap_servers
        return self

    def set_delivery_guarantee(self, delivery_guarantee: DeliveryGuarantee) -> KafkaSinkBuilder:
        """``NONE`` (default), ``AT_LEAST_ONCE`` or ``EXACTLY_ONCE``."""
        if not isinstance(delivery_guarantee, DeliveryGuarantee):
            msg = f"set_delivery_guarantee needs a DeliveryGuarantee; got {delivery_guarantee!r}"
            raise KafkaConfigurationError(msg)
        self._delivery_guarantee = delivery_guarantee
        return self

    def set_transactional_id_prefix(self, transactional_id_prefix: str) -> KafkaSinkBuilder:
        """The prefix of the transactional ids (``{prefix}-{subtask}-{n}``) of EXACTLY_ONCE;
        ``"kafka-sink"`` by default. Give each job its own, and keep it across restarts:
        lingering transactions are found by it."""
        if not transactional_id_prefix:
            msg = "set_transactional_id_prefix needs a non-empty prefix"
            raise KafkaConfigurationError(msg)
        if len(transactional_id_prefix.encode()) > _MAXIMUM_PREFIX_BYTES:
            msg = f"the transactional id prefix is longer than {_MAXIMUM_PREFIX_BYTES} bytes"
            raise KafkaConfigurationError(msg)
        self._transactional_id_prefix = transactional_id_prefix
        return self

    def set_record_serializer(
        self, record_serializer: KafkaRecordSerializationSchema
    ) -> KafkaSinkBuilder:
        """How records become Kafka records (``KafkaRecordSerializationSchema.builder()``)."""
        if not isinstance(record_serializer, KafkaRecordSerializationSchema):
            msg = (
                "set_record_serializer needs a KafkaRecordSerializationSchema (from "
                f"KafkaRecordSerializationSchema.builder()); got {type(record_serializer)!r}"
            )
            raise KafkaConfigurationError(msg)
        self._record_serializer = record_serializer
        return self

    def set_property(self, key: str, value: str) -> KafkaSinkBuilder:
        """A Kafka producer property (Kafka's client names), e.g.
        ``transaction.timeout.ms``."""
        self._properties[str(key)] = str(value)
        return self
