"""Key groups: a stable hash of each key, and Flink's assignment of key groups to subtasks.

``key_group = hash(key) % max_parallelism``; subtask ``i`` of ``p`` owns the key groups
``[ceil(i*M/p), ceil((i+1)*M/p))``, as Flink's KeyGroupRangeAssignment. The hash never
uses Python's ``hash()``, which is salted per process for ``str``.

The hash reproduces exactly where PyFlink puts a key, so ``print()`` prefixes and
per-subtask results match PyFlink's: PyFlink wraps the key in a Java ``Row`` and Flink
takes ``murmurHash(Row.of(key).hashCode())``. The key is the Java object the declared key
type's coder makes of it: a ``String``, ``Integer``, ... for a basic type, a Flink
``Tuple`` for a TUPLE type, a ``Row`` for a ROW type (nested ones too), and the pickled
bytes (a ``byte[]``) when ``key_by`` got no ``key_type``. A key without a declared type is
pickled in its canonical form (``canonical_keys``): equal keys are placed together, which
PyFlink's plain pickle does not promise; for the common key types the two are the same
bytes.

A key type is named by a string (it travels in job graphs, deployment descriptors and
checkpoints): ``"pickled"``, a basic type's name (``"String"``, ``"Integer"``, ...), or
``"Tuple<String, Integer>"`` and ``"Row<Long, Tuple<String, Double>>"`` for composites of
basic types. A composite holding a field of any other type (a list, a map, a date) is
placed by its pickled bytes, as every composite key was before Weir hashed them as Java
does (``legacy_key_placement``).
"""

from __future__ import annotations

import functools
import math
import operator
import pickle
import re
import struct
from collections.abc import Callable, Sequence
from typing import Any

from weir.core.canonical_keys import canonical_key_bytes

UPPER_BOUND_MAX_PARALLELISM = 1 << 15
DEFAULT_LOWER_BOUND_MAX_PARALLELISM = 1 << 7


def assign_to_key_group(key: Any, max_parallelism: int, key_type: str = "pickled") -> int:
    """The key group of ``key``, exactly as PyFlink assigns it (see PyFlinkKeyHasher)."""
    return PyFlinkKeyHasher(key_type).key_group(key, max_parallelism)


def compute_operator_index_for_key_group(
    max_parallelism: int, parallelism: int, key_group: int
) -> int:
    return key_group * parallelism // max_parallelism


def assign_key_to_parallel_operator(
    key: Any, max_parallelism: int, parallelism: int, key_type: str = "pickled"
) -> int:
    return compute_operator_index_for_key_group(
        max_parallelism, parallelism, assign_to_key_group(key, max_parallelism, key_type)
    )


def key_group_range_for_operator(
    max_parallelism: int, parallelism: int, operator_index: int
) -> range:
    """The key groups subtask ``operator_index`` owns (Flink's
    computeKeyGroupRangeForOperatorIndex)."""
    start = (operator_index * max_parallelism + parallelism - 1) // parallelism
    end = ((operator_index + 1) * max_parallelism - 1) // parallelism
    return range(start, end + 1)


def default_max_parallelism(parallelism: int) -> int:
    """Flink's default: 1.5 x parallelism rounded up to a power of two, within [128, 32768]."""
    wanted = parallelism + parallelism // 2
    rounded = 1 << max(0, math.ceil(math.log2(max(wanted, 1))))
    return min(max(rounded, DEFAULT_LOWER_BOUND_MAX_PARALLELISM), UPPER_BOUND_MAX_PARALLELISM)


# --- PyFlink's placement of keys -----------------------------------------------------

_M32 = 0xFFFFFFFF
# Row.of(key).hashCode() is 31 * kind + deepHashCode(fields): with the kind INSERT (0) and
# one field that is no array, list or map, 31 * 1 + (31 + key.hashCode()); with a null
# field, 31 (hence the -31 for None).
_ROW_OF_ONE_FIELD = 62
_NULL_KEY = -31
_POWERS_OF_31: list[int] = [1]


def _powers(n: int) -> list[int]:
    while len(_POWERS_OF_31) < n:
        _POWERS_OF_31.append((_POWERS_OF_31[-1] * 31) & _M32)
    return _POWERS_OF_31


def _signed32(value: int) -> int:
    value &= _M32
    return value - (1 << 32) if value & 0x80000000 else value


def java_bytes_hash(data: bytes) -> int:
    """``java.util.Arrays.hashCode(byte[])`` (bytes are signed in Java)."""
    n = len(data)
    powers = _powers(n + 1)
    signed = memoryview(data).cast("b")
    total = powers[n] + sum(map(operator.mul, signed, reversed(powers[:n])))
    return _signed32(total)


