"""What counts as the same key, and the bytes a key without a declared type is placed by.

**The rule.** Two keys are the same key when they are equal in Python (``==``), as they
are for a dict: the keyed state backend keeps its state in dicts keyed by the key, so
equal keys share their state, and they must reach the same subtask for that to hold.
So ``1``, ``1.0``, ``True``, ``Decimal("1")`` and ``Fraction(1)`` are one key; ``("a",
1)`` built from a literal and the same tuple unpickled or joined together are one key;
a NamedTuple is the same key as the plain tuple of its fields, a ``str`` subclass (a
``StrEnum``) as the plain string; a dict or a frozenset is the same key whatever the
order it was built in; aware datetimes are the same key when they are the same instant.
NaN is the one exception to ``==``: every float NaN is the same key, as Java's
``Double.equals`` and its serializer hold them (``doubleToLongBits`` writes one NaN) and
as PyFlink's pickled keys do for the NaN Python makes. Its canonical form is that one NaN,
and ``state_key`` gives the dicts of the hashmap backend and of the operators one NaN
object to find.
Objects of other classes are the same key when they are of the same class and their
pickled state (``__reduce_ex__``) holds equal values: true of dataclasses, Rows and
most value classes; a class whose ``__eq__`` says more (case-insensitive names, say)
must be turned into a plain value in the key selector.

**Placement.** PyFlink places such a key by a hash of its pickled bytes. Those depend on
more than the value: pickle writes an object it already wrote as a back-reference, so a
tuple holding one string twice pickles differently from a tuple of two equal strings, and
``1`` and ``1.0`` pickle differently. Here the key is first put in a canonical form whose
pickle depends on the value only, and that is hashed: numbers as the int they equal when
they equal one (else the float, else an exact fraction), strings and bytes never shared,
tuples and lists rebuilt from canonical elements, Rows reduced to their canonical fields,
dicts and sets in a fixed order, anything else by its class name and canonical state.

For the keys PyFlink programs use (int, str, bytes, None, floats that are not whole
numbers, and tuples, lists and Rows of those) the canonical form pickles to exactly
PyFlink's bytes, so they land where PyFlink puts them (``tests/compat`` checks it).
Keys whose equal values PyFlink would split land with the int or the unshared form:
``True`` where ``1`` goes, ``2.0`` where ``2`` goes.
"""

from __future__ import annotations

import copyreg
import datetime
import numbers
import pickle
from decimal import Decimal
from fractions import Fraction
from typing import Any

import cloudpickle

# Canonical forms of values pickle has no single form for start with one of these.
_DICT = "weir:dict"
_SET = "weir:set"
_FRACTION = "weir:fraction"
_COMPLEX = "weir:complex"
_INSTANT = "weir:instant"
_TIME = "weir:time"
_OBJECT = "weir:object"
_GLOBAL = "weir:global"
# Deeper than this is a structure no key selector builds on purpose (or a cycle): it is
# placed by its plain pickled bytes.
_MAX_DEPTH = 64
_NEWOBJ = (copyreg.__newobj__, copyreg.__newobj_ex__)  # type: ignore[attr-defined]
# CPython keeps one object for each of these values (chr() and bytes([i]) return it).
_ONE_CHARACTER = [chr(i) for i in range(256)]
_ONE_BYTE = [bytes([i]) for i in range(256)]
# Every NaN key is this one. Its bits are CPython's NaN's, 0x7ff8000000000000: the NaN
# Java's doubleToLongBits gives for any NaN, and the bytes PyFlink's pickled keys have for
# float("nan"), so such a key is placed where PyFlink places it.
_NAN = float("nan")


def canonical_key_bytes(key: Any) -> bytes:
    """The bytes a key without a declared type is hashed by; equal keys give equal bytes.
    The common key types (int, str, bytes, flat tuples of them) take a type check or
    two more than pickling them directly: this runs for every record a route cache misses."""
    t = type(key)
    if t is int or t is str or t is bytes:
        return pickle.dumps(key, protocol=5)
    if (t is float and _plain_float(key)) or (t is tuple and _canonical_tuple(key)):
        return pickle.dumps(key, protocol=5)
    try:
        canonical = _Canonicaliser().canonical(key, 0)
    except _NoCanonicalForm:
        return _plain_pickle(key)
    return _plain_pickle(canonical)


def is_canonical(key: Any) -> bool:
    """``canonical_key_bytes(key)`` is the plain pickle of ``key`` and unpickles to a key
    of the same type: true of ints, strings, bytes, None, floats that are not whole
    numbers and flat tuples of them (a serialized key needs no copy of the original)."""
    t = type(key)
    if t is int or t is str or t is bytes or key is None:
        return True
    return (t is float and _plain_float(key)) or (t is tuple and _canonical_tuple(key))


