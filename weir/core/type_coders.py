"""What PyFlink's coders make of a record of a declared type: a TypeCoder writes and reads
it back in one step, and refuses what PyFlink's serializer refuses.

PyFlink serialises a record with its declared type only where it leaves a chain of Python
functions that run together (``weir.graph.coded_outputs`` says where); the next function
sees what the type's coder read back, and a value the coder cannot write fails the job. The
coders here follow PyFlink 2.3's (``pyflink/fn_execution/coder_impl_fast.pyx``):

* BYTE, SHORT, INT, LONG, BIG_INT: an int in the type's range; a bool, or anything else
  with ``__int__`` (a float, a Decimal), becomes the int it converts to (``1.7`` is ``1``).
  Anything else (a str, None) is refused, and so is an int out of range.
* BOOLEAN: a bool; an int from 0 to 255 (or anything with ``__int__``) becomes ``!= 0``.
* FLOAT: rounded to 32 bits; DOUBLE: a float (an int becomes one). A value that is no
  real number is refused.
* STRING, CHAR: a str. Bytes (PRIMITIVE_ARRAY or LIST of BYTE): bytes or a bytearray.
* TUPLE: a tuple (a list is refused) with at least the type's fields, each coded by its
  type; further fields are dropped, as PyFlink's coder drops them. A tuple with fewer
  fields is refused (PyFlink reads past its end).
* ROW: a Row. Its values are taken by the type's field names (a positional Row, or one
  named alike, by position; a Row missing one of the names is refused), a None field stays
  None, and a new Row comes back, named by the type, of the same kind.
* LIST, PRIMITIVE_ARRAY: a list whose elements are coded and may not be None;
  BASIC_ARRAY, OBJECT_ARRAY: the same, with None elements kept.
* MAP: a dict whose keys are coded (None is refused) and values coded (None kept); it comes
  back in the order of the Java ``HashMap`` it travels through (``weir.core.java_hash_map``).
* Anything else (dates and times, decimals, pickled objects) passes as it is.

A None record is refused by every type but STRING. ``code_batch`` handles a batch at once, and
checks a batch of basic values, or of tuples of them, column by column at C speed (``set``,
``array``), returning the same list when nothing changes.

The coders are built on the client (``weir.common.typed_values.type_coder``) and unpickled
on TaskManagers, whose threads unpickle payloads concurrently: this module imports nothing
of the user API (a Row is recognised by ``get_fields_by_names``, not by its class).
"""

from __future__ import annotations

import reprlib
from array import array
from collections.abc import Callable, Sequence
from itertools import repeat
from operator import attrgetter, is_, itemgetter, methodcaller
from typing import Any

from weir.core.errors import DeclaredTypeError
from weir.core.java_hash_map import hash_map_order, table_size_for
from weir.core.key_groups import java_hash_code

__all__ = [
    "BooleanCoder",
    "BytesCoder",
    "DeclaredTypeCoder",
    "DoubleCoder",
    "FloatCoder",
    "IntegerCoder",
    "ListCoder",
    "MapCoder",
    "PassCoder",
    "RowCoder",
    "StringCoder",
    "TupleCoder",
    "TypeCoder",
]

_short = reprlib.Repr()
_short.maxstring = 60
_short.maxother = 60
_short.maxlist = _short.maxtuple = _short.maxdict = _short.maxset = 6


class _Refused(Exception):
    """A part of a record the declared type cannot take; ``path`` grows as it unwinds
    through the composites that hold it."""

    def __init__(self, value: Any, expected: str) -> None:
        super().__init__(expected)
        self.value = value
        self.expected = expected
        self.path: list[str] = []


def _refuse(value: Any, expected: str) -> _Refused:
    return _Refused(value, expected)


def _is_row(value: Any) -> bool:
    return hasattr(type(value), "get_fields_by_names")


def _converts_to_int(value: Any) -> bool:
    """Cython's conversion to a C integer takes what has ``__int__`` (not str or bytes)."""
    return hasattr(type(value), "__int__")


class TypeCoder:
    """One declared type's coder: ``code(value)`` is the value PyFlink's next function
    would see, ``code_batch(batch)`` the same for a batch (the same list when nothing
    changes). Both raise ``_Refused`` for what PyFlink's serializer refuses."""

    __slots__ = ()

    def code(self, value: Any) -> Any:
        raise NotImplementedError

    def code_batch(self, batch: Sequence[Any]) -> Sequence[Any]:
        code = self.code
        coded = [code(v) for v in batch]
        return batch if all(a is b for a, b in zip(coded, batch, strict=True)) else coded

    @property
    def passes_everything(self) -> bool:
        return False


class PassCoder(TypeCoder):
    """A type whose values are not checked here (dates, times, decimals, pickled)."""

    __slots__ = ()

    def code(self, value: Any) -> Any:
        return value

    def code_batch(self, batch: Sequence[Any]) -> Sequence[Any]:
        return batch

    @property
    def passes_everything(self) -> bool:
        return True


