"""Encoders that write records to files (``pyflink.common.serialization``)."""

from __future__ import annotations

from typing import Any, BinaryIO

__all__ = ["Encoder"]


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
