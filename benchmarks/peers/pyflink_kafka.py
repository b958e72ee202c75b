"""Kafka -> map -> Kafka on PyFlink 2.3, the peer of ``benchmarks/kafka.py``'s Weir rows.

Run in PyFlink's side environment (``side_envs.pyflink``) with the Kafka connector's jar;
prints one JSON line::

    python pyflink_kafka.py --bootstrap-servers 127.0.0.1:9092 --source in --sink out \\
        --parallelism 2 --guarantee EXACTLY_ONCE --jar flink-sql-connector-kafka.jar \\
        --work /tmp/dir

The same pipeline as Weir's rows, through PyFlink's own connector API:
``from_source(KafkaSource) -> map(lambda value: value) -> sink_to(KafkaSink)`` on PyFlink's
default local MiniCluster at the given parallelism, checkpoints every second, the map in
PyFlink's default (process) execution mode. The rate is measured by the caller, from the
output records' Kafka timestamps; this prints only the job's wall time (start included).
The JVM's log goes to ``--work``, with the checkpoints.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--bootstrap-servers", required=True)
    parser.add_argument("--source", required=True)
    parser.add_argument("--sink", required=True)
    parser.add_argument("--parallelism", type=int, required=True)
    parser.add_argument("--guarantee", choices=("AT_LEAST_ONCE", "EXACTLY_ONCE"), required=True)
    parser.add_argument("--jar", type=Path, required=True)
    parser.add_argument("--work", type=Path, required=True)
    args = parser.parse_args()
    # Read by PyFlink when it starts its JVM, below.
    os.environ["FLINK_LOG_DIR"] = str(args.work / "log")

    from pyflink.common import Configuration, Types, WatermarkStrategy
    from pyflink.common.serialization import SimpleStringSchema
    from pyflink.datastream import StreamExecutionEnvironment
    from pyflink.datastream.connectors.base import DeliveryGuarantee
    from pyflink.datastream.connectors.kafka import (
        KafkaOffsetsInitializer,
        KafkaRecordSerializationSchema,
        KafkaSink,
        KafkaSource,
    )

    configuration = Configuration()
    # The map's Python workers run this environment's interpreter, not the PATH's.
    configuration.set_string("python.executable", sys.executable)
    configuration.set_string(
        "execution.checkpointing.dir", (args.work / "checkpoints").resolve().as_uri()
    )
    env = StreamExecutionEnvironment.get_execution_environment(configuration)
    env.add_jars(args.jar.resolve().as_uri())
    env.set_parallelism(args.parallelism)
    env.enable_checkpointing(1000)
    kafka_source = (
        KafkaSource.builder()
        .set_bootstrap_servers(args.bootstrap_servers)
        .set_topics(args.source)
        .set_value_only_deserializer(SimpleStringSchema())
        .set_starting_offsets(KafkaOffsetsInitializer.earliest())
        .set_bounded(KafkaOffsetsInitializer.latest())
        .build()
    )
    kafka_sink = (
        KafkaSink.builder()
        .set_bootstrap_servers(args.bootstrap_servers)
        .set_record_serializer(
            KafkaRecordSerializationSchema.builder()
            .set_topic(args.sink)
            .set_value_serialization_schema(SimpleStringSchema())
            .build()
        )
        .set_delivery_guarantee(DeliveryGuarantee[args.guarantee])
        .set_transactional_id_prefix(f"bench-{args.sink}")
        # The brokers refuse a timeout above their transaction.max.timeout.ms (15 min
        # by default); Flink's default is an hour.
        .set_property("transaction.timeout.ms", "900000")
        .build()
    )
    (
        env.from_source(kafka_source, WatermarkStrategy.no_watermarks(), "in")
        .map(lambda value: value, output_type=Types.STRING())
        .sink_to(kafka_sink)
    )
    start = time.monotonic()
    env.execute(f"kafka {args.guarantee} p={args.parallelism}")
    print(json.dumps({"seconds": time.monotonic() - start}))


if __name__ == "__main__":
    main()
