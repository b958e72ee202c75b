"""Encoders that write records to files, and the schemas connectors turn records into bytes
and back with (``pyflink.common.serialization``)."""

from __future__ import annotations

from typing import Any, BinaryIO

from weir.common.typeinfo import TypeInformation, Types
from weir.core.java_text import JavaCharset

__all__ = ["DeserializationSchema", "Encoder", "SerializationSchema", "SimpleStringSchema"]


class Encoder:
    """Writes one record to a part file (``pyflink.common.Encoder``)."""

    def __init__(self, charset_name: str = "UTF-8") -> None:
        self.charset_name = charset_name
        self._charset = JavaCharset(charset_name)

    @staticmethod
    def simple_string_encoder(charset_name: str = "UTF-8") -> Encoder:
        """Each record as its string form in ``charset_name`` and a ``\\n`` byte, as Flink's
        SimpleStringEncoder writes it: a character the charset cannot encode (or an unpaired
        surrogate) becomes ``?``, as in Java."""
        return Encoder(charset_name)  # an unknown charset fails here, on the client

    def encode(self, element: Any, stream: BinaryIO) -> None:
        stream.write(self.to_bytes(element))

    def to_bytes(self, element: Any) -> bytes:
        if isinstance(element, bytes):
            element = JavaCharset().decode(element)
        return self._charset.encode(f"{element}") + b"\n"


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
    """Strings as their bytes in ``charset`` (UTF-8 by default), both ways, as Java's
    ``new String(bytes, charset)`` and ``String.getBytes(charset)``: bytes that are not
    valid in the charset read as U+FFFD, and a character it cannot encode is written as
    ``?``, so one malformed record does not fail the job::

    KafkaSource.builder().set_value_only_deserializer(SimpleStringSchema())
    """

    _never_returns_none = True  # no record to skip: a source need not look for None

    def __init__(self, charset: str = "UTF-8") -> None:
        self.charset = charset
        self._charset = JavaCharset(charset)  # an unknown charset fails here, on the client

    def serialize(self, element: Any) -> bytes:
        if not isinstance(element, str):
            element = str(element)
        return self._charset.encode(element)

    def deserialize(self, message: bytes) -> str:
        return self._charset.decode(message)

    def get_produced_type(self) -> TypeInformation:
        return Types.STRING()

    def __repr__(self) -> str:
        return f"SimpleStringSchema({self.charset!r})"
