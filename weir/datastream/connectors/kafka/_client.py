"""The Kafka client libraries behind the connector, loaded on first use, and what both
the source and the sink need of them: client properties and broker metadata.

Records are read and written with librdkafka (``confluent-kafka``): its consumer
fetches and its producer batches in C threads, which a pure-Python client cannot match
(here ~1.6 M records/s consumed and ~210 k/s produced against ~20 k/s each with
kafka-python). librdkafka does not expose a transaction's producer id and epoch, nor
lets a new producer commit a transaction it did not begin, which resuming a
pre-committed transaction after a failure needs: those few requests go through
kafka-python's protocol layer (``_transactions``).

Properties are Kafka's Java client names, as Flink's builders take them. Most mean the
same to librdkafka; the Java-only ones listed in ``_JAVA_ONLY`` are dropped (with
``default.api.timeout.ms`` bounding metadata requests, as in Java), and Flink's own
source options are taken out before the rest reach the client.

librdkafka reports credentials the brokers refuse through its error callback, not as the
failure of a request (a metadata request only times out): every client gets a callback
that raises ``KafkaAuthenticationError`` from the ``poll``, ``consume`` or ``flush`` that
serves it, and a metadata request serves the callbacks between slices of its wait.
"""

from __future__ import annotations

import logging
import time
import warnings
from collections.abc import Callable, Mapping
from types import ModuleType
from typing import Any

from weir.datastream.connectors.kafka.errors import (
    KafkaAuthenticationError,
    KafkaClientMissingError,
    KafkaConfigurationError,
    KafkaTopicNotFoundError,
    KafkaUnreachableError,
)

logger = logging.getLogger(__name__)

# Java client settings with no librdkafka equivalent: serializers are the schemas' job,
# and a poll's size is the task's batch size.
_JAVA_ONLY = frozenset(
    {
        "key.deserializer",
        "value.deserializer",
        "key.serializer",
        "value.serializer",
        "max.poll.records",
        "default.api.timeout.ms",
        "register.consumer.metrics",
        "register.producer.metrics",
        "partition.assignment.strategy",
        "interceptor.classes",
    }
)

# How long a metadata request may take before the brokers count as unreachable: the Java
# client's default.api.timeout.ms default.
DEFAULT_API_TIMEOUT_MS = 60_000
# A metadata request waits in slices this long, serving the client's callbacks between
# them: refused credentials fail it within about a second of the refusal (librdkafka
# retries the login every few hundred ms), not after default.api.timeout.ms.
_METADATA_SLICE_S = 1.0

_MISSING = (
    "the Kafka connector needs the Kafka client libraries: pip install 'weir[kafka]' "
    "(confluent-kafka and kafka-python) on the client and every TaskManager"
)


def confluent() -> ModuleType:
    """The ``confluent_kafka`` module, or an error naming the extra to install."""
    try:
        import confluent_kafka  # noqa: PLC0415 - the `kafka` extra, loaded when used
    except ImportError as exc:
        raise KafkaClientMissingError(_MISSING) from exc
    return confluent_kafka


def kafka_python() -> ModuleType:
    """The ``kafka`` (kafka-python) module, or an error naming the extra to install."""
    try:
        # kafka-python 3.0 loads its protocol schemas with importlib.resources.read_text,
        # which Python deprecates: not ours to fix, and not to fail a strict program.
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", DeprecationWarning)
            import kafka  # noqa: PLC0415 - the `kafka` extra, loaded when used
            import kafka.protocol.metadata  # noqa: PLC0415
            import kafka.protocol.producer.transaction  # noqa: PLC0415
    except ImportError as exc:
        raise KafkaClientMissingError(_MISSING) from exc
    return kafka


def api_timeout_ms(properties: Mapping[str, str]) -> int:
    raw = properties.get("default.api.timeout.ms", DEFAULT_API_TIMEOUT_MS)
    try:
        value = int(raw)
    except (TypeError, ValueError) as exc:
        msg = f"default.api.timeout.ms must be a number of milliseconds; got {raw!r}"
        raise KafkaConfigurationError(msg) from exc
    if value <= 0:
        msg = f"default.api.timeout.ms must be positive; got {value}"
        raise KafkaConfigurationError(msg)
    return value


def client_config(properties: Mapping[str, str], **overrides: Any) -> dict[str, Any]:
    """librdkafka's configuration from Java-named ``properties`` plus ``overrides``, with
    the error callback that turns refused credentials into ``KafkaAuthenticationError``."""
    config: dict[str, Any] = {}
    for key, value in properties.items():
        if key in _JAVA_ONLY:
            logger.debug("Kafka property %s has no librdkafka equivalent; ignored", key)
            continue
        config[key] = value
    config.update(overrides)
    config.setdefault("error_cb", _refused_credentials(str(config.get("bootstrap.servers", ""))))
    return config