_ARRAY_CODES = {8: "b", 16: "h", 32: "i", 64: "q"}


class IntegerCoder(TypeCoder):
    __slots__ = ("_bits", "_expected", "_high", "_low", "_typecode")

    def __init__(self, bits: int) -> None:
        self._bits = bits
        self._low = -(1 << (bits - 1))
        self._high = (1 << (bits - 1)) - 1
        self._typecode = _ARRAY_CODES[bits]
        self._expected = f"an int in [{self._low}, {self._high}]"

    def __reduce__(self) -> tuple[Any, ...]:
        return (IntegerCoder, (self._bits,))

    def code(self, value: Any) -> Any:
        if type(value) is not int:
            if value is None or not _converts_to_int(value):
                raise _refuse(value, self._expected)
            value = int(value)
        if not self._low <= value <= self._high:
            raise _refuse(value, self._expected)
        return value

    def code_batch(self, batch: Sequence[Any]) -> Sequence[Any]:
        try:
            array(self._typecode, batch)  # ints in range, or refused at C speed
        except (TypeError, OverflowError):
            return TypeCoder.code_batch(self, batch)
        if set(map(type, batch)) == {int}:
            return batch
        return [int(v) for v in batch]  # bools (and other ints, e.g. numpy's) as ints


class BooleanCoder(TypeCoder):
    __slots__ = ()

    def code(self, value: Any) -> Any:
        if type(value) is bool:
            return value
        if value is None or not _converts_to_int(value):
            raise _refuse(value, "a bool")
        byte = int(value)
        if not 0 <= byte <= 255:
            raise _refuse(value, "a bool")
        return byte != 0

    def code_batch(self, batch: Sequence[Any]) -> Sequence[Any]:
        if set(map(type, batch)) == {bool}:
            return batch
        return TypeCoder.code_batch(self, batch)


class FloatCoder(TypeCoder):
    """FLOAT: 32 bits wide once written; a batch is one ``array('f')`` round trip."""

    __slots__ = ()

    def code(self, value: Any) -> Any:
        try:
            return array("f", (value,))[0]
        except OverflowError:  # beyond a float's range: infinity, as a C cast gives
            return float("inf") if value > 0 else float("-inf")
        except TypeError:
            raise _refuse(value, "a real number") from None

    def code_batch(self, batch: Sequence[Any]) -> Sequence[Any]:
        try:
            return array("f", batch).tolist()
        except (TypeError, OverflowError):
            return [self.code(v) for v in batch]


class DoubleCoder(TypeCoder):
    __slots__ = ()

    def code(self, value: Any) -> Any:
        if type(value) is float:
            return value
        try:
            return array("d", (value,))[0]
        except TypeError:
            raise _refuse(value, "a real number") from None

    def code_batch(self, batch: Sequence[Any]) -> Sequence[Any]:
        if set(map(type, batch)) == {float}:
            return batch
        try:
            return array("d", batch).tolist()
        except TypeError:
            return [self.code(v) for v in batch]


class StringCoder(TypeCoder):
    __slots__ = ()

    def code(self, value: Any) -> Any:
        if isinstance(value, str):
            return value[:]  # a str subclass comes back a plain str
        raise _refuse(value, "a str")

    def code_batch(self, batch: Sequence[Any]) -> Sequence[Any]:
        if set(map(type, batch)) == {str}:
            return batch
        return TypeCoder.code_batch(self, batch)


class BytesCoder(TypeCoder):
    __slots__ = ()

    def code(self, value: Any) -> Any:
        if type(value) is bytes:
            return value
        if isinstance(value, bytes | bytearray):
            return bytes(value)
        raise _refuse(value, "bytes")

    def code_batch(self, batch: Sequence[Any]) -> Sequence[Any]:
        if set(map(type, batch)) == {bytes}:
            return batch
        return TypeCoder.code_batch(self, batch)


def _count(n: int, what: str) -> str:
    return f"{n} {what}" if n == 1 else f"{n} {what}s"


