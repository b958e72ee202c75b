"""Windows and trigger results: the values both the API and the window operator handle.

``TimeWindow``, ``CountWindow``, ``GlobalWindow`` and ``TriggerResult`` are PyFlink's
(``pyflink.datastream.window``) and are re-exported from ``weir.datastream.window``. They
live here because the TaskManager builds windows and reads trigger results without
importing the API package. Equality, hashing, ordering and ``repr`` are PyFlink's, so a
program prints the same windows and iterates sets of them in the same order.
"""

from __future__ import annotations

import abc
from collections.abc import Iterable
from enum import Enum
from typing import Any

from weir.core.errors import WeirError

__all__ = [
    "MAX_LONG_VALUE",
    "MIN_LONG_VALUE",
    "CountWindow",
    "GlobalWindow",
    "MissingTimestampError",
    "TimeWindow",
    "TriggerResult",
    "Window",
    "WindowMergeError",
]

MAX_LONG_VALUE = (1 << 63) - 1
MIN_LONG_VALUE = -(1 << 63)

_HASH_MODULUS = (1 << 61) - 1  # CPython reduces integer hashes modulo this prime


class MissingTimestampError(WeirError, ValueError):
    """An event-time window received a record without a timestamp."""


class WindowMergeError(WeirError, RuntimeError):
    """Merging session windows would move a window behind the watermark or the clock."""


def long_to_int_with_bit_mixing(x: int) -> int:
    """PyFlink's hash of a CountWindow id."""
    x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9
    x = (x ^ (x >> 27)) * 0x94D049BB133111EB
    return x ^ (x >> 31)


def mod_inverse(x: int) -> int:
    """PyFlink's ``mod_inverse`` (in unbounded Python integers, as PyFlink computes it)."""
    inverse = x * x * x
    inverse *= 2 - x * inverse
    inverse *= 2 - x * inverse
    inverse *= 2 - x * inverse
    return inverse


def _time_window_hash(start: int, end: int) -> int:
    """``hash(start + mod_inverse(2 * end + 1))`` without the ~1,300-bit integers.

    ``mod_inverse`` is a polynomial, so it can be evaluated modulo CPython's hash modulus;
    only the sign of the exact value is needed besides, and for ``|x| >= 5`` the
    polynomial's magnitude (> 5**31) dwarfs any 64-bit ``start`` and its sign is the
    opposite of ``x``'s. The small or out-of-range cases are computed exactly.
    """
    x = (end << 1) + 1
    if -5 < x < 5 or not MIN_LONG_VALUE <= start <= MAX_LONG_VALUE:
        return hash(start + mod_inverse(x))
    m = _HASH_MODULUS
    xm = x % m
    inverse = xm * xm % m * xm % m
    inverse = inverse * (2 - xm * inverse) % m
    inverse = inverse * (2 - xm * inverse) % m
    inverse = inverse * (2 - xm * inverse) % m
    residue = (start + inverse) % m
    if x < 0:
        return residue  # the exact value is positive
    h = -((m - residue) % m)
    return -2 if h == -1 else h


class Window(abc.ABC):
    """A finite bucket of elements; all of them have arrived once time passes
    ``max_timestamp()``."""

    __slots__ = ()

    @abc.abstractmethod
    def max_timestamp(self) -> int:
        """The largest timestamp that still belongs to this window."""


