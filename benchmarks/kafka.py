"""Kafka -> map -> Kafka throughput: Weir's KafkaSource and KafkaSink against the client
library's own bare loop and against PyFlink 2.3, on a real broker on this machine.

    python benchmarks/kafka.py [--records N] [--repeat R] [--bootstrap-servers HOST:PORT]
                               [--pyflink | --no-pyflink]

Without ``--bootstrap-servers`` a Kafka 4 broker is started from the test suite's jars
(tests/kafka_broker.py). The input topic holds N records of 100 bytes in 2 partitions.
Every run copies it into a new topic of 2 partitions and must leave exactly N committed
records there (the benchmark fails otherwise); its rate is N over the span of the output
records' Kafka timestamps, read ``read_committed``. The broker sets those timestamps as it
appends each record (the output topics have ``message.timestamp.type=LogAppendTime``, as
Flink's KafkaSink would otherwise write each input record's own timestamp), so JVM, Spark
and job start are left out alike for every row. Each figure is the best of R runs, taken
in turns (bare, Weir AT_LEAST_ONCE, Weir EXACTLY_ONCE, Weir map_batches EXACTLY_ONCE,
PyFlink AT_LEAST_ONCE, PyFlink EXACTLY_ONCE, bare, ...), so that a machine shared with
other work disturbs them alike.

* bare loop: librdkafka (confluent-kafka), ``consume`` a batch, ``produce`` each record,
  one process per partition for p=2; the physical limit of the client here. Its consumer
  has fetch.queue.backoff.ms 10, as Weir's source has.
* Weir: ``from_source(KafkaSource) -> map -> sink_to(KafkaSink)`` on the embedded
  MiniCluster at p=1 and p=2, with AT_LEAST_ONCE and EXACTLY_ONCE, checkpoints every
  second; and the same with ``map_batches`` (one call per batch, ``batch_format="list"``)
  in place of ``map``, EXACTLY_ONCE.
* PyFlink 2.3 (``--pyflink``, the default): the same program through PyFlink's own
  connector API (``benchmarks/peers/pyflink_kafka.py``), with Flink's Kafka connector
  (``org.apache.flink:flink-sql-connector-kafka`` 5.0.0-2.2, fetched with Maven), on
  PyFlink's local MiniCluster in a process of its own, the map's Python in PyFlink's
  default (process) mode. PyFlink is the test suite's install (tests/e2e/flink_clients.py)
  and its Python dependencies a side environment (benchmarks/peers/side_envs.py), both
  made on first use; when any of it cannot be had, or its first job fails, one line says
  why and the rows are left out.
"""

from __future__ import annotations

import argparse
import multiprocessing
import re
import shutil
import subprocess
import sys
import tempfile
import time
import uuid
from dataclasses import dataclass
from pathlib import Path

from peers import side_envs

TESTS = Path(__file__).resolve().parents[1] / "tests"
sys.path.insert(0, str(TESTS))

RECORD = b"x" * 100
GUARANTEES = ("AT_LEAST_ONCE", "EXACTLY_ONCE")
# The broker stamps each output record as it appends it: Flink's KafkaSink writes the
# input record's timestamp, which would time the input's producer instead.
SINK_TOPIC = {"message.timestamp.type": "LogAppendTime"}
# After the last expected record, a read that stays empty this long ends the count: a
# pipeline that wrote more than N records is caught.
QUIET_S = 2.0

PYFLINK = "PyFlink 2.3"
# The connector built for Flink 2.2, the newest on Maven Central; Flink 2.3 runs it.
PYFLINK_CONNECTOR = "org.apache.flink:flink-sql-connector-kafka:5.0.0-2.2"
MAVEN_TIMEOUT_S = 900
# A PyFlink job: its JVM, its Python workers, and N records at tens of thousands a second.
PYFLINK_TIMEOUT_S = 1800


