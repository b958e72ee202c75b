"""Kafka source and sink in pure Python (mirrors ``pyflink.datastream.connectors.kafka``)."""

from weir.datastream.connectors.base import DeliveryGuarantee
from weir.datastream.connectors.kafka.offsets import (
    KafkaOffsetResetStrategy,
    KafkaOffsetsInitializer,
    KafkaTopicPartition,
)
from weir.datastream.connectors.kafka.sink import (
    KafkaRecordSerializationSchema,
    KafkaRecordSerializationSchemaBuilder,
    KafkaSink,
    KafkaSinkBuilder,
    KafkaTopicSelector,
)
from weir.datastream.connectors.kafka.source import KafkaSource, KafkaSourceBuilder

__all__ = [
    "DeliveryGuarantee",
    "KafkaOffsetResetStrategy",
    "KafkaOffsetsInitializer",
    "KafkaRecordSerializationSchema",
    "KafkaRecordSerializationSchemaBuilder",
    "KafkaSink",
    "KafkaSinkBuilder",
    "KafkaSource",
    "KafkaSourceBuilder",
    "KafkaTopicPartition",
    "KafkaTopicSelector",
]
