"""Encoders that write records to files, and the schemas connectors turn records into bytes
and back with (``pyflink.common.serialization``)."""

from __future__ import annotations

from collections.abc import Sequence
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

    def serialize_batch(self, elements: Sequence[Any]) -> list[bytes]:
        """Weir's own: ``serialize`` of each of ``elements``, in order, as a connector that
        writes a batch at once asks for them. A schema that can do a batch in fewer
        Python calls overrides it, with the same results."""
        serialize = self.serialize
        return [serialize(element) for element in elements]


class DeserializationSchema:
    """Turns the bytes a connector read into a record (``pyflink.common.DeserializationSchema``).

    Subclass and implement ``deserialize(message) -> record``; a record of ``None`` is
    skipped, as Flink's collector skips null. ``get_produced_type()`` is the type of the
    stream the source produces."""

    def open(self) -> None:
        """Called once per subtask before the first ``deserialize``."""

    def deserialize(self, message: bytes) -> Any:
        raise NotImplementedError

    def deserialize_batch(self, messages: Sequence[bytes]) -> list[Any]:
        """Weir's own: ``deserialize`` of each of ``messages``, in order (``None`` where a
        record is to be skipped), as a connector that reads a batch at once asks for
        them. A schema that can do a batch in fewer Python calls overrides it, with the
        same results; a batch it cannot do at once it may refuse by raising, and the
        connector then deserializes it message by message."""
        deserialize = self.deserialize
        return [deserialize(message) for message in messages]

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

    def serialize_batch(self, elements: Sequence[Any]) -> list[bytes]:
        if type(self).serialize is not SimpleStringSchema.serialize:
            return super().serialize_batch(elements)  # a subclass's own serialize
        try:
            return self._charset.encode_all(elements)
        except TypeError:  # not all strings: each in its string form, as serialize does
            return super().serialize_batch(elements)

    def deserialize_batch(self, messages: Sequence[bytes]) -> list[Any]:
        if type(self).deserialize is not SimpleStringSchema.deserialize:
            return super().deserialize_batch(messages)  # a subclass's own deserialize
        return self._charset.decode_all(messages)

    def get_produced_type(self) -> TypeInformation:
        return Types.STRING()

    def __repr__(self) -> str:
        return f"SimpleStringSchema({self.charset!r})"