def _rate(broker, topic: str, count: int) -> float:
    from confluent_kafka import Consumer, TopicPartition

    consumer = Consumer(
        {
            "bootstrap.servers": broker,
            "group.id": f"bench-{uuid.uuid4().hex}",
            "isolation.level": "read_committed",
            "enable.auto.commit": False,
        }
    )
    partitions = consumer.list_topics(topic, timeout=30).topics[topic].partitions
    consumer.assign([TopicPartition(topic, p, 0) for p in partitions])
    first, last, seen = None, None, 0
    deadline = time.monotonic() + 300
    while time.monotonic() < deadline:
        messages = consumer.consume(10_000, 1.0 if seen < count else QUIET_S)
        if not messages and seen >= count:
            break
        for message in messages:
            if message.error():
                continue
            ts = message.timestamp()[1]
            first = ts if first is None else min(first, ts)
            last = ts if last is None else max(last, ts)
            seen += 1
    consumer.close()
    if seen != count or first is None or last is None:
        msg = f"{topic} holds {seen} committed records, expected {count}"
        raise RuntimeError(msg)
    return count / max((last - first) / 1000, 1e-3)


def _create(broker: str, name: str, partitions: int, config: dict[str, str] | None = None) -> str:
    from confluent_kafka.admin import AdminClient, NewTopic

    admin = AdminClient({"bootstrap.servers": broker})
    admin.create_topics([NewTopic(name, partitions, 1, config=config or {})])[name].result(60)
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:  # until every partition has its leader
        topic = admin.list_topics(name, timeout=30).topics.get(name)
        if topic is not None and topic.error is None and len(topic.partitions) == partitions:
            if all(p.leader >= 0 for p in topic.partitions.values()):
                break
        time.sleep(0.2)
    return name


def _fill(broker: str, topic: str, count: int) -> None:
    from confluent_kafka import Producer

    producer = Producer({"bootstrap.servers": broker, "linger.ms": 20})
    for i in range(count):
        while True:
            try:
                producer.produce(topic, RECORD, partition=i % 2)
                break
            except BufferError:
                producer.poll(0.05)
    producer.flush(120)


def _bare_loop(broker: str, source: str, sink: str, partition: int, count: int) -> None:
    from confluent_kafka import Consumer, Producer, TopicPartition

    consumer = Consumer(
        {
            "bootstrap.servers": broker,
            "group.id": f"bare-{uuid.uuid4().hex}",
            "enable.auto.commit": False,
            # As Weir's KafkaSource sets it: librdkafka's default (1 s) starves a reader
            # that drains its queue faster than that.
            "fetch.queue.backoff.ms": 10,
        }
    )
    consumer.assign([TopicPartition(source, partition, 0)])
    producer = Producer({"bootstrap.servers": broker})
    seen = 0
    while seen < count:
        messages = consumer.consume(1000, 1.0)
        for message in messages:
            value = message.value()
            while True:
                try:
                    producer.produce(sink, value)
                    break
                except BufferError:  # the queue is full: serve it until there is room
                    producer.poll(0.05)
        seen += len(messages)
        producer.poll(0)
    producer.flush(120)
    consumer.close()


