"""The Kafka connector's builders, names and pure rules (no broker: the integration tier
runs them against a real one)."""

from __future__ import annotations

import logging
import pickle

import pytest

from weir.common import SimpleStringSchema
from weir.datastream.connectors import DeliveryGuarantee
from weir.datastream.connectors.kafka import (
    KafkaOffsetResetStrategy,
    KafkaOffsetsInitializer,
    KafkaRecordSerializationSchema,
    KafkaSink,
    KafkaSource,
    KafkaTopicPartition,
)
from weir.datastream.connectors.kafka._client import java_string_hash, split_owner
from weir.datastream.connectors.kafka._transactions import (
    parse_transactional_id,
    transactional_id,
)
from weir.datastream.connectors.kafka.errors import KafkaConfigurationError


def _source_builder():
    return (
        KafkaSource.builder()
        .set_bootstrap_servers("127.0.0.1:1")
        .set_topics("in")
        .set_value_only_deserializer(SimpleStringSchema())
    )


def _serializer():
    return (
        KafkaRecordSerializationSchema.builder()
        .set_topic("out")
        .set_value_serialization_schema(SimpleStringSchema())
        .build()
    )


class TestKafkaSourceBuilder:
    def test_defaults_are_flinks(self):
        source = _source_builder().build()
        settings = source._settings
        assert settings.starting == KafkaOffsetsInitializer.earliest()
        assert settings.stopping is None and not source.is_bounded()
        assert settings.discovery_interval_ms == 300_000
        assert settings.commit_offsets is False  # no group to commit to
        assert _source_builder().set_group_id("g").build()._settings.commit_offsets

    def test_bounded_turns_partition_discovery_off(self):
        source = (
            _source_builder()
            .set_property("partition.discovery.interval.ms", "10")
            .set_bounded(KafkaOffsetsInitializer.latest())
            .build()
        )
        assert source.is_bounded()
        assert source._settings.discovery_interval_ms == -1

    def test_flink_options_are_taken_out_of_the_client_properties(self):
        source = (
            _source_builder()
            .set_group_id("g")
            .set_properties(
                {
                    "partition.discovery.interval.ms": "1000",
                    "commit.offsets.on.checkpoint": "false",
                    "fetch.min.bytes": "1",
                }
            )
            .build()
        )
        assert source._settings.discovery_interval_ms == 1000
        assert source._settings.commit_offsets is False
        assert dict(source._settings.properties) == {"fetch.min.bytes": "1"}

    @pytest.mark.parametrize(
        ("change", "message"),
        [
            (lambda b: b.set_bootstrap_servers(""), "set_bootstrap_servers"),
            (lambda b: b.set_topic_pattern("in.*"), "exactly one of set_topics"),
            (
                lambda b: b.set_property("commit.offsets.on.checkpoint", "maybe"),
                "true or false",
            ),
        ],
    )
    def test_wrong_settings_fail_at_build_naming_the_setting(self, change, message):
        with pytest.raises(KafkaConfigurationError, match=message):
            change(_source_builder()).build()

    def test_needs_a_deserializer(self):
        builder = KafkaSource.builder().set_bootstrap_servers("b:1").set_topics("t")
        with pytest.raises(KafkaConfigurationError, match="set_value_only_deserializer"):
            builder.build()

    def test_pickles_and_reports_its_type(self):
        source = pickle.loads(pickle.dumps(_source_builder().build()))
        assert repr(source.get_produced_type()) == "String"

    def test_offsets_initializers_keep_their_arguments(self):
        tp = KafkaTopicPartition("t", 1)
        assert tp == KafkaTopicPartition("t", 1) and hash(tp) == hash(KafkaTopicPartition("t", 1))
        init = KafkaOffsetsInitializer.offsets({tp: 7}, KafkaOffsetResetStrategy.LATEST)
        assert init.specified == (("t", 1, 7),) and init.auto_offset_reset == "latest"
        assert KafkaOffsetsInitializer.committed_offsets().auto_offset_reset == "error"
        assert KafkaOffsetsInitializer.timestamp(5).timestamp_ms == 5


class TestPartitionOwners:
    def test_java_string_hash_is_javas(self):
        assert java_string_hash("") == 0
        assert java_string_hash("hello") == 99162322
        assert java_string_hash("polygenelubricants") == -(1 << 31)

    def test_a_topics_partitions_are_spread_round_robin_from_a_topic_dependent_start(self):
        owners = [split_owner("orders", p, 3) for p in range(6)]
        start = owners[0]
        assert owners == [(start + p) % 3 for p in range(6)]
        assert sorted(owners.count(i) for i in range(3)) == [2, 2, 2]


