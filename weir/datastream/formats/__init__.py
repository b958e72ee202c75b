"""Record formats for connectors (mirrors ``pyflink.datastream.formats``)."""

from weir.datastream.formats.json import JsonRowDeserializationSchema, JsonRowSerializationSchema

__all__ = ["JsonRowDeserializationSchema", "JsonRowSerializationSchema"]
