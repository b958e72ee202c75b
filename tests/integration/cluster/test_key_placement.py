"""Equal keys built in different ways meet in one subtask and one state entry."""

from __future__ import annotations

from collections import namedtuple
from decimal import Decimal
from fractions import Fraction

import pytest

from weir.datastream import (
    EmbeddedRocksDBStateBackend,
    HashMapStateBackend,
    KeyedProcessFunction,
    StreamExecutionEnvironment,
)
from weir.datastream.state import ValueStateDescriptor

pytestmark = pytest.mark.spark

Pair = namedtuple("Pair", "name number")


class CountPerKey(KeyedProcessFunction):
    def open(self, runtime_context):
        self.count = runtime_context.get_state(ValueStateDescriptor("count", None))
        self.subtask = runtime_context.get_index_of_this_subtask()

    def process_element(self, value, ctx):
        count = (self.count.value() or 0) + 1
        self.count.update(count)
        yield value[0], count, self.subtask


def _variants(i: int) -> list:
    """Keys equal to ``(f"k{i}", i)``, built as a program might build them."""
    name = f"k{i}"
    joined = "".join(["k", str(i)])  # equal to name, another object
    numbers = [i, float(i), Decimal(i), Fraction(i, 1), complex(i, 0)]
    numbers += [bool(i)] if i in (0, 1) else []
    keys = [(name, n) for n in numbers]
    keys += [(joined, i), Pair(name, i), Pair(joined, float(i))]
    return keys


def test_equal_keys_of_other_types_share_a_subtask_and_their_state(cluster):
    # The keys are built by the key selector, from (i, which variant): each side of the
    # exchange builds its own objects, as a selector reading a record's fields does.
    records = [(i, v) for i in range(12) for v in range(len(_variants(i)))]
    env = StreamExecutionEnvironment.get_execution_environment()
    env.set_parallelism(2)
    results = list(
        env.from_collection(records)
        .rebalance()  # two senders, each with its own route cache, route the keys
        .map(lambda record: record)
        .key_by(lambda record: _variants(record[0])[record[1]])
        .process(CountPerKey())
        .execute_and_collect()
    )
    for i in range(12):
        mine = [(count, subtask) for group, count, subtask in results if group == i]
        assert len({subtask for _, subtask in mine}) == 1, f"key {i} split: {mine}"
        assert max(count for count, _ in mine) == len(_variants(i))


@pytest.mark.parametrize("backend", ["hashmap", "rocksdb"])
def test_every_nan_is_one_key_with_one_state(cluster, backend):
    """NaN is unequal to itself in Python, yet every NaN is one key, as in PyFlink (Java's
    Double.equals, one NaN in its serializer's bytes): each record's NaN, a new object
    on each side of the exchange, alone or in a tuple, whatever its bits, counts in one
    state entry of one subtask, on either state backend."""
    shapes = {
        "nan": lambda i: float("nan") if i % 2 else -float("nan"),
        "tuple": lambda i: ("t", float("inf") - float("inf") if i % 2 else float("nan")),
        "zero": lambda i: (0, 0.0, -0.0)[i % 3],
    }
    per_shape = 30
    records = [(name, i) for name in shapes for i in range(per_shape)]
    env = StreamExecutionEnvironment.get_execution_environment()
    env.set_parallelism(2)
    env.set_state_backend(
        HashMapStateBackend() if backend == "hashmap" else EmbeddedRocksDBStateBackend()
    )
    results = list(
        env.from_collection(records)
        .rebalance()
        .map(lambda record: record)
        .key_by(lambda record: shapes[record[0]](record[1]))
        .process(CountPerKey())
        .execute_and_collect()
    )
    for name in shapes:
        mine = [(count, subtask) for shape, count, subtask in results if shape == name]
        assert len({subtask for _, subtask in mine}) == 1, f"{name} split: {mine}"
        assert sorted(count for count, _ in mine) == list(range(1, per_shape + 1)), name
