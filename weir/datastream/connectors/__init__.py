"""Sources and sinks (mirrors ``pyflink.datastream.connectors``)."""

from weir.datastream.connectors.collection import CollectionSource
from weir.datastream.connectors.number_seq import NumberSequenceSource

__all__ = ["CollectionSource", "NumberSequenceSource"]