class TupleCoder(TypeCoder):
    __slots__ = ("_arity", "_expected", "_fields", "_scalar")

    def __init__(self, fields: list[TypeCoder]) -> None:
        self._fields = list(fields)
        self._arity = len(fields)
        self._expected = f"a tuple of {_count(self._arity, 'field')}"
        # Fields of basic types: a batch of tuples is checked column by column.
        self._scalar = not any(isinstance(f, _COMPOSITES) for f in fields)

    def __reduce__(self) -> tuple[Any, ...]:
        return (TupleCoder, (self._fields,))

    def code(self, value: Any) -> Any:
        if type(value) is not tuple or len(value) < self._arity:
            raise _refuse(value, self._expected)
        coded: list[Any] = []
        for i, (field, v) in enumerate(zip(self._fields, value, strict=False)):
            try:
                coded.append(field.code(v))
            except _Refused as refused:
                refused.path.append(f"field {i}")
                raise
        return tuple(coded)

    def code_batch(self, batch: Sequence[Any]) -> Sequence[Any]:
        if (
            not self._scalar
            or not batch
            or set(map(type, batch)) != {tuple}
            or set(map(len, batch)) != {self._arity}
        ):
            return TypeCoder.code_batch(self, batch)
        columns = list(zip(*batch, strict=True))
        coded: list[Any] = []
        for field, column in zip(self._fields, columns, strict=True):
            try:
                coded.append(field.code_batch(column))
            except _Refused:
                return [self.code(v) for v in batch]  # find the record, name its field
        if all(a is b for a, b in zip(coded, columns, strict=True)):
            return batch
        return list(zip(*coded, strict=True))


class RowCoder(TypeCoder):
    __slots__ = ("_arity", "_expected", "_fields", "_names")

    def __init__(self, names: list[str], fields: list[TypeCoder]) -> None:
        self._names = list(names)
        self._fields = list(fields)
        self._arity = len(fields)
        self._expected = f"a Row of {_count(self._arity, 'field')}"

    def __reduce__(self) -> tuple[Any, ...]:
        return (RowCoder, (self._names, self._fields))

    def code(self, value: Any) -> Any:
        if not _is_row(value):
            raise _refuse(value, self._expected)
        names = self._names
        try:
            values = value.get_fields_by_names(names)
        except Exception:
            raise _refuse(value, f"a Row with the fields {names}") from None
        if len(values) < self._arity:
            raise _refuse(value, self._expected)
        try:
            coded = [
                None if v is None else f.code(v) for f, v in zip(self._fields, values, strict=False)
            ]
        except _Refused:
            self._name_refused_field(values)
            raise
        if (
            len(values) == self._arity
            and all(map(is_, coded, values))
            and value.__dict__.get("_fields") == names
        ):
            return value  # named as the type, nothing made otherwise: read back the same
        # A new Row (the one the function made may still be read as made elsewhere),
        # named by the type, of the same kind.
        return value._coded_copy(coded, names)

    def _name_refused_field(self, values: Sequence[Any]) -> None:
        for name, field, v in zip(self._names, self._fields, values, strict=False):
            if v is None:
                continue
            try:
                field.code(v)
            except _Refused as refused:
                refused.path.append(f"field {name!r}")
                raise

    def code_batch(self, batch: Sequence[Any]) -> Sequence[Any]:
        coded = self._code_columns(batch)
        if coded is not None:
            return coded
        code = self.code
        return [code(v) for v in batch]

    def _code_columns(self, batch: Sequence[Any]) -> Sequence[Any] | None:
        """A batch of Rows of one class, each positional or named as the type, with as many
        values as the type has fields, coded column by column at C speed (the same batch
        when nothing changes); None for any other batch, or one with a value the type
        refuses (``code`` finds and names it)."""
        if not batch or len(set(map(type, batch))) != 1 or not _is_row(batch[0]):
            return None
        names, arity = self._names, self._arity
        try:
            states = list(map(_state, batch))
            fields = list(map(_field_names, states))
            values = list(map(_values, states))
        except (AttributeError, KeyError, TypeError):
            return None
        positional = fields.count(None)
        if positional + fields.count(names) != len(batch) or set(map(len, values)) != {arity}:
            return None
        columns = list(zip(*values, strict=True))
        coded: list[Any] = []
        for field, column in zip(self._fields, columns, strict=True):
            try:
                if any(map(is_, column, repeat(None))):
                    code = field.code
                    made = [None if v is None else code(v) for v in column]
                    coded.append(column if all(map(is_, made, column)) else made)
                else:
                    coded.append(field.code_batch(column))
            except _Refused:
                return None
        if not positional and all(map(is_, coded, columns)):
            return batch
        return [
            row._coded_copy(list(row_values), names)
            for row, row_values in zip(batch, zip(*coded, strict=True), strict=True)
        ]


_state = attrgetter("__dict__")
_field_names = methodcaller("get", "_fields")
_values = itemgetter("_values")


class ListCoder(TypeCoder):
    __slots__ = ("_element", "_expected", "_nullable")

    def __init__(self, element: TypeCoder, nullable: bool) -> None:
        self._element = element
        self._nullable = nullable
        self._expected = "a list"

    def __reduce__(self) -> tuple[Any, ...]:
        return (ListCoder, (self._element, self._nullable))

    def code(self, value: Any) -> Any:
        if type(value) is not list:
            raise _refuse(value, self._expected)
        element = self._element
        if not _holds_none(value):
            try:
                coded = element.code_batch(value)
            except _Refused:
                pass  # found again below, with its index
            else:
                return value if coded is value else list(coded)
        out: list[Any] = []
        for i, v in enumerate(value):
            if v is None and self._nullable:
                out.append(None)
                continue
            try:
                out.append(element.code(v))
            except _Refused as refused:
                refused.path.append(f"element {i}")
                raise
        return out


