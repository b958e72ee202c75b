from __future__ import annotations

import pytest

from weir.common import Row, Types
from weir.datastream._aggregation import AccumulateReduceFunction, AccumulateType
from weir.datastream.connectors import CollectionSource, NumberSequenceSource


class Ctx:
    def __init__(self, index, parallelism):
        self.index, self.parallelism = index, parallelism

    def get_index_of_this_subtask(self):
        return self.index

    def get_number_of_parallel_subtasks(self):
        return self.parallelism


def drain(reader, batch=3):
    out = []
    while (chunk := reader.poll_batch(batch)) is not None:
        out.extend(chunk)
    return out


class TestNumberSequenceSource:
    @pytest.mark.parametrize("parallelism", [1, 2, 3, 4, 5])
    @pytest.mark.parametrize(("start", "end"), [(1, 10), (0, 0), (5, 7), (-3, 17)])
    def test_splits_cover_exactly_the_range(self, parallelism, start, end):
        source = NumberSequenceSource(start, end)
        parts = [drain(source.create_reader(Ctx(i, parallelism))) for i in range(parallelism)]
        assert [n for part in parts for n in part] == list(range(start, end + 1))
        sizes = [len(p) for p in parts]
        assert max(sizes) - min(sizes) <= 1

    def test_end_before_start_fails(self):
        with pytest.raises(ValueError):
            NumberSequenceSource(5, 1)


class TestCollectionSource:
    def test_elements_in_order_on_subtask_zero(self):
        data = [1, "a", (2, 3)]
        source = CollectionSource(data)
        data.append("later")
        assert drain(source.create_reader(Ctx(0, 1)), 2) == [1, "a", (2, 3)]
        assert drain(source.create_reader(Ctx(1, 2))) == []

    def test_declared_byte_short_and_int_narrow_as_java(self):
        def read(data, type_info):
            return drain(CollectionSource(data, type_info).create_reader(Ctx(0, 1)))

        assert read([40000, -40000, 32767], Types.SHORT()) == [-25536, 25536, 32767]
        assert read([200, -129], Types.BYTE()) == [-56, 127]
        assert read([3000000000, -2147483649], Types.INT()) == [-1294967296, 2147483647]
        assert read([2**40, 1.5, "x"], Types.LONG()) == [2**40, 1.5, "x"]
        pair = Types.TUPLE([Types.SHORT(), Types.STRING()])
        assert read([(70000, "a")], pair) == [(4464, "a")]
        row = Row(n=65536, s="y")
        (narrowed,) = read([row], Types.ROW_NAMED(["n", "s"], [Types.SHORT(), Types.STRING()]))
        assert (narrowed.n, narrowed.s, row.n) == (0, "y", 65536)
        assert read([{"a": 3000000000}], Types.MAP(Types.STRING(), Types.INT())) == [
            {"a": -1294967296}
        ]
        assert read([[70000]], Types.LIST(Types.SHORT())) == [[4464]]


def fold(kind, position, values):
    f = AccumulateReduceFunction(position, kind)
    acc = values[0]
    outs = [acc]
    for v in values[1:]:
        acc = f.reduce(acc, v)
        outs.append(acc)
    return outs


class TestAggregations:
    def test_sum_on_tuples_keeps_first_other_fields(self):
        assert fold(AccumulateType.SUM, 1, [("a", 1, "x"), ("a", 2, "y")]) == [
            ("a", 1, "x"),
            ("a", 3, "x"),
        ]

    def test_min_vs_min_by(self):
        values = [("a", 3, "first"), ("a", 1, "second"), ("a", 1, "third")]
        assert fold(AccumulateType.MIN, 1, values)[-1] == ("a", 1, "first")
        assert fold(AccumulateType.MIN_BY, 1, values)[-1] == ("a", 1, "second")
        assert fold(AccumulateType.MAX, 1, values)[-1] == ("a", 3, "first")
        assert fold(AccumulateType.MAX_BY, 1, values)[-1] == ("a", 3, "first")

    def test_rows_by_name_and_lists(self):
        rows = [Row(key="a", value=1), Row(key="a", value=4)]
        out = fold(AccumulateType.SUM, "value", rows)
        assert out[-1] == Row(key="a", value=5)
        assert rows[0] == Row(key="a", value=1)  # the emitted record is not changed later
        assert fold(AccumulateType.MAX, 0, [[1, "x"], [5, "y"]])[-1] == [5, "x"]

    def test_plain_numbers(self):
        assert fold(AccumulateType.SUM, 0, [1, 2, 3]) == [1, 3, 6]
        assert fold(AccumulateType.MIN, 0, [3, 1, 2])[-1] == 1
        with pytest.raises(TypeError, match="basic type"):
            fold(AccumulateType.SUM, 1, [1, 2])
