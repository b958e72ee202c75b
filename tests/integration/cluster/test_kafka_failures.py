"""Kafka jobs on the MiniCluster against the test broker, which runs with Kafka's default
``transaction.max.timeout.ms`` (15 minutes) as users' brokers do: the README's Kafka
example runs as written, and the errors no restart can cure (a transaction timeout the
broker refuses, a missing topic with auto-creation off, credentials the broker refuses)
fail the job at once, with the default restart strategy, naming what to change."""

from __future__ import annotations

import re
import time
import uuid
from pathlib import Path

import pytest

from weir.client.dispatcher_client import DispatcherGateway
from weir.common import SimpleStringSchema, WatermarkStrategy
from weir.core.job_info import JobDetailsInfo
from weir.datastream import StreamExecutionEnvironment
from weir.datastream.connectors import DeliveryGuarantee
from weir.datastream.connectors.kafka import (
    KafkaOffsetsInitializer,
    KafkaRecordSerializationSchema,
    KafkaSink,
    KafkaSource,
)

pytestmark = pytest.mark.spark

README = Path(__file__).parents[3] / "README.md"
# A hang guard only: a job that neither ends nor restarts within it is broken.
_GUARD_S = 240


def _readme_kafka_example() -> str:
    section = README.read_text().split("\n## Kafka\n", 1)[1].split("\n## ", 1)[0]
    match = re.search(r"```python\n(.*?)```", section, re.DOTALL)
    assert match, "the README's Kafka section has no Python example"
    return match.group(1)


def _example_env(broker, example: str) -> StreamExecutionEnvironment:
    """The README's example, as written but for the broker's address, built into an
    environment of the shared cluster (``env`` of the README)."""
    env = StreamExecutionEnvironment.get_execution_environment()
    names = {
        "env": env,
        "KafkaSource": KafkaSource,
        "KafkaSink": KafkaSink,
        "KafkaOffsetsInitializer": KafkaOffsetsInitializer,
        "KafkaRecordSerializationSchema": KafkaRecordSerializationSchema,
        "SimpleStringSchema": SimpleStringSchema,
        "DeliveryGuarantee": DeliveryGuarantee,
        "WatermarkStrategy": WatermarkStrategy,
    }
    exec(example.replace("broker:9092", broker.bootstrap_servers), names)
    return env


def _ensure_topic(broker, name: str) -> None:
    from confluent_kafka.admin import AdminClient

    admin = AdminClient({"bootstrap.servers": broker.bootstrap_servers})
    if name not in admin.list_topics(timeout=30).topics:
        broker.create_topic(name)


def _end_or_first_restart(gateway: DispatcherGateway, job_id: str) -> JobDetailsInfo:
    """The job's details once it ended or restarted for the first time: a job that fails
    at once never gets to restart."""
    deadline = time.monotonic() + _GUARD_S
    version = 0
    while time.monotonic() < deadline:
        details = gateway.wait_for_result(job_id, 10_000, version)
        if details.status in ("FAILED", "CANCELED", "FINISHED", "RESTARTING") or any(
            t.attempt_number > 0 for t in details.tasks
        ):
            return details
        version = details.status_version
    raise AssertionError(f"job {job_id} neither ended nor restarted in {_GUARD_S} s")


def _fails_at_once(cluster, env: StreamExecutionEnvironment, name: str) -> str:
    """Runs the job with the default restart strategy (exponential-delay, unbounded, as
    checkpointing is on); it must fail without a restart. Returns its failure."""
    job_id = str(env.execute_async(name).get_job_id())
    with DispatcherGateway(cluster.address) as gateway:
        details = _end_or_first_restart(gateway, job_id)
    assert details.status == "FAILED", (details.status, details.failure_cause)
    (entry,) = details.exception_history
    assert entry.non_recoverable and not entry.restarted
    return details.failure_cause


def test_the_readme_kafka_example_runs_as_written_against_a_default_broker(cluster, kafka_broker):
    for topic in ("words", "counts"):
        _ensure_topic(kafka_broker, topic)
    env = _example_env(kafka_broker, _readme_kafka_example())
    client = env.execute_async("the README's Kafka example")
    words = [f"word-{uuid.uuid4().hex[:6]}" for _ in range(20)]
    kafka_broker.produce("words", words)
    try:
        records = kafka_broker.read_committed("counts", expected=len(words), timeout=_GUARD_S)
        assert {w.upper() for w in words} <= {v.decode() for *_, v in records}
        assert client.get_job_status().result().name == "RUNNING"
    finally:
        client.cancel()


def test_a_transaction_timeout_the_broker_refuses_fails_the_job_at_once(cluster, kafka_broker):
    """The README's example without its transaction.timeout.ms: Flink's default, an hour,
    above the broker's default limit."""
    example = _readme_kafka_example()
    line = re.search(r'\n\s*\.set_property\("transaction\.timeout\.ms", "\d+"\)', example)
    assert line, "the README's example sets no transaction.timeout.ms"
    prefix = f"refused-{uuid.uuid4().hex[:8]}"
    example = example[: line.start()] + example[line.end() :]
    example = example.replace('"word-count")', f'"{prefix}")')  # its own transactional ids
    for topic in ("words", "counts"):
        _ensure_topic(kafka_broker, topic)
    cause = _fails_at_once(cluster, _example_env(kafka_broker, example), "timeout refused")
    assert "transaction.timeout.ms (3600000 ms" in cause, cause
    assert "transaction.max.timeout.ms" in cause


def _source(bootstrap_servers: str, topic: str, **properties: str) -> KafkaSource:
    builder = (
        KafkaSource.builder()
        .set_bootstrap_servers(bootstrap_servers)
        .set_topics(topic)
        .set_value_only_deserializer(SimpleStringSchema())
    )
    for key, value in properties.items():
        builder.set_property(key, value)
    return builder.build()


def _reading_env(source: KafkaSource) -> StreamExecutionEnvironment:
    env = StreamExecutionEnvironment.get_execution_environment()
    env.set_parallelism(1)
    env.enable_checkpointing(1000)
    env.from_source(source, WatermarkStrategy.no_watermarks(), "input").print()
    return env


def test_a_missing_topic_with_auto_creation_off_fails_the_job_at_once(cluster, kafka_broker):
    missing = f"missing-{uuid.uuid4().hex[:8]}"
    env = _reading_env(_source(kafka_broker.bootstrap_servers, missing))
    cause = _fails_at_once(cluster, env, "missing topic")
    assert f"the Kafka topic '{missing}' does not exist" in cause


def test_credentials_the_broker_refuses_fail_the_job_at_once(cluster, kafka_broker):
    topic = kafka_broker.create_topic(f"sasl-{uuid.uuid4().hex[:8]}")
    source = _source(
        kafka_broker.sasl_bootstrap_servers,
        topic,
        **{
            "security.protocol": "SASL_PLAINTEXT",
            "sasl.mechanism": "PLAIN",
            "sasl.username": kafka_broker.SASL_USER,
            "sasl.password": "not-the-password",
        },
    )
    cause = _fails_at_once(cluster, _reading_env(source), "refused credentials")
    assert "KafkaAuthenticationError" in cause
    assert "Authentication failed" in cause
    assert "sasl.username" in cause  # says what to check