def _holds_none(values: list[Any]) -> bool:
    try:
        return None in values
    except Exception:
        return True


class MapCoder(TypeCoder):
    """A map comes back in the order of the ``new HashMap<>(size)`` it is read into in
    Java, for keys of the basic types (others keep their order)."""

    __slots__ = ("_hash_code", "_key", "_key_type", "_value")

    def __init__(self, key: TypeCoder, value: TypeCoder, key_type: str) -> None:
        self._key = key
        self._value = value
        self._key_type = key_type
        self._hash_code = java_hash_code(key_type)

    def __reduce__(self) -> tuple[Any, ...]:
        return (MapCoder, (self._key, self._value, self._key_type))

    def code(self, value: Any) -> Any:
        if not isinstance(value, dict):
            raise _refuse(value, "a dict")
        key_coder, value_coder = self._key, self._value
        coded: dict[Any, Any] = {}
        for k, v in value.items():
            try:
                if k is None and not key_coder.passes_everything:
                    raise _refuse(k, "a key that is not None")
                key = key_coder.code(k)
            except _Refused as refused:
                refused.path.append(f"key {_short.repr(k)}")
                raise
            try:
                coded[key] = None if v is None else value_coder.code(v)
            except _Refused as refused:
                refused.path.append(f"the value of key {_short.repr(k)}")
                raise
        hash_code = self._hash_code
        if hash_code is None or len(coded) < 2:
            return coded
        try:
            keys = hash_map_order(list(coded), hash_code, table_size_for(len(coded)))
        except (TypeError, ValueError, OverflowError):  # keys no Java type hashes alike
            return coded
        return {k: coded[k] for k in keys}


_COMPOSITES = (TupleCoder, RowCoder, ListCoder, MapCoder)


class DeclaredTypeCoder:
    """The coder of one output: ``code_batch(batch, operator)`` gives the records as the
    next function sees them, or raises ``DeclaredTypeError`` naming the operator, the
    declared type and the record.

    ``strict=False`` (a source's output, which PyFlink converts in Java, not with its
    Python coders) makes what fits and leaves a record that does not fit as it is."""

    __slots__ = ("_root", "declared", "strict", "what")

    def __init__(
        self, root: TypeCoder, declared: str, *, strict: bool = True, what: str = "output"
    ) -> None:
        self._root = root
        self.declared = declared
        """The type as the program declared it, ``Types.LONG()``."""
        self.strict = strict
        self.what = what
        """Which output: ``output``, or ``side output 'tag'``."""

    def __reduce__(self) -> tuple[Any, ...]:
        return (_make_declared, (self._root, self.declared, self.strict, self.what))

    def code_batch(self, batch: list[Any], operator: str) -> list[Any]:
        try:
            coded = self._root.code_batch(batch)
        except _Refused:
            coded = [self._code_one(v, operator) for v in batch]
        return coded if type(coded) is list else list(coded)

    def code(self, record: Any, operator: str) -> Any:
        """One record as ``code_batch`` gives it (a key, which comes alone)."""
        return self._code_one(record, operator)

    def _code_one(self, record: Any, operator: str) -> Any:
        if record is None and isinstance(self._root, StringCoder):
            # PyFlink writes a record as a nullable field, and Java's String serializer
            # takes null; its number, tuple, list and map serializers do not.
            return None
        try:
            return self._root.code(record)
        except _Refused as refused:
            if not self.strict:
                return record
            raise self._error(record, refused, operator) from None

    def batch_function(self, operator: str) -> Callable[[list[Any]], list[Any]]:
        """``code_batch`` for one operator's records."""
        return lambda batch: self.code_batch(batch, operator)

    def _error(self, record: Any, refused: _Refused, operator: str) -> DeclaredTypeError:
        where = " of ".join(refused.path)  # innermost first: "element 2 of field 'a'"
        part = f"{where} of the record" if where else "the record"
        got = f"{_short.repr(refused.value)} ({type(refused.value).__name__})"
        msg = (
            f"operator {operator!r} emitted {_short.repr(record)} to its {self.what}, "
            f"declared {self.declared}, but {part} is {got} where the type takes "
            f"{refused.expected}; PyFlink's serializer refuses it too. Return values of the "
            f"declared type, or declare the type the function returns (output_type=...)."
        )
        return DeclaredTypeError(msg)


def _make_declared(root: TypeCoder, declared: str, strict: bool, what: str) -> DeclaredTypeCoder:
    return DeclaredTypeCoder(root, declared, strict=strict, what=what)
