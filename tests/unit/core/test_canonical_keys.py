"""Equal keys land in one key group however they were built, and the keys PyFlink programs
use keep PyFlink's placement (their canonical form pickles to PyFlink's own bytes)."""

from __future__ import annotations

import contextlib
import datetime
import enum
import math
import pickle
import struct
from collections import namedtuple
from dataclasses import dataclass
from decimal import Decimal
from fractions import Fraction
from typing import Any

from hypothesis import assume, given
from hypothesis import strategies as st

from weir.common.types import Row
from weir.core.canonical_keys import canonical_key_bytes, is_canonical, state_key
from weir.core.key_groups import assign_to_key_group

MAX_PARALLELISM = 32768  # the most key groups: the finest test of "same group"


class Word(str):
    """A str subclass (as a StrEnum member is): equal to the plain string."""


class Level(enum.IntEnum):
    LOW = 1
    HIGH = 2


@dataclass(frozen=True)
class Bid:
    auction: Any
    bidder: Any


_PAIRS = namedtuple("_PAIRS", "a b")


def _copy_str(text: str) -> str:
    """An equal string that is another object (bar the ones CPython keeps one of)."""
    return text.encode("utf-8", "surrogatepass").decode("utf-8", "surrogatepass")


def _unshared(value: Any) -> Any:
    """``value`` as a program builds it: no string appears twice as one object, bar the
    empty and one-character ones, of which CPython keeps a single object each."""
    if type(value) is str:
        return _copy_str(value) if len(value) > 1 else value and chr(ord(value))
    if type(value) is bytes:
        return bytes(bytearray(value)) if len(value) > 1 else value and bytes([value[0]])
    if type(value) is tuple:
        return tuple(_unshared(v) for v in value)
    if type(value) is list:
        return [_unshared(v) for v in value]
    return value


# --- the keys PyFlink programs use keep PyFlink's bytes ----------------------------------

_stable_atoms = st.one_of(
    st.integers(),
    st.text(),
    st.binary(),
    st.none(),
    st.floats(allow_nan=False).filter(lambda f: not f.is_integer()),
)
_stable = st.recursive(
    _stable_atoms,
    lambda children: st.one_of(
        st.lists(children, max_size=4).map(tuple), st.lists(children, max_size=4)
    ),
    max_leaves=12,
)


@given(_stable)
def test_common_keys_are_pickled_as_pyflink_pickles_them(key):
    key = _unshared(key)
    assert canonical_key_bytes(key) == pickle.dumps(key, protocol=5)


@given(st.lists(_stable, max_size=4))
def test_rows_of_common_keys_are_pickled_as_they_pickle(fields):
    row = Row(*_unshared(fields))
    assert canonical_key_bytes(row) == pickle.dumps(row, protocol=5)


# --- equal keys, built in different ways, share a key group -------------------------------

_numbers = st.one_of(
    st.integers(),
    st.floats(allow_nan=False),
    st.decimals(allow_nan=False),
    st.fractions(),
    st.booleans(),
)
_hashable_atoms = st.one_of(_numbers, st.text(), st.binary(), st.none())


def _equal_number(draw: st.DrawFn, number: Any) -> Any:
    """A number equal to ``number``, of another type where one is exact."""
    if isinstance(number, float | Decimal) and not math.isfinite(number):
        candidates = [number, float(number), Decimal(number)]
    else:
        exact = Fraction(number)
        candidates = [number, exact, Decimal(exact.numerator) / Decimal(exact.denominator)]
        if exact.denominator == 1:
            integer = exact.numerator
            candidates += [integer, complex(integer, -0.0)]
            candidates += [bool(integer)] if integer in (0, 1) else []
            candidates += [Level(integer)] if integer in (1, 2) else []
            candidates += [-0.0] if integer == 0 else []
        with contextlib.suppress(OverflowError):
            candidates += [float(exact), complex(float(exact), 0.0)]
    return draw(st.sampled_from([c for c in candidates if c == number]))


@st.composite
def _equal_variant(draw: st.DrawFn, value: Any, hashable: bool = False) -> Any:
    """A value equal to ``value``, built another way: other numeric types, other objects
    for strings, shared or unshared elements, other containers of equal contents."""
    if isinstance(value, bool | int | float | Decimal | Fraction):
        return _equal_number(draw, value)
    if isinstance(value, str):
        return draw(st.sampled_from([value, _copy_str(value), Word(value)]))
    if isinstance(value, bytes):
        choices = [value, bytes(bytearray(value))]
        if not hashable:
            choices.append(bytearray(value))
        return draw(st.sampled_from(choices))
    if isinstance(value, tuple):
        elements = tuple(draw(_equal_variant(v, hashable)) for v in value)
        if len(elements) == 2 and draw(st.booleans()):
            return _PAIRS(*elements)
        return elements
    if isinstance(value, list):
        return [draw(_equal_variant(v)) for v in value]
    if isinstance(value, frozenset):
        elements = [draw(_equal_variant(v, hashable=True)) for v in value]
        return frozenset(draw(st.permutations(elements)))
    if isinstance(value, dict):
        items = [
            (draw(_equal_variant(k, hashable=True)), draw(_equal_variant(v)))
            for k, v in value.items()
        ]
        return dict(draw(st.permutations(items)))
    if isinstance(value, Row):
        return Row(*(draw(_equal_variant(v, hashable)) for v in value))
    if isinstance(value, Bid):
        return Bid(
            draw(_equal_variant(value.auction, hashable)),
            draw(_equal_variant(value.bidder, hashable)),
        )
    return value