class TestKafkaSinkBuilder:
    def test_defaults_are_flinks(self):
        sink = (
            KafkaSink.builder()
            .set_bootstrap_servers("b:1")
            .set_record_serializer(_serializer())
            .build()
        )
        assert sink._settings.delivery_guarantee is DeliveryGuarantee.NONE
        assert sink._settings.transactional_id_prefix == "kafka-sink"
        assert sink._settings.fixed_topics == ("out",)

    def test_refuses_a_transactional_id_of_its_own(self):
        builder = (
            KafkaSink.builder()
            .set_bootstrap_servers("b:1")
            .set_record_serializer(_serializer())
            .set_property("transactional.id", "x")
        )
        with pytest.raises(KafkaConfigurationError, match="set_transactional_id_prefix"):
            builder.build()

    def test_record_serializer_needs_a_topic_and_a_value_schema(self):
        with pytest.raises(KafkaConfigurationError, match="set_topic"):
            KafkaRecordSerializationSchema.builder().set_value_serialization_schema(
                SimpleStringSchema()
            ).build()
        with pytest.raises(KafkaConfigurationError, match="set_value_serialization_schema"):
            KafkaRecordSerializationSchema.builder().set_topic("t").build()

    def test_topic_selector_key_and_value(self):
        schema = (
            KafkaRecordSerializationSchema.builder()
            .set_topic_selector(lambda v: f"topic-{v[0]}")
            .set_key_serialization_schema(SimpleStringSchema())
            .set_value_serialization_schema(SimpleStringSchema())
            .build()
        )
        assert schema.serializer()("ab") == ("topic-a", b"ab", b"ab")
        assert _serializer().serializer()("x") == ("out", None, b"x")

    def test_a_batch_serializes_as_its_records_do(self):
        class Tagged:  # a duck-typed schema, without serialize_batch
            def serialize(self, element):
                return f"<{element}>".encode()

        keyed = (
            KafkaRecordSerializationSchema.builder()
            .set_topic("out")
            .set_key_serialization_schema(Tagged())
            .set_value_serialization_schema(SimpleStringSchema())
            .build()
        )
        records = ["a", "é", 7]
        for schema in (keyed, _serializer()):
            one = schema.serializer()
            topic, keys, values = schema.batch_serializer()(records)
            expected = [one(r) for r in records]
            assert {e[0] for e in expected} == {topic}
            assert values == [e[2] for e in expected]
            assert (keys or [None] * len(records)) == [e[1] for e in expected]
        selected = (
            KafkaRecordSerializationSchema.builder()
            .set_topic_selector(lambda v: f"topic-{v[0]}")
            .set_value_serialization_schema(SimpleStringSchema())
            .build()
        )
        assert selected.batch_serializer() is None  # a topic per record: record by record

    def test_warns_with_the_numbers_when_the_transaction_timeout_is_too_short(self, caplog):
        sink = (
            KafkaSink.builder()
            .set_bootstrap_servers("b:1")
            .set_record_serializer(_serializer())
            .set_delivery_guarantee(DeliveryGuarantee.EXACTLY_ONCE)
            .set_property("transaction.timeout.ms", "20000")
            .build()
        )
        config = {
            "execution.checkpointing.interval": "10 s",
            "restart-strategy.type": "fixed-delay",
            "restart-strategy.fixed-delay.delay": "5 s",
            "heartbeat.timeout": "6 s",
        }
        with caplog.at_level(logging.WARNING):
            sink.check_job_configuration(config)
        (record,) = [r for r in caplog.records if "transaction.timeout.ms" in r.getMessage()]
        message = record.getMessage()
        assert "(20000 ms)" in message and "(10000 ms)" in message and "above 21000" in message
        caplog.clear()
        with caplog.at_level(logging.WARNING):
            sink.check_job_configuration({**config, "execution.checkpointing.interval": "1 s"})
        assert not caplog.records


def test_transactional_ids_follow_flinks_scheme():
    assert transactional_id("job", 2, 17) == "job-2-17"
    assert parse_transactional_id("job", "job-2-17") == (2, 17)
    assert parse_transactional_id("job", "job-x-2-17") is None
    assert parse_transactional_id("job-x", "job-x-2-17") == (2, 17)
