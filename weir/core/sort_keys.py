"""The order of keys in a BATCH job's sorted inputs, as PyFlink's.

Flink sorts a keyed input in BATCH execution by the key's serialized bytes, then by
timestamp (``SortingDataInput`` with ``VariableLengthByteKeyComparator``). The bytes are
compared as Java's signed bytes, a shorter key before a longer one that starts with it.
PyFlink's key is ``Row.of(key)``, serialized by Flink's RowSerializer: one mask byte (the
row kind and whether the field is null), then the field by the serializer of the declared
key type; a key without a declared type is the pickled bytes, an int length and the
bytes. A TUPLE key is its fields one after another (TupleSerializer), a ROW key its kind
and null mask (two bits of kind, then one per field, most significant first) and its
non-null fields (RowSerializer), nested ones alike. ``sort_key_function(type_name)`` gives
``key -> bytes`` whose plain (unsigned) Python comparison is that order: each byte has its
top bit flipped.
"""

from __future__ import annotations

import struct
from collections.abc import Callable
from typing import Any

from weir.core.canonical_keys import canonical_key_bytes
from weir.core.key_groups import KeyTypeSpec, composite_key_type

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


def _serializer_of(spec: KeyTypeSpec) -> Callable[[Any], bytes]:
    if isinstance(spec, str):
        return _SERIALIZERS[spec]
    kind, field_specs = spec
    fields = [_serializer_of(f) for f in field_specs]
    if kind == "Tuple":
        # Flink's Tuple fields are never null (PyFlink's coder fails on one first).
        return lambda value: b"".join(
            b"" if v is None else write(v) for write, v in zip(fields, value, strict=False)
        )
    mask_bits = 2 + len(fields)
    mask_bytes = (mask_bits + 7) // 8

    def row(value: Any) -> bytes:
        kind = getattr(getattr(value, "_row_kind", None), "value", 0) or 0
        mask = (kind & 1) << (mask_bits - 1) | (kind >> 1 & 1) << (mask_bits - 2)
        body = []
        values = list(value)
        for i, write in enumerate(fields):
            v = values[i] if i < len(values) else None
            if v is None:
                mask |= 1 << (mask_bits - 3 - i)
            else:
                body.append(write(v))
        mask <<= mask_bytes * 8 - mask_bits
        return mask.to_bytes(mask_bytes, "big") + b"".join(body)

    return row


def sort_key_function(type_name: str) -> Callable[[Any], bytes]:
    """``key -> bytes`` ordering keys as PyFlink's BATCH sort does, for a declared key type
    name (``"pickled"`` without one; a basic type, or a TUPLE or ROW type of them, by its
    serializer; another type is sorted by its pickled form)."""
    spec = composite_key_type(type_name)
    serialize = _SERIALIZERS.get(type_name, _pickled) if spec is None else _serializer_of(spec)
    flip = _FLIP_SIGN

    def sort_key(key: Any) -> bytes:
        if key is None:
            return _NULL.translate(flip)
        return (_NOT_NULL + serialize(key)).translate(flip)

    return sort_key
