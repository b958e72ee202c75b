"""The order of keys in a BATCH job's sorted inputs, as PyFlink's.

Flink sorts a keyed input in BATCH execution by the key's serialized bytes, then by
timestamp (``SortingDataInput`` with ``VariableLengthByteKeyComparator``). The bytes are
compared as Java's signed bytes, a shorter key before a longer one that starts with it.
PyFlink's key is ``Row.of(key)``, serialized by Flink's RowSerializer: one mask byte (the
row kind and whether the field is null), then the field by the serializer of the declared
key type; a key without a declared type is the pickled bytes, an int length and the
bytes. ``sort_key_function(type_name)`` gives ``key -> bytes`` whose plain (unsigned)
Python comparison is that order: each byte has its top bit flipped.
"""

from __future__ import annotations

import struct
from collections.abc import Callable
from typing import Any

from weir.core.canonical_keys import canonical_key_bytes

__all__ = ["sort_key_function"]

_FLIP_SIGN = bytes(b ^ 0x80 for b in range(256))
_NOT_NULL = b"\x00"
# RowSerializer's mask: two row-kind bits, then one bit per field (set: null).
_NULL = b"\x20"


def _string(value: Any) -> bytes:
    """Flink's StringValue.writeString: the length + 1, then each UTF-16 unit, in 7-bit
    groups (low first, the high bit set on all but the last)."""
    text = str(value)
    out = bytearray()
    if text.isascii():  # one byte per character: the common case, without a loop
        _varint(out, len(text) + 1)
        return bytes(out) + text.encode("ascii")
    units = text.encode("utf-16-le", "surrogatepass")
    _varint(out, len(units) // 2 + 1)
    for i in range(0, len(units), 2):
        _varint(out, units[i] | units[i + 1] << 8)
    return bytes(out)


def _varint(out: bytearray, n: int) -> None:
    while n >= 0x80:
        out.append((n | 0x80) & 0xFF)
        n >>= 7
    out.append(n)


def _pickled(value: Any) -> bytes:
    data = canonical_key_bytes(value)
    return struct.pack(">i", len(data)) + data


def _int_packer(fmt: str, bits: int) -> Callable[[Any], bytes]:
    half, whole = 1 << (bits - 1), 1 << bits

    def pack(value: Any) -> bytes:
        n = int(value)
        return struct.pack(fmt, (n + half) % whole - half)  # Java's narrowing

    return pack


_SERIALIZERS: dict[str, Callable[[Any], bytes]] = {
    "pickled": _pickled,
    "String": _string,
    "Integer": _int_packer(">i", 32),
    "Long": _int_packer(">q", 64),
    "Short": _int_packer(">h", 16),
    "Byte": _int_packer(">b", 8),
    "Boolean": lambda v: b"\x01" if v else b"\x00",
    "Double": lambda v: struct.pack(">d", float(v)),
    "Float": lambda v: struct.pack(">f", float(v)),
    "Char": lambda v: struct.pack(">H", ord(str(v)[0]) if str(v) else 0),
}


def sort_key_function(type_name: str) -> Callable[[Any], bytes]:
    """``key -> bytes`` ordering keys as PyFlink's BATCH sort does, for a declared key type
    name (``"pickled"`` without one; another type is sorted by its pickled form)."""
    serialize = _SERIALIZERS.get(type_name, _pickled)
    flip = _FLIP_SIGN

    def sort_key(key: Any) -> bytes:
        if key is None:
            return _NULL.translate(flip)
        return (_NOT_NULL + serialize(key)).translate(flip)

    return sort_key