_hashable = st.recursive(
    _hashable_atoms,
    lambda children: st.one_of(
        st.lists(children, max_size=3).map(tuple),
        st.frozensets(children, max_size=3),
        st.builds(Bid, children, children),
    ),
    max_leaves=8,
)
_keys = st.recursive(
    _hashable,
    lambda children: st.one_of(
        st.lists(children, max_size=3).map(tuple),
        st.lists(children, max_size=3),
        st.dictionaries(_hashable, children, max_size=3),
        st.lists(children, max_size=3).map(lambda fields: Row(*fields)),
        # one object twice in a tuple: pickle writes it once and then refers back
        children.map(lambda child: (child, child)),
    ),
    max_leaves=10,
)


@given(_keys, st.data())
def test_equal_keys_built_in_different_ways_share_a_key_group(key, data):
    other = data.draw(_equal_variant(key))
    assume(key == other)  # a float too large for its Decimal twin to be exact, say
    assert assign_to_key_group(key, MAX_PARALLELISM) == assign_to_key_group(other, MAX_PARALLELISM)


@given(st.datetimes(timezones=st.timezones()), st.timezones())
def test_aware_datetimes_of_one_instant_share_a_key_group(moment, zone):
    elsewhere = moment.astimezone(zone)
    assume(moment == elsewhere)
    assert canonical_key_bytes(moment) == canonical_key_bytes(elsewhere)


def test_one_two_and_true():
    groups = {assign_to_key_group(k, MAX_PARALLELISM) for k in (1, 1.0, True, Decimal("1.0"))}
    assert len(groups) == 1
    assert assign_to_key_group(True, 128) == assign_to_key_group(1, 128)
    assert assign_to_key_group(2.0, 128) == assign_to_key_group(2, 128)


def test_a_string_twice_is_placed_as_two_equal_strings():
    text = "auction-7"
    shared = (text, text)
    apart = (text, _copy_str(text))
    assert shared[1] is shared[0] and apart[1] is not apart[0]
    assert pickle.dumps(shared, protocol=5) != pickle.dumps(apart, protocol=5)  # PyFlink's way
    assert assign_to_key_group(shared, MAX_PARALLELISM) == assign_to_key_group(
        apart, MAX_PARALLELISM
    )


def test_a_naive_datetime_with_fold_is_the_same_key():
    moment = datetime.datetime(2024, 10, 27, 2, 30)
    assert canonical_key_bytes(moment.replace(fold=1)) == canonical_key_bytes(moment)


def test_a_cycle_is_placed_by_its_plain_pickle():
    looped: list[Any] = []
    looped.append(looped)
    assert 0 <= assign_to_key_group(looped, 128) < 128


def _nans() -> list[float]:
    """NaNs of other bits: Python's, its negation, one with a payload, x86's inf - inf."""
    payload = struct.unpack(">d", bytes.fromhex("7ff8000000000123"))[0]
    return [float("nan"), -float("nan"), payload, float("inf") - float("inf")]


def test_every_nan_is_one_key_placed_as_pythons_nan():
    """As Java's Double.equals holds every NaN equal and its serializer writes one NaN;
    Python's own NaN keeps the bytes PyFlink pickles it to, so it lands where PyFlink
    puts it."""
    for shape in (lambda n: n, lambda n: ("a", n), lambda n: (n, 1.5, "b"), lambda n: [n]):
        assert len({canonical_key_bytes(shape(n)) for n in _nans()}) == 1
    assert canonical_key_bytes(float("nan")) == pickle.dumps(float("nan"), protocol=5)
    assert canonical_key_bytes(("a", float("nan"))) == pickle.dumps(("a", math.nan), protocol=5)
    assert not is_canonical(-float("nan"))  # its original is kept, not made from the bytes
    assert canonical_key_bytes(complex(float("nan"), 1)) == canonical_key_bytes(
        complex(-float("nan"), 1)
    )


def test_state_key_gives_one_nan_object_and_leaves_other_keys_as_they_are():
    Point = namedtuple("Point", "x y")
    first = [state_key(n) for n in _nans()]
    assert all(n is first[0] for n in first)
    pairs = [state_key(("a", n)) for n in _nans()]
    assert len(set(pairs)) == 1 and all(type(p) is tuple for p in pairs)
    points = [state_key(Point(n, 1)) for n in _nans()]
    assert len(set(points)) == 1 and all(type(p) is Point for p in points)
    for key in ("s", 7, b"b", None, 1.5, ("a", 1), ("a", (2.5, "b")), [float("nan")]):
        assert state_key(key) is key
