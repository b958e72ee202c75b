"""Kafka -> map -> Kafka throughput: Weir's KafkaSource and KafkaSink against the client
library's own bare loop, on a real broker on this machine.

    python benchmarks/kafka.py [--records N] [--repeat R] [--bootstrap-servers HOST:PORT]

Without ``--bootstrap-servers`` a Kafka 4 broker is started from the test suite's jars
(tests/kafka_broker.py). The input topic holds N records of 100 bytes in 2 partitions.
Every run copies it into a new topic; its rate is N over the span of the output records'
Kafka timestamps (set when the producer took each record), so JVM, Spark and job start
are left out alike for the bare loop and for Weir. Each figure is the best of R runs,
taken in turns (bare, AT_LEAST_ONCE, EXACTLY_ONCE, bare, ...), so that a machine shared
with other work disturbs them alike.

* bare loop: librdkafka (confluent-kafka), ``consume`` a batch, ``produce`` each record,
  one process per partition for p=2; the physical limit of the client here.
* Weir: ``from_source(KafkaSource) -> map -> sink_to(KafkaSink)`` on the embedded
  MiniCluster at p=1 and p=2, with AT_LEAST_ONCE and EXACTLY_ONCE, checkpoints every
  second.
"""

from __future__ import annotations

import argparse
import multiprocessing
import sys
import tempfile
import time
import uuid
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))

RECORD = b"x" * 100


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
    while seen < count and time.monotonic() < deadline:
        for message in consumer.consume(10_000, 1.0):
            if message.error():
                continue
            ts = message.timestamp()[1]
            first = ts if first is None else min(first, ts)
            last = ts if last is None else max(last, ts)
            seen += 1
    consumer.close()
    if seen < count:
        msg = f"{topic} holds {seen} committed records, expected {count}"
        raise RuntimeError(msg)
    return count / max((last - first) / 1000, 1e-3)


def _create(broker: str, name: str, partitions: int) -> str:
    from confluent_kafka.admin import AdminClient, NewTopic

    admin = AdminClient({"bootstrap.servers": broker})
    admin.create_topics([NewTopic(name, partitions, 1)])[name].result(60)
    time.sleep(1)  # leaders elected
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
        }
    )
    consumer.assign([TopicPartition(source, partition, 0)])
    producer = Producer({"bootstrap.servers": broker})
    seen = 0
    while seen < count:
        messages = consumer.consume(1000, 1.0)
        for message in messages:
            value = message.value()
            try:
                producer.produce(sink, value)
            except BufferError:
                producer.poll(0.05)
                producer.produce(sink, value)
        seen += len(messages)
        producer.poll(0)
    producer.flush(120)
    consumer.close()


def bare(broker: str, source: str, count: int, parallelism: int) -> float:
    sink = _create(broker, f"bare-{uuid.uuid4().hex[:6]}", 2)
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


def weir(broker: str, source: str, count: int, parallelism: int, guarantee: str) -> float:
    from weir.common import Configuration, SimpleStringSchema, Types, WatermarkStrategy
    from weir.datastream import StreamExecutionEnvironment
    from weir.datastream.connectors import DeliveryGuarantee
    from weir.datastream.connectors.kafka import (
        KafkaOffsetsInitializer,
        KafkaRecordSerializationSchema,
        KafkaSink,
        KafkaSource,
    )

    sink_topic = _create(broker, f"weir-{uuid.uuid4().hex[:6]}", 2)
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
        .build()
    )
    (
        env.from_source(kafka_source, WatermarkStrategy.no_watermarks(), "in")
        .map(lambda value: value, output_type=Types.STRING())
        .sink_to(kafka_sink)
    )
    env.execute(f"kafka {guarantee} p={parallelism}")
    return _rate(broker, sink_topic, count)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--records", type=int, default=1_000_000)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--bootstrap-servers")
    args = parser.parse_args()
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
        for parallelism in (1, 2):
            best = {"bare": 0.0, "AT_LEAST_ONCE": 0.0, "EXACTLY_ONCE": 0.0}
            for _ in range(args.repeat):
                best["bare"] = max(best["bare"], bare(servers, source, count, parallelism))
                for guarantee in ("AT_LEAST_ONCE", "EXACTLY_ONCE"):
                    rate = weir(servers, source, count, parallelism, guarantee)
                    best[guarantee] = max(best[guarantee], rate)
            limit = best["bare"]
            rows.append((parallelism, "bare librdkafka loop", limit, None))
            for guarantee in ("AT_LEAST_ONCE", "EXACTLY_ONCE"):
                rows.append(
                    (parallelism, f"Weir {guarantee}", best[guarantee], best[guarantee] / limit)
                )
        print(f"{'p':>2}  {'pipeline':<24} {'records/s':>12}  of bare loop")
        for parallelism, name, rate, share in rows:
            shown = "" if share is None else f"{share:6.0%}"
            print(f"{parallelism:>2}  {name:<24} {rate:>12,.0f}  {shown}")
    finally:
        if broker is not None:
            broker.stop()


if __name__ == "__main__":
    main()
