"""Equal keys built in different ways meet in one subtask and one state entry."""

from __future__ import annotations

from collections import namedtuple
from decimal import Decimal
from fractions import Fraction

import pytest

from weir.datastream import KeyedProcessFunction, StreamExecutionEnvironment
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