def state_key(key: Any) -> Any:
    """``key`` as the dicts keyed by key hold it (the hashmap backend's state, the
    operators' per-key tables): ``key`` itself, unless a float NaN is in it, alone or in
    a tuple (a NamedTuple too). Then every NaN in it is replaced by one NaN object: NaN
    is unequal even to itself, and a dict finds it only by identity, so a key holding
    NaN would be a new key for every record (its state growing without bound) while
    ``canonical_key_bytes`` makes all NaNs one key. A NaN inside other objects (a Row,
    a dataclass, a set) is left as it is; such a key is the same key as its class's
    ``==`` says on the heap."""
    t = type(key)
    if t is str or t is int or t is bytes or key is None:
        return key
    if t is float:
        return key if key == key else _NAN  # noqa: PLR0124 (NaN)
    return _one_nan(key, 0)


def _one_nan(value: Any, depth: int) -> Any:
    """``value`` with each float NaN in it (through tuples) the one NaN object; the same
    object when it holds none."""
    if isinstance(value, float):
        return value if value == value else _NAN  # noqa: PLR0124 (NaN)
    if not isinstance(value, tuple) or depth > _MAX_DEPTH:
        return value
    items = [_one_nan(v, depth + 1) for v in value]
    if all(a is b for a, b in zip(items, value, strict=True)):
        return value
    if type(value) is tuple:
        return tuple(items)
    make = getattr(type(value), "_make", None)  # a NamedTuple
    return value if make is None else make(items)


def _plain_float(value: float) -> bool:
    """A float whose canonical form is the float itself: not a whole number (that is
    the int it equals), not NaN (that is the one NaN)."""
    return not value.is_integer() and value == value  # noqa: PLR0124 (NaN)


def _canonical_tuple(key: tuple[Any, ...]) -> bool:
    """A flat tuple already in canonical form: ints, strings, bytes, None and floats that
    are not whole numbers, no string or bytes value in it twice (pickle would write an
    object it saw before as a reference: whether it does depends on identity). Pairs,
    the usual composite key, are checked without a loop."""
    if len(key) == 2:
        a, b = key
        ta, tb = type(a), type(b)
        return (
            (ta is int or ta is str or ta is bytes or a is None)
            and (tb is int or tb is str or tb is bytes or b is None)
            and (ta is int or a is None or a != b)
        )
    seen: set[str | bytes] | None = None
    for value in key:
        t = type(value)
        if t is str or t is bytes:
            if seen is None:
                seen = {value}
            elif value in seen:
                return False
            else:
                seen.add(value)
        elif not (t is int or value is None or (t is float and _plain_float(value))):
            return False
    return True


def _plain_pickle(value: Any) -> bytes:
    try:
        return pickle.dumps(value, protocol=5)
    except (pickle.PicklingError, TypeError, AttributeError):
        return cloudpickle.dumps(value, protocol=5)


class _NoCanonicalForm(Exception):
    """Too deep (or cyclic) to canonicalise: the key is placed by its plain pickle."""


class _Reduced:
    """Pickles as ``__reduce__`` says, with canonical arguments: what a Row becomes, so
    that a Row of canonical fields pickles exactly as itself."""

    __slots__ = ("_reduction",)

    def __init__(self, reduction: tuple[Any, ...]) -> None:
        self._reduction = reduction

    def __reduce__(self) -> tuple[Any, ...]:
        return self._reduction