def java_string_hash(text: str) -> int:
    """``String.hashCode()``: over UTF-16 code units."""
    units = text.encode("utf-16-le", "surrogatepass")
    codes = memoryview(units).cast("H")
    n = len(codes)
    powers = _powers(n)
    return _signed32(sum(map(operator.mul, codes, reversed(powers[:n]))))


def _rotl32(x: int, r: int) -> int:
    return ((x << r) | (x >> (32 - r))) & _M32


def murmur_hash(code: int) -> int:
    """Flink's ``MathUtils.murmurHash(int)``: non-negative."""
    code = (code * 0xCC9E2D51) & _M32
    code = _rotl32(code, 15)
    code = (code * 0x1B873593) & _M32
    code = _rotl32(code, 13)
    code = (code * 5 + 0xE6546B64) & _M32
    code ^= 4
    code ^= code >> 16
    code = (code * 0x85EBCA6B) & _M32
    code ^= code >> 13
    code = (code * 0xC2B2AE35) & _M32
    code ^= code >> 16
    signed = _signed32(code)
    if signed >= 0:
        return signed
    return -signed if signed != -(1 << 31) else 0


def _pickled_key_hash(key: Any) -> int:
    t = type(key)
    if t is int or t is str:  # the usual keys, canonical as they are: no call more
        return java_bytes_hash(pickle.dumps(key, protocol=5))
    return java_bytes_hash(canonical_key_bytes(key))


def _java_long_hash(value: int) -> int:
    value &= (1 << 64) - 1
    return _signed32(value ^ (value >> 32))


def _java_double_hash(value: float) -> int:
    if value != value:  # noqa: PLR0124 (NaN: Java's canonical NaN bits)
        bits = 0x7FF8000000000000
    else:
        bits = struct.unpack(">q", struct.pack(">d", value))[0]
    return _java_long_hash(bits)


def _java_float_hash(value: float) -> int:
    return _signed32(struct.unpack(">i", struct.pack(">f", value))[0])


# The hashCode of the Java object PyFlink makes of a key of each declared type.
_JAVA_HASH_BY_TYPE: dict[str, Callable[[Any], int]] = {
    "pickled": _pickled_key_hash,
    "String": lambda k: java_string_hash(str(k)),
    "Char": lambda k: java_string_hash(str(k)),
    "Integer": _signed32,
    "Short": _signed32,
    "Byte": _signed32,
    "Long": _java_long_hash,
    "Boolean": lambda k: 1231 if k else 1237,
    "Double": _java_double_hash,
    "Float": _java_float_hash,
}

# --- composite key types -----------------------------------------------------------------

KeyTypeSpec = str | tuple[str, tuple["KeyTypeSpec", ...]]
"""A parsed key type name: a basic type's name, or ``("Tuple" | "Row", field specs)``."""

_TOKEN = re.compile(r"\s*(?:([A-Za-z]+)|(.))")


def _parse(name: str) -> KeyTypeSpec | None:
    """The spec of a composite of basic types; None for anything else."""
    tokens = [m.group(1) or m.group(2) for m in _TOKEN.finditer(name) if m.group(0).strip()]
    position = 0

    def spec() -> KeyTypeSpec | None:
        nonlocal position
        if position >= len(tokens):
            return None
        word = tokens[position]
        position += 1
        if word in ("Tuple", "Row") and position < len(tokens) and tokens[position] == "<":
            position += 1
            fields: list[KeyTypeSpec] = []
            while True:
                field = spec()
                if field is None or position >= len(tokens):
                    return None
                fields.append(field)
                separator = tokens[position]
                position += 1
                if separator == ">":
                    return (word, tuple(fields))
                if separator != ",":
                    return None
        if word == "pickled" or word not in _JAVA_HASH_BY_TYPE:
            return None
        return word

    parsed = spec()
    return parsed if parsed is not None and position == len(tokens) else None


def _spec_name(spec: KeyTypeSpec) -> str:
    if isinstance(spec, str):
        return spec
    kind, fields = spec
    return f"{kind}<{', '.join(_spec_name(f) for f in fields)}>"


@functools.lru_cache(maxsize=256)
def composite_key_type(name: str) -> KeyTypeSpec | None:
    """The spec of a TUPLE or ROW key type of basic types (nested ones too); None for a
    basic type, ``"pickled"`` or a composite of other types."""
    if not name.startswith(("Tuple", "Row")):
        return None
    spec = _parse(name)
    return spec if isinstance(spec, tuple) else None


