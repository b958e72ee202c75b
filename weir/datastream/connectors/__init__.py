"""Sources and sinks (mirrors ``pyflink.datastream.connectors``)."""

from weir.datastream.connectors.base import DeliveryGuarantee
from weir.datastream.connectors.collection import CollectionSource
from weir.datastream.connectors.datagen import DataGeneratorSource, RateLimiterStrategy
from weir.datastream.connectors.file_system import (
    BucketAssigner,
    FileSink,
    FileSource,
    FileSourceBuilder,
    OutputFileConfig,
    RollingPolicy,
    StreamFormat,
)
from weir.datastream.connectors.number_seq import NumberSequenceSource

__all__ = [
    "BucketAssigner",
    "CollectionSource",
    "DataGeneratorSource",
    "DeliveryGuarantee",
    "FileSink",
    "FileSource",
    "FileSourceBuilder",
    "NumberSequenceSource",
    "OutputFileConfig",
    "RateLimiterStrategy",
    "RollingPolicy",
    "StreamFormat",
]