class _Canonicaliser:
    """One walk over one key. Strings and bytes seen once are kept; one seen again (the
    same object twice) is copied, so no string is shared and pickle writes each in full,
    as it does for equal strings built apart."""

    def __init__(self) -> None:
        self._seen: set[int] = set()

    def canonical(self, value: Any, depth: int) -> Any:
        if depth > _MAX_DEPTH:
            raise _NoCanonicalForm
        t = type(value)
        if t is int or value is None:
            return value
        if t is str or t is bytes:
            return self._unshared(value)
        if t is float:
            return _canonical_float(value)
        if t is tuple or t is list:
            elements = [self.canonical(v, depth + 1) for v in value]
            return tuple(elements) if t is tuple else elements
        if isinstance(value, numbers.Number | Decimal):
            return self._number(value, depth)
        if isinstance(value, str):  # a StrEnum equals its value
            return self._unshared(str.__str__(value))
        if isinstance(value, bytes | bytearray):
            return self._unshared(bytes(value))
        if isinstance(value, tuple):  # a NamedTuple equals the tuple of its fields
            return tuple(self.canonical(v, depth + 1) for v in value)
        if isinstance(value, list):
            return [self.canonical(v, depth + 1) for v in value]
        if isinstance(value, dict):
            items = [
                (self.canonical(k, depth + 1), self.canonical(v, depth + 1))
                for k, v in value.items()
            ]
            items.sort(key=lambda item: _plain_pickle(item[0]))
            return (_DICT, tuple(items))
        if isinstance(value, set | frozenset):
            elements = [self.canonical(v, depth + 1) for v in value]
            elements.sort(key=_plain_pickle)
            return (_SET, tuple(elements))
        if isinstance(value, datetime.datetime | datetime.time):
            return self._datetime(value)
        if isinstance(value, type) or (callable(value) and hasattr(value, "__qualname__")):
            return (_GLOBAL, self._name(value))
        return self._reduced(value, depth)

    def _name(self, obj: Any) -> tuple[Any, Any]:
        """Where a class or function is defined, as fresh strings: the same name may be
        one shared object in one process and two in another."""
        module = getattr(obj, "__module__", None)
        qualname = getattr(obj, "__qualname__", None)
        return (
            self._unshared(module) if isinstance(module, str) else None,
            self._unshared(qualname) if isinstance(qualname, str) else None,
        )

    def _unshared(self, value: str | bytes) -> str | bytes:
        """The object pickle sees for a string or bytes: CPython's own single object for
        the empty and one-character ones (which any program gets for them, so pickle
        refers back to it wherever it repeats), else one seen for the first time, else a
        new copy."""
        if not value:
            return "" if isinstance(value, str) else b""
        if len(value) == 1:
            if isinstance(value, bytes):
                return _ONE_BYTE[value[0]]
            if ord(value) < 256:
                return _ONE_CHARACTER[ord(value)]
        if id(value) not in self._seen:
            self._seen.add(id(value))
            return value
        if isinstance(value, str):
            return value.encode("utf-8", "surrogatepass").decode("utf-8", "surrogatepass")
        return bytes(bytearray(value))

    def _number(self, value: Any, depth: int) -> Any:
        if isinstance(value, numbers.Integral):
            return int(value)  # bool, IntEnum, numpy integers
        if isinstance(value, float):
            return _canonical_float(float(value))
        if isinstance(value, Decimal):
            if value.is_nan():
                return self._reduced(value, depth)  # equal to nothing, not even itself
            if value.is_infinite():
                return float(value)
            return _canonical_fraction(Fraction(value))
        if isinstance(value, numbers.Rational):
            return _canonical_fraction(Fraction(int(value.numerator), int(value.denominator)))
        if isinstance(value, numbers.Real):
            as_float = float(value)
            return _canonical_float(as_float) if as_float == value else self._reduced(value, depth)
        if isinstance(value, complex):
            if value.imag == 0:
                return _canonical_float(value.real)
            # -0.0 == 0.0; a NaN part is the one NaN
            return (_COMPLEX, _canonical_part(value.real), _canonical_part(value.imag))
        return self._reduced(value, depth)

    @staticmethod
    def _datetime(value: datetime.datetime | datetime.time) -> Any:
        offset = value.utcoffset()
        if isinstance(value, datetime.datetime):
            if offset is None:  # naive: fold does not take part in ==
                return value.replace(fold=0)
            return (_INSTANT, (value - offset).replace(tzinfo=None, fold=0))
        if offset is None:
            return value.replace(fold=0)
        micros = (
            (value.hour * 60 + value.minute) * 60 + value.second
        ) * 1_000_000 + value.microsecond
        return (_TIME, micros - offset // datetime.timedelta(microseconds=1))

    def _reduced(self, value: Any, depth: int) -> Any:
        try:
            reduction = value.__reduce_ex__(5)
        except Exception as exc:  # pickling raises what __reduce__ raises
            raise _NoCanonicalForm from exc
        if isinstance(reduction, str):  # a module-level singleton, pickled by name
            return (_GLOBAL, self._name(value)[0], self._unshared(reduction))
        function, args, *rest = reduction
        state, list_items, dict_items = (*rest, None, None, None)[:3]
        state = self.canonical(state, depth + 1)
        list_items = None if list_items is None else self.canonical(list(list_items), depth + 1)
        dict_items = None if dict_items is None else self.canonical(dict(dict_items), depth + 1)
        if function in _NEWOBJ:  # an instance of a class: by its name, not the class
            cls, *cls_args = args
            arguments = self.canonical(tuple(cls_args), depth + 1)
            return (_OBJECT, self._name(cls), arguments, state, list_items, dict_items)
        # Rows, enum members: pickled through their reduction, byte for byte as they are
        # pickled themselves when their arguments were canonical already.
        arguments = self.canonical(args, depth + 1)
        canonical = (function, arguments, state, list_items, dict_items)
        return _Reduced(canonical[: len(reduction)])


def _canonical_float(value: float) -> int | float:
    if value != value:  # noqa: PLR0124 (NaN)
        return _NAN
    return int(value) if value.is_integer() else value  # -0.0 == 0 too; inf stays


def _canonical_part(value: float) -> float:
    return _NAN if value != value else value + 0.0  # noqa: PLR0124 (NaN)


def _canonical_fraction(value: Fraction) -> Any:
    if value.denominator == 1:
        return int(value.numerator)
    try:
        as_float = float(value)
    except OverflowError:
        return (_FRACTION, value.numerator, value.denominator)
    if Fraction(as_float) == value:
        return as_float
    return (_FRACTION, value.numerator, value.denominator)
