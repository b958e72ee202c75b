"""Encoders that write records to files, and the schemas connectors turn records into bytes
and back with (``pyflink.common.serialization``)."""

from __future__ import annotations

import codecs
from typing import Any, BinaryIO

from weir.common.typeinfo import TypeInformation, Types

__all__ = ["DeserializationSchema", "Encoder", "SerializationSchema", "SimpleStringSchema"]


class Encoder:
    """Writes one record to a part file (``pyflink.common.Encoder``)."""

    def __init__(self, charset_name: str = "UTF-8") -> None:
        self.charset_name = charset_name

    @staticmethod
    def simple_string_encoder(charset_name: str = "UTF-8") -> Encoder:
        """Each record as its string form and a ``\\n``, in ``charset_name``."""
        "\n".encode(charset_name)
        return Encoder(charset_name)

    def encode(self, element: Any, stream: BinaryIO) -> None:
        stream.write(self.to_bytes(element))

    def to_bytes(self, element: Any) -> bytes:
        if isinstance(element, bytes):
            element = element.decode("utf-8", "replace")
        return (f"{element}\n").encode(self.charset_name)


class SerializationSchema:
    """Turns a record into the bytes a connector writes (``pyflink.common.SerializationSchema``).

    Subclass and implement ``serialize(element) -> bytes``; ``open()`` is called once in
    each subtask before the first record."""

    def open(self) -> None:
        """Called once per subtask before the first ``serialize``."""

    def serialize(self, element: Any) -> bytes:
        raise NotImplementedError


class DeserializationSchema:
    """Turns the bytes a connector read into a record (``pyflink.common.DeserializationSchema``).

    Subclass and implement ``deserialize(message) -> record``; a record of ``None`` is
    skipped, as Flink's collector skips null. ``get_produced_type()`` is the type of the
    stream the source produces."""

    def open(self) -> None:
        """Called once per subtask before the first ``deserialize``."""

    def deserialize(self, message: bytes) -> Any:
        raise NotImplementedError

    def get_produced_type(self) -> TypeInformation:
        return Types.PICKLED_BYTE_ARRAY()


class SimpleStringSchema(SerializationSchema, DeserializationSchema):
    """Strings as their bytes in ``charset`` (UTF-8 by default), both ways::

    KafkaSource.builder().set_value_only_deserializer(SimpleStringSchema())
    """

    _never_returns_none = True  # no record to skip: a source need not look for None

    def __init__(self, charset: str = "UTF-8") -> None:
        codecs.lookup(charset)  # fail on the client, on an unknown charset
        self.charset = charset

    def serialize(self, element: Any) -> bytes:
        if not isinstance(element, str):
            element = str(element)
        return element.encode(self.charset)

    def deserialize(self, message: bytes) -> str:
        return message.decode(self.charset)

    def get_produced_type(self) -> TypeInformation:
        return Types.STRING()

    def __repr__(self) -> str:
        return f"SimpleStringSchema({self.charset!r})"
