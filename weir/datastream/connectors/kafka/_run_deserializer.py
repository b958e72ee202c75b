"""How the Kafka source turns a run of messages of one partition into records: a batch
at a time where the schema can (``deserialize_batch``), as columns where the task reads
them and the schema makes them (``deserialize_columns``), else message by message; with
the messages' Kafka timestamps beside them.

Every path gives the records ``deserialize`` gives message by message, and a message the
schema cannot read fails with the error message by message names (its offset).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, NoReturn

from weir.datastream.connectors.kafka.errors import KafkaDeserializationError


class RunDeserializer:
    """Deserializes runs of ``confluent_kafka.Message`` with ``schema`` (a
    DeserializationSchema, or any object with ``deserialize``). Called on the task
    thread only."""

    def __init__(self, schema: Any, message_type: Any) -> None:
        """``message_type``: ``confluent_kafka.Message``, whose methods are mapped over a
        run without a Python call per message."""
        self._schema = schema
        self._deserialize = schema.deserialize
        self._deserialize_batch = getattr(schema, "deserialize_batch", None)
        self._deserialize_columns = getattr(schema, "deserialize_columns", None)
        self._value_of = message_type.value
        self._timestamp_of = message_type.timestamp
        # A schema may return None for a record to skip (Flink's collector skips null).
        self._skips_none = not getattr(schema, "_never_returns_none", False)
        self.columns = False
        """Whether to make columns where the schema can (the task reads them)."""

    def run(self, split_id: str, run: list[Any]) -> tuple[Sequence[Any], list[int | None]]:
        """The records of ``run`` (a list, or a ColumnBatch with ``columns`` on) and
        their timestamps (None where a message has none); skipped records left out."""
        payloads = list(map(self._value_of, run))
        if self.columns and self._deserialize_columns is not None:
            columns = self._columns_of(payloads)
            if columns is not None:
                return columns, self._timestamps_of(run)  # a column holds no skipped None
        values: list[Any] | None = None
        if self._deserialize_batch is not None:
            try:
                values = self._deserialize_batch(payloads)
            except Exception:  # message by message below: it finds and names the bad one
                values = None
            if values is not None and len(values) != len(payloads):
                values = None
        if values is None:
            deserialize = self._deserialize
            try:
                values = [deserialize(payload) for payload in payloads]
            except Exception as exc:
                self._raise_error(split_id, run, exc)
        timestamps = self._timestamps_of(run)
        if self._skips_none and None in values:
            kept = [(v, t) for v, t in zip(values, timestamps, strict=True) if v is not None]
            values = [v for v, _ in kept]
            timestamps = [t for _, t in kept]
        return values, timestamps

    def _columns_of(self, payloads: list[Any]) -> Sequence[Any] | None:
        """The schema's ColumnBatch of ``payloads``; None when it makes none of them."""
        assert self._deserialize_columns is not None
        try:
            columns = self._deserialize_columns(payloads)
        except Exception:  # the run as records instead: they name a bad message
            return None
        if columns is None or len(columns) != len(payloads):
            return None
        return columns  # type: ignore[no-any-return]

    def _timestamps_of(self, run: list[Any]) -> list[int | None]:
        return [ts if kind else None for kind, ts in map(self._timestamp_of, run)]

    def _raise_error(self, split_id: str, run: list[Any], exc: Exception) -> NoReturn:
        deserialize = self._deserialize
        bad = run[0]
        for message in run:
            try:
                deserialize(message.value())
            except Exception:
                bad = message
                break
        value = bad.value()
        shown = value[:200] if isinstance(value, bytes) else value
        msg = (
            f"the deserialization schema {self._schema!r} failed on the record "
            f"at offset {bad.offset()} of Kafka partition {split_id} ({shown!r}): "
            f"{type(exc).__name__}: {exc}; fix the schema given to "
            "set_value_only_deserializer(...), or the data (a JSON schema skips bad "
            "records with ignore_parse_errors())"
        )
        raise KafkaDeserializationError(msg) from exc