def _refused_credentials(bootstrap_servers: str) -> Callable[[Any], None]:
    """librdkafka's error callback: raises for an authentication the brokers refused (no
    retry logs in with other credentials). The other errors it reports there (a broker
    down, a connection lost) it retries itself and logs; they stay its own."""

    def on_error(error: Any) -> None:
        kafka = confluent()
        if error.code() in (
            kafka.KafkaError._AUTHENTICATION,
            kafka.KafkaError.SASL_AUTHENTICATION_FAILED,
        ):
            msg = (
                f"the Kafka brokers at bootstrap.servers={bootstrap_servers!r} refused the "
                f"client's credentials: {error.str()}; check the properties given with "
                "set_property(): security.protocol, sasl.mechanism, sasl.username and "
                "sasl.password"
            )
            raise KafkaAuthenticationError(msg)

    return on_error


def make_client(factory: Any, config: dict[str, Any], what: str) -> Any:
    """``factory(config)``, with librdkafka's refusal of a property said in our words."""
    kafka = confluent()
    try:
        return factory(config)
    except (kafka.KafkaException, ValueError, TypeError) as exc:
        msg = (
            f"the Kafka {what} refused its configuration: {exc}; check the properties "
            "given with set_property()/set_properties() (Kafka client names, e.g. "
            "'isolation.level', 'security.protocol')"
        )
        raise KafkaConfigurationError(msg) from exc


def unreachable(
    bootstrap_servers: str, timeout_ms: int, exc: BaseException
) -> KafkaUnreachableError:
    msg = (
        f"cannot reach the Kafka cluster at bootstrap.servers={bootstrap_servers!r} within "
        f"{timeout_ms} ms ({exc}); check set_bootstrap_servers(...) and that the brokers "
        "are up and reachable from every TaskManager (property default.api.timeout.ms "
        "sets how long to wait)"
    )
    return KafkaUnreachableError(msg)


def topic_partitions(
    client: Any,
    bootstrap_servers: str,
    topic: str | None,
    timeout_ms: int,
    *,
    serve: Callable[[float], Any] | None = None,
) -> dict[str, list[int]]:
    """``{topic: [partition, ...]}`` from the cluster's metadata: of ``topic``, or of
    every topic when None. A missing topic is left out (the caller decides whether
    that is an error).

    ``serve`` (the client's ``poll``, when calling it takes nothing from the caller: a
    producer's, a consumer's before its first assignment) serves the client's callbacks
    while no broker answers, so refused credentials raise ``KafkaAuthenticationError``
    at once."""
    kafka = confluent()
    waiting = (kafka.KafkaError._TRANSPORT, kafka.KafkaError._TIMED_OUT)
    deadline = time.monotonic() + timeout_ms / 1000
    while True:
        left = deadline - time.monotonic()
        wait_s = left if serve is None else min(left, _METADATA_SLICE_S)
        try:
            metadata = client.list_topics(topic, timeout=max(wait_s, 0.0))
            break
        except kafka.KafkaException as exc:
            if serve is not None:
                serve(0)  # raises what the error callback raises
            error = exc.args[0] if exc.args else None
            code = error.code() if isinstance(error, kafka.KafkaError) else None
            if code not in waiting or time.monotonic() >= deadline:
                raise unreachable(bootstrap_servers, timeout_ms, exc) from exc
    if not metadata.brokers:
        raise unreachable(bootstrap_servers, timeout_ms, RuntimeError("no broker in metadata"))
    found: dict[str, list[int]] = {}
    for name, meta in metadata.topics.items():
        if meta.error is not None:
            code = meta.error.code()
            if code in (kafka.KafkaError.UNKNOWN_TOPIC_OR_PART, kafka.KafkaError._UNKNOWN_TOPIC):
                continue
            if code == kafka.KafkaError.LEADER_NOT_AVAILABLE:
                # A topic just created: its partitions are listed, without leaders yet.
                pass
            else:
                msg = f"reading the metadata of Kafka topic {name!r} failed: {meta.error.str()}"
                raise KafkaTopicNotFoundError(msg)
        if name.startswith("__"):
            continue  # Kafka's internal topics (__consumer_offsets, __transaction_state)
        found[name] = sorted(meta.partitions)
    return found


def missing_topic(topic: str, bootstrap_servers: str, setting: str) -> KafkaTopicNotFoundError:
    msg = (
        f"the Kafka topic {topic!r} does not exist on the cluster at "
        f"bootstrap.servers={bootstrap_servers!r}: create it, or fix {setting}"
    )
    return KafkaTopicNotFoundError(msg)


def java_string_hash(text: str) -> int:
    """Java's ``String.hashCode()``: over UTF-16 code units, in 32-bit arithmetic."""
    h = 0
    data = text.encode("utf-16-be")
    for i in range(0, len(data), 2):
        h = (31 * h + ((data[i] << 8) | data[i + 1])) & 0xFFFFFFFF
    return h - (1 << 32) if h >= 1 << 31 else h


def split_owner(topic: str, partition: int, num_readers: int) -> int:
    """The subtask that reads ``topic``'s ``partition`` at ``num_readers`` subtasks: Flink's
    ``KafkaSourceEnumerator.getSplitOwner``, so a topic's partitions are spread evenly
    from a start that depends on the topic."""
    start = ((java_string_hash(topic) * 31) & 0x7FFFFFFF) % num_readers
    return (start + partition) % num_readers
