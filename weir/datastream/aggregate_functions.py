"""Built-in AggregateFunctions (Weir's own): count, sum, min, max and average.

They are ordinary AggregateFunctions, correct wherever one is taken, and Weir
recognises them by class: on aligned time windows (tumbling or sliding event-time
windows with the default trigger) over a batch that comes as columns, with a key
selector that returns one field (``lambda bid: bid[0]``), a whole batch is added to
the windows' accumulators with no Python call per record. The accumulators are the
ones their ``add`` builds, so checkpoints, savepoints and rescaling are the same on
either path.

``field`` picks what is summed, compared or averaged: a position (``0``), a field name
(``"price"``, for Rows), or None for the record itself::

    bids.key_by(lambda bid: bid[0]) \\
        .window(TumblingEventTimeWindows.of(Time.seconds(10))) \\
        .aggregate(Count())
"""

from __future__ import annotations

from typing import Any

from weir.datastream.functions import AggregateFunction

__all__ = ["Avg", "Count", "Max", "Min", "Sum"]


def _value(value: Any, field: int | str | None) -> Any:
    return value if field is None else value[field]


class BuiltinAggregateFunction(AggregateFunction):
    """The base of the built-ins: ``builtin`` names what the runtime computes over
    columns (``(kind, field)``), with the semantics of ``add`` below."""

    kind = ""

    def __init__(self, field: int | str | None = None) -> None:
        self.field = field

    @property
    def builtin(self) -> tuple[str, int | str | None]:
        return self.kind, self.field

    def __repr__(self) -> str:
        return f"{type(self).__name__}({'' if self.field is None else repr(self.field)})"


class Count(BuiltinAggregateFunction):
    """The number of records."""

    kind = "count"

    def __init__(self) -> None:
        super().__init__(None)

    def create_accumulator(self) -> int:
        return 0

    def add(self, value: Any, accumulator: int) -> int:
        return accumulator + 1

    def get_result(self, accumulator: int) -> int:
        return accumulator

    def merge(self, acc_a: int, acc_b: int) -> int:
        return acc_a + acc_b


class Sum(BuiltinAggregateFunction):
    """The sum of the field."""

    kind = "sum"

    def create_accumulator(self) -> Any:
        return 0

    def add(self, value: Any, accumulator: Any) -> Any:
        return accumulator + _value(value, self.field)

    def get_result(self, accumulator: Any) -> Any:
        return accumulator

    def merge(self, acc_a: Any, acc_b: Any) -> Any:
        return acc_a + acc_b


class Min(BuiltinAggregateFunction):
    """The smallest value of the field (None for no record)."""

    kind = "min"

    def create_accumulator(self) -> Any:
        return None

    def add(self, value: Any, accumulator: Any) -> Any:
        v = _value(value, self.field)
        return v if accumulator is None or v < accumulator else accumulator

    def get_result(self, accumulator: Any) -> Any:
        return accumulator

    def merge(self, acc_a: Any, acc_b: Any) -> Any:
        if acc_a is None:
            return acc_b
        return acc_a if acc_b is None or acc_a <= acc_b else acc_b


class Max(BuiltinAggregateFunction):
    """The largest value of the field (None for no record)."""

    kind = "max"

    def create_accumulator(self) -> Any:
        return None

    def add(self, value: Any, accumulator: Any) -> Any:
        v = _value(value, self.field)
        return v if accumulator is None or v > accumulator else accumulator

    def get_result(self, accumulator: Any) -> Any:
        return accumulator

    def merge(self, acc_a: Any, acc_b: Any) -> Any:
        if acc_a is None:
            return acc_b
        return acc_a if acc_b is None or acc_a >= acc_b else acc_b


class Avg(BuiltinAggregateFunction):
    """The mean of the field, a float (None for no record); accumulates (sum, count)."""

    kind = "avg"

    def create_accumulator(self) -> tuple[Any, int]:
        return (0, 0)

    def add(self, value: Any, accumulator: tuple[Any, int]) -> tuple[Any, int]:
        return (accumulator[0] + _value(value, self.field), accumulator[1] + 1)

    def get_result(self, accumulator: tuple[Any, int]) -> float | None:
        total, count = accumulator
        return total / count if count else None

    def merge(self, acc_a: tuple[Any, int], acc_b: tuple[Any, int]) -> tuple[Any, int]:
        return (acc_a[0] + acc_b[0], acc_a[1] + acc_b[1])
