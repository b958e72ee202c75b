"""A PyFlink Kafka program (source -> key_by -> running count -> sink) with only its
imports changed from ``pyflink`` to ``weir``: each word read from the input topic goes out
as ``word,count`` with its running count, exactly once.

Run as ``python running_count.py BOOTSTRAP INPUT OUTPUT PREFIX [STOP]`` (STOP: the
offsets to stop at, ``partition:offset,...``; without it the job runs until cancelled);
the tests also call ``running_count`` with an environment they configured.
"""

import sys

from weir.common import SimpleStringSchema, Types, WatermarkStrategy
from weir.datastream import StreamExecutionEnvironment
from weir.datastream.connectors import DeliveryGuarantee
from weir.datastream.connectors.kafka import (
    KafkaOffsetsInitializer,
    KafkaRecordSerializationSchema,
    KafkaSink,
    KafkaSource,
    KafkaTopicPartition,
)
from weir.datastream.functions import KeyedProcessFunction, RuntimeContext
from weir.datastream.state import ValueStateDescriptor


class RunningCount(KeyedProcessFunction):
    def open(self, runtime_context: RuntimeContext):
        self.count = runtime_context.get_state(ValueStateDescriptor("count", Types.LONG()))

    def process_element(self, value, ctx):
        count = (self.count.value() or 0) + 1
        self.count.update(count)
        yield f"{value},{count}"


def running_count(
    env, bootstrap_servers, input_topic, output_topic, transactional_id_prefix, stop_at=None
):
    builder = (
        KafkaSource.builder()
        .set_bootstrap_servers(bootstrap_servers)
        .set_topics(input_topic)
        .set_group_id("running-count")
        .set_starting_offsets(KafkaOffsetsInitializer.earliest())
        .set_value_only_deserializer(SimpleStringSchema())
    )
    if stop_at is not None:
        builder = builder.set_bounded(
            KafkaOffsetsInitializer.offsets(
                {KafkaTopicPartition(input_topic, p): offset for p, offset in stop_at.items()}
            )
        )
    source = builder.build()
    sink = (
        KafkaSink.builder()
        .set_bootstrap_servers(bootstrap_servers)
        .set_record_serializer(
            KafkaRecordSerializationSchema.builder()
            .set_topic(output_topic)
            .set_value_serialization_schema(SimpleStringSchema())
            .build()
        )
        .set_delivery_guarantee(DeliveryGuarantee.EXACTLY_ONCE)
        .set_transactional_id_prefix(transactional_id_prefix)
        # At most the brokers' transaction.max.timeout.ms (15 minutes by default).
        .set_property("transaction.timeout.ms", "900000")
        .build()
    )
    (
        env.from_source(source, WatermarkStrategy.no_watermarks(), "words")
        .uid("words")
        .key_by(lambda word: word, key_type=Types.STRING())
        .process(RunningCount(), output_type=Types.STRING())
        .uid("running-count")
        .sink_to(sink)
        .uid("counts")
    )


def main():
    bootstrap_servers, input_topic, output_topic, prefix = sys.argv[1:5]
    stop_at = None
    if len(sys.argv) > 5:
        stop_at = dict(tuple(int(x) for x in pair.split(":")) for pair in sys.argv[5].split(","))
    env = StreamExecutionEnvironment.get_execution_environment()
    env.enable_checkpointing(500)
    running_count(env, bootstrap_servers, input_topic, output_topic, prefix, stop_at)
    env.execute("running count")


if __name__ == "__main__":
    main()
