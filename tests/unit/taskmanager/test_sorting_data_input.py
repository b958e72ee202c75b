"""SortingDataInput: a BATCH job's keyed input replayed a key at a time, in PyFlink's key
order and by timestamp, spilling sorted runs to disk past its memory budget."""

from __future__ import annotations

import os
import random

from weir.core.sort_keys import sort_key_function
from weir.taskmanager.operators.base import MIN_WATERMARK
from weir.taskmanager.operators.sorting_data_input import SortingDataInput


def _replay(sorter: SortingDataInput) -> list[object]:
    events: list[object] = []

    def process(batch, timestamps):
        events.append(("batch", list(batch), None if timestamps is None else list(timestamps)))

    sorter.drain(process, lambda: events.append("end"))
    return events


def _sorter(tmp_path, memory_bytes=1 << 20, batch_size=1000, key_type="pickled"):
    return SortingDataInput(
        lambda r: r[0],
        sort_key_function(key_type),
        memory_bytes=memory_bytes,
        batch_size=batch_size,
        spill_root=str(tmp_path),
    )


def test_records_come_by_key_in_pyflinks_order_then_by_timestamp(tmp_path):
    sorter = _sorter(tmp_path, key_type="String")
    sorter.add([("b", 1), ("é", 2), ("a", 3)], [5, 1, 9])
    sorter.add([("b", 4), ("a", 5), ("aa", 6)], [2, 9, None])
    assert _replay(sorter) == [
        ("batch", [("é", 2)], [1]),  # 0xE9 is a negative Java byte: before "B"..."z"
        "end",
        ("batch", [("a", 3), ("a", 5)], [9, 9]),  # equal timestamps: in arrival order
        "end",
        ("batch", [("b", 4), ("b", 1)], [2, 5]),
        "end",
        ("batch", [("aa", 6)], None),  # longer keys after shorter ones
        "end",
    ]


def test_batches_of_one_key_are_cut_at_the_batch_size(tmp_path):
    sorter = _sorter(tmp_path, batch_size=2)
    sorter.add([(1, i) for i in range(5)], None)
    assert _replay(sorter) == [
        ("batch", [(1, 0), (1, 1)], None),
        ("batch", [(1, 2), (1, 3)], None),
        ("batch", [(1, 4)], None),
        "end",
    ]


def test_past_its_memory_it_spills_sorted_runs_and_merges_them(tmp_path):
    rng = random.Random(7)
    records = [(rng.randrange(50), rng.randrange(1000), i) for i in range(5000)]
    sorter = _sorter(tmp_path, memory_bytes=20_000)
    for start in range(0, len(records), 100):
        chunk = records[start : start + 100]
        sorter.add(chunk, [r[1] for r in chunk])
    assert sorter.runs > 5
    assert any(name.startswith("weir-sort-") for name in os.listdir(tmp_path))
    events = _replay(sorter)
    replayed = [r for e in events if e != "end" for r in e[1]]
    key = sort_key_function("pickled")
    assert replayed == sorted(records, key=lambda r: (key(r[0]), r[1], r[2]))
    assert events.count("end") == len({r[0] for r in records})
    assert os.listdir(tmp_path) == []  # the runs are gone


def test_records_without_timestamps_sort_first_within_their_key(tmp_path):
    sorter = _sorter(tmp_path)
    sorter.add([(1, "late")], [10])
    sorter.add([(1, "none")], None)
    assert _replay(sorter) == [("batch", [(1, "none"), (1, "late")], [None, 10]), "end"]
    assert MIN_WATERMARK < 10


def test_pyflinks_key_orders(tmp_path):
    pickled = sort_key_function("pickled")
    typed = sort_key_function("Integer")
    ints = [300, 1, -5, 70000, 2, 256]
    # As PyFlink 2.3 ordered them (tests/compat/p306): by pickled bytes, by Java int bytes.
    assert sorted(ints, key=pickled) == [1, 2, 256, 300, -5, 70000]
    assert sorted(ints, key=typed) == [-5, 1, 2, 256, 300, 70000]
    strings = ["b", "aa", "a", "B", "ab", "é", "", "zz"]
    assert sorted(strings, key=pickled) == ["", "B", "a", "b", "é", "aa", "ab", "zz"]
    assert sorted(strings, key=sort_key_function("String")) == [
        "",
        "é",
        "B",
        "a",
        "b",
        "aa",
        "ab",
        "zz",
    ]