class TimeWindow(Window):
    """The interval ``[start, end)`` in milliseconds::

    >>> TimeWindow(0, 10).max_timestamp()
    9
    """

    __slots__ = ("_hash", "end", "start")
    _hash: int

    def __init__(self, start: int, end: int) -> None:
        self.start = start
        self.end = end

    def max_timestamp(self) -> int:
        return self.end - 1

    def intersects(self, other: TimeWindow) -> bool:
        """True if this window intersects (or touches) ``other``."""
        return self.start <= other.end and self.end >= other.start

    def cover(self, other: TimeWindow) -> TimeWindow:
        """The smallest window covering both this window and ``other``."""
        return TimeWindow(min(self.start, other.start), max(self.end, other.end))

    @staticmethod
    def get_window_start_with_offset(timestamp: int, offset: int, window_size: int) -> int:
        """The start of the window of ``window_size`` shifted by ``offset`` that holds
        ``timestamp``."""
        return timestamp - (timestamp - offset + window_size) % window_size

    @staticmethod
    def merge_windows(windows: Iterable[TimeWindow], callback: Any) -> None:
        """Merge overlapping windows: ``callback.merge(to_be_merged, merge_result)`` for each
        group of more than one window."""
        sorted_windows = sorted(windows)
        merged: list[tuple[TimeWindow, set[TimeWindow]]] = []
        current: TimeWindow | None = None
        current_set: set[TimeWindow] = set()
        for candidate in sorted_windows:
            if current is None:
                current = candidate
                current_set.add(candidate)
            elif current.intersects(candidate):
                current = current.cover(candidate)
                current_set.add(candidate)
            else:
                merged.append((current, current_set))
                current = candidate
                current_set = {candidate}
        if current is not None:
            merged.append((current, current_set))
        for merge_key, merge_set in merged:
            if len(merge_set) > 1:
                callback.merge(merge_set, merge_key)

    def __hash__(self) -> int:
        try:
            return self._hash
        except AttributeError:
            h = self._hash = _time_window_hash(self.start, self.end)
            return h

    def __eq__(self, other: object) -> bool:
        return (
            self.__class__ == other.__class__
            and self.end == other.end  # type: ignore[attr-defined]
            and self.start == other.start
        )  # type: ignore[attr-defined]

    def __lt__(self, other: TimeWindow) -> bool:
        if not isinstance(other, TimeWindow):
            msg = f"Does not support comparison with non-TimeWindow {other}"
            raise TypeError(msg)
        return (self.start == other.start and self.end < other.end) or self.start < other.start

    def __le__(self, other: TimeWindow) -> bool:
        return self.__eq__(other) or self.__lt__(other)

    def __getstate__(self) -> tuple[int, int]:
        return (self.start, self.end)

    def __setstate__(self, state: tuple[int, int]) -> None:
        self.start, self.end = state

    def __repr__(self) -> str:
        return f"TimeWindow(start={self.start}, end={self.end})"


class CountWindow(Window):
    """A window of elements counted per key; ``id`` names it."""

    __slots__ = ("id",)

    def __init__(self, id: int) -> None:
        self.id = id

    def max_timestamp(self) -> int:
        return MAX_LONG_VALUE

    def __hash__(self) -> int:
        return long_to_int_with_bit_mixing(self.id)

    def __eq__(self, other: object) -> bool:
        return self.__class__ == other.__class__ and self.id == other.id  # type: ignore[attr-defined]

    def __getstate__(self) -> int:
        return self.id

    def __setstate__(self, state: int) -> None:
        self.id = state

    def __repr__(self) -> str:
        return f"CountWindow(id={self.id})"


class GlobalWindow(Window):
    """The one window that GlobalWindows puts every element in."""

    __slots__ = ()

    @staticmethod
    def get() -> GlobalWindow:
        return GlobalWindow()

    def max_timestamp(self) -> int:
        return MAX_LONG_VALUE

    def __eq__(self, other: object) -> bool:
        return self.__class__ == other.__class__

    def __hash__(self) -> int:
        return 0

    def __getstate__(self) -> int:
        return 0

    def __setstate__(self, state: int) -> None:
        pass

    def __repr__(self) -> str:
        return "GlobalWindow"


class TriggerResult(Enum):
    """What a trigger decides for a window:

    - ``CONTINUE``: nothing happens.
    - ``FIRE``: the window function runs on the contents, which are kept.
    - ``PURGE``: the contents are discarded without running the window function.
    - ``FIRE_AND_PURGE``: the window function runs, then the contents are discarded.

    A window without contents never fires.
    """

    CONTINUE = (False, False)
    FIRE_AND_PURGE = (True, True)
    FIRE = (True, False)
    PURGE = (False, True)

    def is_fire(self) -> bool:
        return self.value[0]  # type: ignore[no-any-return]

    def is_purge(self) -> bool:
        return self.value[1]  # type: ignore[no-any-return]