def _row_kind(row: Any) -> int:
    """``RowKind.toByteValue()`` of a Python Row (INSERT for anything else)."""
    kind = getattr(row, "_row_kind", None)
    return int(getattr(kind, "value", 0) or 0)


def _hash_code_of(spec: KeyTypeSpec) -> Callable[[Any], int]:
    """``hashCode()`` of the Java object a value of ``spec`` becomes, modulo 2**32."""
    if isinstance(spec, str):
        return _JAVA_HASH_BY_TYPE[spec]
    kind, field_specs = spec
    if kind == "Tuple":
        # Flink's TupleN.hashCode: 31 * h + hashCode of each field, from 0, null as 0.
        codes = [_hash_code_of(f) for f in field_specs]

        def tuple_hash(value: Sequence[Any]) -> int:
            h = 0
            for code, field in zip(codes, value, strict=False):
                h = (31 * h + (0 if field is None else code(field))) & _M32
            return h

        return tuple_hash
    # Row.hashCode: 31 * kind + RowUtils.deepHashCode(fields), which starts from 1 and
    # takes each field (no array, list or map here) as Arrays.deepHashCode of a one-element
    # array: 31 + its hashCode, 0 for null.
    codes = [_hash_code_of(f) for f in field_specs]

    def row_hash(value: Sequence[Any]) -> int:
        h = 1
        for code, field in zip(codes, value, strict=False):
            h = (31 * h + (0 if field is None else 31 + code(field))) & _M32
        return (31 * _row_kind(value) + h) & _M32

    return row_hash


def java_hash_code(type_name: str) -> Callable[[Any], int] | None:
    """``hashCode()`` of the Java object a value of a basic type (``"String"``,
    ``"Integer"``, ...) or a TUPLE or ROW type of them (``"Tuple<String, Integer>"``)
    becomes in PyFlink; None for other types."""
    if type_name == "pickled":
        return None
    basic = _JAVA_HASH_BY_TYPE.get(type_name)
    if basic is not None:
        return basic
    spec = composite_key_type(type_name)
    if spec is None:
        return None
    code = _hash_code_of(spec)
    return lambda value: _signed32(code(value))


def normalized_key_type(key_type: str) -> str:
    """The name keys of ``key_type`` are placed by: a basic type's or a composite's
    (spelt one way), else ``"pickled"``."""
    if key_type in _JAVA_HASH_BY_TYPE:
        return key_type
    spec = composite_key_type(key_type)
    return "pickled" if spec is None else _spec_name(spec)


def legacy_key_placement(key_type: str) -> str:
    """How Weir placed keys of ``key_type`` before it hashed TUPLE and ROW keys as Java
    does: by their pickled bytes (and a basic type as now). State written then, which
    records no placement, was placed so."""
    normalized = normalized_key_type(key_type)
    return normalized if normalized in _JAVA_HASH_BY_TYPE else "pickled"


class PyFlinkKeyHasher:
    """``key -> key group`` exactly as PyFlink assigns it, for a key type name
    (``"pickled"`` when ``key_by`` had no ``key_type``; a basic, TUPLE or ROW type's name
    otherwise, see the module docstring). Other key types fall back to the pickled form.

    ``key_type`` is the normalised name, which is what a snapshot records as the placement
    of its keys."""

    def __init__(self, key_type: str = "pickled") -> None:
        self.key_type = normalized_key_type(key_type)
        basic = _JAVA_HASH_BY_TYPE.get(self.key_type)
        if basic is None:
            spec = composite_key_type(self.key_type)
            assert spec is not None  # normalized_key_type made it a composite
            basic = _hash_code_of(spec)
        self._java_hash = basic

    def key_group(self, key: Any, max_parallelism: int) -> int:
        code = _NULL_KEY if key is None else self._java_hash(key)
        return murmur_hash(_signed32(code + _ROW_OF_ONE_FIELD)) % max_parallelism

    def key_group_of_canonical(self, key: Any, canonical: bytes, max_parallelism: int) -> int:
        """``key_group(key)`` when ``canonical`` is ``canonical_key_bytes(key)`` already
        (the rocksdb backend has them as the key's serialized form): no second pickle."""
        if self.key_type != "pickled" or key is None:
            return self.key_group(key, max_parallelism)
        code = java_bytes_hash(canonical)
        return murmur_hash(_signed32(code + _ROW_OF_ONE_FIELD)) % max_parallelism

    def __reduce__(self) -> tuple[Any, ...]:
        return (PyFlinkKeyHasher, (self.key_type,))