def bare(broker: str, source: str, count: int, parallelism: int) -> float:
    sink = _create(broker, f"bare-{uuid.uuid4().hex[:6]}", 2, SINK_TOPIC)
    if parallelism == 1:
        _bare_loop(broker, source, sink, 0, count // 2)
        _bare_loop(broker, source, sink, 1, count // 2)
    else:
        processes = [
            multiprocessing.get_context("spawn").Process(
                target=_bare_loop, args=(broker, source, sink, p, count // 2)
            )
            for p in range(2)
        ]
        for process in processes:
            process.start()
        for process in processes:
            process.join()
    return _rate(broker, sink, count)


def weir(
    broker: str,
    source: str,
    count: int,
    parallelism: int,
    guarantee: str,
    *,
    batches: bool = False,
) -> float:
    """Weir's job; ``batches``: ``map_batches`` over lists in place of ``map``."""
    from weir.common import Configuration, SimpleStringSchema, Types, WatermarkStrategy
    from weir.datastream import StreamExecutionEnvironment
    from weir.datastream.connectors import DeliveryGuarantee
    from weir.datastream.connectors.kafka import (
        KafkaOffsetsInitializer,
        KafkaRecordSerializationSchema,
        KafkaSink,
        KafkaSource,
    )

    sink_topic = _create(broker, f"weir-{uuid.uuid4().hex[:6]}", 2, SINK_TOPIC)
    configuration = Configuration()
    configuration.set_string(
        "execution.checkpointing.dir", f"file://{tempfile.mkdtemp(prefix='kafka-bench-')}"
    )
    env = StreamExecutionEnvironment.get_execution_environment(configuration)
    env.set_parallelism(parallelism)
    env.enable_checkpointing(1000)
    kafka_source = (
        KafkaSource.builder()
        .set_bootstrap_servers(broker)
        .set_topics(source)
        .set_value_only_deserializer(SimpleStringSchema())
        .set_bounded(KafkaOffsetsInitializer.latest())
        .build()
    )
    kafka_sink = (
        KafkaSink.builder()
        .set_bootstrap_servers(broker)
        .set_record_serializer(
            KafkaRecordSerializationSchema.builder()
            .set_topic(sink_topic)
            .set_value_serialization_schema(SimpleStringSchema())
            .build()
        )
        .set_delivery_guarantee(DeliveryGuarantee[guarantee])
        .set_transactional_id_prefix(f"bench-{sink_topic}")
        # The brokers refuse a timeout above their transaction.max.timeout.ms (15 min
        # by default); Flink's default is an hour.
        .set_property("transaction.timeout.ms", "900000")
        .build()
    )
    stream = env.from_source(kafka_source, WatermarkStrategy.no_watermarks(), "in")
    if batches:
        stream = stream.map_batches(lambda values: values, output_type=Types.STRING())
    else:
        stream = stream.map(lambda value: value, output_type=Types.STRING())
    stream.sink_to(kafka_sink)
    env.execute(f"kafka {'map_batches' if batches else 'map'} {guarantee} p={parallelism}")
    return _rate(broker, sink_topic, count)


class PyFlinkUnavailable(Exception):
    """PyFlink cannot run here; the message says why."""


def _reason(output: str) -> str:
    """One line for a failure's output: the root cause of a Java exception, or Maven's
    first error, or else its last line."""
    lines = [line.strip() for line in re.sub(r"\x1b\[[0-9;]*m", "", output).splitlines()]
    lines = [line for line in lines if line and line != "[ERROR]"]
    causes = [line for line in lines if line.startswith("Caused by:")]
    errors = [line for line in lines if line.startswith("[ERROR]")]
    return (causes[-1:] or errors[:1] or lines[-1:] or ["no output"])[0][:300]


def _connector_jar(folder: Path) -> Path:
    """Flink's Kafka connector, fetched into ``folder`` with Maven once (and kept in
    Maven's local repository, as the test suite's jars are)."""
    _, artifact, version = PYFLINK_CONNECTOR.split(":")
    jar = folder / f"{artifact}-{version}.jar"
    if jar.is_file():
        return jar
    mvn = shutil.which("mvn")
    if mvn is None:
        msg = f"Maven (mvn) fetches {PYFLINK_CONNECTOR} and is not installed: run `make maven`"
        raise PyFlinkUnavailable(msg)
    result = subprocess.run(
        [
            mvn,
            "-q",
            "-B",
            "-Dstyle.color=never",
            "dependency:copy",
            f"-Dartifact={PYFLINK_CONNECTOR}",
            f"-DoutputDirectory={folder}",
        ],
        capture_output=True,
        text=True,
        timeout=MAVEN_TIMEOUT_S,
        check=False,
    )
    if result.returncode != 0 or not jar.is_file():
        reason = _reason(result.stdout + result.stderr)
        msg = f"Maven could not fetch {PYFLINK_CONNECTOR} (exit {result.returncode}): {reason}"
        raise PyFlinkUnavailable(msg)
    return jar


@dataclass
class PyFlink:
    """PyFlink 2.3's Kafka -> map -> Kafka job, each run in a process of its own."""

    env: side_envs.SideEnv
    jar: Path
    runs: int = 0

    @classmethod
    def prepare(cls) -> PyFlink:
        """PyFlink's install, its Python dependencies and the connector's jar, each made
        once; raises PyFlinkUnavailable saying which could not be had."""
        sys.path.insert(0, str(TESTS / "e2e"))
        try:
            import pytest
            from flink_clients import install_flink
        except ImportError as exc:
            msg = f"the test suite's PyFlink installer needs {exc.name}: run `make setup`"
            raise PyFlinkUnavailable(msg) from exc
        try:
            install = install_flink().parent
        except pytest.fail.Exception as exc:
            raise PyFlinkUnavailable(_reason(str(exc))) from exc
        env = side_envs.pyflink(install)
        try:
            side_envs.python(env)
        except RuntimeError as exc:
            raise PyFlinkUnavailable(_reason(str(exc))) from exc
        return cls(env, _connector_jar(side_envs.cache_dir() / "jars"))

    def rate(self, broker: str, source: str, count: int, parallelism: int, guarantee: str) -> float:
        """The run's rate. Its first failure raises PyFlinkUnavailable (PyFlink does not
        run here), later ones RuntimeError."""
        sink = _create(broker, f"pyflink-{uuid.uuid4().hex[:6]}", 2, SINK_TOPIC)
        work = Path(tempfile.mkdtemp(prefix="kafka-bench-pyflink-"))
        arguments = [
            f"--bootstrap-servers={broker}",
            f"--source={source}",
            f"--sink={sink}",
            f"--parallelism={parallelism}",
            f"--guarantee={guarantee}",
            f"--jar={self.jar}",
            f"--work={work}",
        ]
        try:
            side_envs.run(self.env, "pyflink_kafka.py", arguments, PYFLINK_TIMEOUT_S)
        except RuntimeError as exc:
            if self.runs:
                msg = f"{PYFLINK} {guarantee} p={parallelism} failed (its log: {work}/log)"
                raise RuntimeError(msg) from exc
            msg = f"its first job failed ({_reason(str(exc))}); its log: {work}/log"
            raise PyFlinkUnavailable(msg) from exc
        shutil.rmtree(work, ignore_errors=True)
        self.runs += 1
        return _rate(broker, sink, count)


def _keep(best: dict[str, float], name: str, rate: float) -> None:
    best[name] = max(best.get(name, 0.0), rate)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--records", type=int, default=1_000_000)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--bootstrap-servers")
    parser.add_argument(
        "--pyflink",
        action=argparse.BooleanOptionalAction,
        default=True,
        help=f"measure {PYFLINK} too (default: when it can be had here)",
    )
    parser.add_argument(
        "--map-rows",
        action=argparse.BooleanOptionalAction,
        default=True,
        help="measure Weir's per-record map rows too (default: yes)",
    )
    parser.add_argument(
        "--parallelism", type=int, choices=(1, 2), action="append", help="default: 1 and 2"
    )
    args = parser.parse_args()
    pyflink = None
    if args.pyflink:
        try:
            pyflink = PyFlink.prepare()
        except PyFlinkUnavailable as exc:
            print(f"{PYFLINK} is left out: {exc}", flush=True)
    broker = None
    servers = args.bootstrap_servers
    if servers is None:
        from kafka_broker import KafkaBroker

        broker = KafkaBroker(Path(tempfile.mkdtemp(prefix="kafka-bench-broker-"))).start()
        servers = broker.bootstrap_servers
    try:
        count = args.records - args.records % 2
        source = _create(servers, f"bench-in-{uuid.uuid4().hex[:6]}", 2)
        _fill(servers, source, count)
        print(f"{count} records of {len(RECORD)} bytes, 2 partitions, broker {servers}")
        rows = []
        for parallelism in args.parallelism or (1, 2):
            best: dict[str, float] = {}
            for _ in range(args.repeat):
                _keep(best, "bare librdkafka loop", bare(servers, source, count, parallelism))
                for guarantee in GUARANTEES if args.map_rows else ():
                    rate = weir(servers, source, count, parallelism, guarantee)
                    _keep(best, f"Weir {guarantee}", rate)
                rate = weir(servers, source, count, parallelism, "EXACTLY_ONCE", batches=True)
                _keep(best, "Weir map_batches EXACTLY_ONCE", rate)
                if pyflink is None:
                    continue
                try:
                    for guarantee in GUARANTEES:
                        rate = pyflink.rate(servers, source, count, parallelism, guarantee)
                        _keep(best, f"{PYFLINK} {guarantee}", rate)
                except PyFlinkUnavailable as exc:
                    print(f"{PYFLINK} is left out: {exc}", flush=True)
                    pyflink = None
            limit = best["bare librdkafka loop"]
            rows += [(parallelism, name, rate, rate / limit) for name, rate in best.items()]
        print(f"{'p':>2}  {'pipeline':<30} {'records/s':>12}  of bare loop")
        for parallelism, name, rate, share in rows:
            shown = "" if name.startswith("bare") else f"{share:6.0%}"
            print(f"{parallelism:>2}  {name:<30} {rate:>12,.0f}  {shown}")
    finally:
        if broker is not None:
            broker.stop()


if __name__ == "__main__":
    main()
