"""Key groups of a whole array of integer keys at once, exactly as ``PyFlinkKeyHasher``
places each key (``weir.core.key_groups``).

For the key types an integer key is declared as (``"pickled"``, the default, and
``"Long"``, ``"Integer"``, ``"Short"``, ``"Byte"``), the Java ``hashCode`` PyFlink
takes is computed with numpy over the array, then Flink's murmur hash and the modulo.
A pickled integer's hash is the hash of its protocol-5 pickle, whose bytes depend on
the value's size (``K`` up to 255, a frame and ``M`` up to 65535, ``J`` within 32 bits,
``LONG1`` with as many bytes as the value needs beyond): the constant bytes of each form
are hashed once, the value's bytes over the array.

numpy is imported here, so only code that holds columns imports this module.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from weir.core.key_groups import _ROW_OF_ONE_FIELD, java_bytes_hash, normalized_key_type

_M32 = 0xFFFFFFFF
_INT_TYPES = ("Integer", "Short", "Byte")
# Pickle protocol 5's bytes before an integer's value, by form (see the module docstring).
_PROTO = b"\x80\x05"
_STOP = 0x2E  # the pickle's closing "."


def _frame(length: int) -> bytes:
    return b"\x95" + length.to_bytes(8, "little")


_SMALL = _PROTO + b"K"
_MEDIUM = _PROTO + _frame(4) + b"M"
_INT32 = _PROTO + _frame(6) + b"J"


def _long1(size: int) -> bytes:
    return _PROTO + _frame(size + 3) + bytes([0x8A, size])


def supports_key_type(key_type: str) -> bool:
    """Whether integer keys of ``key_type`` are placed here (else: key by key)."""
    normalized = normalized_key_type(key_type)
    return normalized in ("pickled", "Long", *_INT_TYPES)


def _u32(value: int) -> Any:
    return np.uint32(value & _M32)


def _signed_byte(x: Any, index: int) -> Any:
    """Byte ``index`` (little-endian) of every uint32 in ``x``, as Java's signed byte
    modulo 2**32."""
    b = (x >> np.uint32(8 * index)) & np.uint32(0xFF)
    return (b ^ np.uint32(0x80)) - np.uint32(0x80)


def _form_hash(prefix: bytes, value_bytes: list[Any]) -> Any:
    """``Arrays.hashCode(prefix + value bytes + b".")`` modulo 2**32 (uint32 arrays wrap
    as Java's int does), the value's bytes given as signed bytes, in order."""
    n = len(value_bytes) + 1
    h = value_bytes[0] * _u32(pow(31, n - 1, 1 << 32))
    for i, b in enumerate(value_bytes[1:], start=2):
        h += b * _u32(pow(31, n - i, 1 << 32))
    return h + _u32(java_bytes_hash(prefix) * pow(31, n, 1 << 32) + _STOP)


_TABLES: list[Any] = []


def _tables() -> tuple[Any, Any, Any]:
    """Per 16-bit half, what it adds to a pickled integer's hash (made once): the whole
    hash of 0..65535 (the K and M forms), and the J form's part of a value's low and high
    16 bits (the high one with the constant bytes)."""
    if not _TABLES:
        half = np.arange(1 << 16, dtype=np.uint32)
        b = [_signed_byte(half, i) for i in range(2)]
        small = np.where(half <= 0xFF, _form_hash(_SMALL, b[:1]), _form_hash(_MEDIUM, b))
        zero = np.zeros(1 << 16, dtype=np.uint32)
        constant = _form_hash(_INT32, [zero, zero, zero, zero])
        low = _form_hash(_INT32, [b[0], b[1], zero, zero]) - constant
        high = _form_hash(_INT32, [zero, zero, b[0], b[1]])
        _TABLES.extend((small, low, high))
    return _TABLES[0], _TABLES[1], _TABLES[2]


def _pickled_hashes(keys: Any) -> Any:
    """``java_bytes_hash(pickle.dumps(key, 5))`` of every key, modulo 2**32 (uint32)."""
    small, low, high = _tables()
    x = keys.astype(np.uint32)  # the low 32 bits: all the K, M and J forms hold
    x16 = x & np.uint32(0xFFFF)
    code = low.take(x16) + high.take(x >> np.uint32(16))
    code = np.where((keys >= 0) & (keys <= 0xFFFF), small.take(x16), code)
    wide = (keys < -(1 << 31)) | (keys >= 1 << 31)
    if wide.any():
        # LONG1: as many bytes as the two's complement needs (5 to 8 beyond 32 bits).
        rows = np.flatnonzero(wide)
        values = keys[rows]
        size = np.full(len(values), 8, dtype=np.int64)
        for n in (7, 6, 5):
            size[(values >= -(1 << (8 * n - 1))) & (values < (1 << (8 * n - 1)))] = n
        lo = values.astype(np.uint32)
        hi = (values >> 32).astype(np.uint32)
        wide_bytes = [_signed_byte(lo, i) for i in range(4)]
        wide_bytes += [_signed_byte(hi, i) for i in range(4)]
        for n in (5, 6, 7, 8):
            at = size == n
            if at.any():
                code[rows[at]] = _form_hash(_long1(n), [w[at] for w in wide_bytes[:n]])
    return code


def _murmur(code: Any) -> Any:
    """Flink's ``MathUtils.murmurHash`` of every int (uint32, as its bits), as int64."""
    c = code * np.uint32(0xCC9E2D51)
    c = (c << np.uint32(15)) | (c >> np.uint32(17))
    c *= np.uint32(0x1B873593)
    c = (c << np.uint32(13)) | (c >> np.uint32(19))
    c = c * np.uint32(5) + np.uint32(0xE6546B64)
    c ^= np.uint32(4)
    c ^= c >> np.uint32(16)
    c *= np.uint32(0x85EBCA6B)
    c ^= c >> np.uint32(13)
    c *= np.uint32(0xC2B2AE35)
    c ^= c >> np.uint32(16)
    # Java's Math.abs of the int, with MIN_VALUE taken as 0 (as murmur_hash does).
    return np.abs(c.view(np.int32)).view(np.uint32) & np.uint32(0x7FFFFFFF)


def key_groups_of(keys: Any, max_parallelism: int, key_type: str = "pickled") -> Any:
    """The key group of every integer key in ``keys`` (an int64 array) as
    ``PyFlinkKeyHasher(key_type).key_group(int(key), max_parallelism)`` gives it, as an
    int64 array (max parallelism is at most 2**15). ValueError for a key type that
    ``supports_key_type`` refuses."""
    normalized = normalized_key_type(key_type)
    keys = np.asarray(keys, dtype=np.int64)
    if normalized == "pickled":
        code = _pickled_hashes(keys)
    elif normalized == "Long":
        code = (keys ^ (keys.view(np.uint64) >> np.uint64(32)).view(np.int64)).astype(np.uint32)
    elif normalized in _INT_TYPES:
        code = keys.astype(np.uint32)
    else:
        msg = f"integer keys of type {key_type!r} are placed key by key, not as an array"
        raise ValueError(msg)
    hashed = _murmur(code + np.uint32(_ROW_OF_ONE_FIELD))
    if max_parallelism & (max_parallelism - 1) == 0:
        hashed &= np.uint32(max_parallelism - 1)
    else:
        hashed %= np.uint32(max_parallelism)
    return hashed.astype(np.int64)
