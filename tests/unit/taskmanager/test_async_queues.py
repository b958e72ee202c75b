"""The async wait operator's stream element queues: what each releases, and when."""

from __future__ import annotations

from typing import Any

import pytest

from weir.taskmanager.operators.async_queue import (
    OrderedStreamElementQueue,
    RecordEntry,
    UnorderedStreamElementQueue,
    WatermarkEntry,
)


def _record(value: Any) -> RecordEntry:
    return RecordEntry(value, None)


def _complete(queue: Any, entry: RecordEntry) -> None:
    entry.results = [entry.value]
    queue.completed(entry)


def _released(queue: Any) -> list[Any]:
    return [
        f"W{e.timestamp}" if isinstance(e, WatermarkEntry) else e.value
        for e in queue.pop_completed()
    ]


class TestOrderedStreamElementQueue:
    def test_releases_only_the_done_prefix_in_input_order(self):
        queue = OrderedStreamElementQueue(10)
        a, b, c = _record("a"), _record("b"), _record("c")
        for entry in (a, b, c):
            queue.add(entry)
        _complete(queue, c)
        _complete(queue, b)
        assert _released(queue) == []
        _complete(queue, a)
        assert _released(queue) == ["a", "b", "c"]
        assert len(queue) == 0

    def test_a_watermark_waits_for_the_records_before_it(self):
        queue = OrderedStreamElementQueue(10)
        a, b = _record("a"), _record("b")
        queue.add(a)
        queue.add(WatermarkEntry(5))
        queue.add(b)
        _complete(queue, b)
        assert _released(queue) == []
        _complete(queue, a)
        assert _released(queue) == ["a", "W5", "b"]

    def test_a_watermark_with_nothing_before_it_goes_at_once(self):
        queue = OrderedStreamElementQueue(10)
        queue.add(WatermarkEntry(1))
        assert _released(queue) == ["W1"]

    def test_capacity_counts_records_and_watermarks(self):
        queue = OrderedStreamElementQueue(2)
        queue.add(_record("a"))
        assert queue.has_room()
        queue.add(WatermarkEntry(1))
        assert not queue.has_room()

    def test_entries_are_the_elements_not_yet_released_in_input_order(self):
        queue = OrderedStreamElementQueue(10)
        a, b = _record("a"), _record("b")
        queue.add(a)
        queue.add(WatermarkEntry(3))
        queue.add(b)
        _complete(queue, b)
        assert [e.element() for e in queue.entries()] == [
            ("record", "a", None),
            ("watermark", 3),
            ("record", "b", None),
        ]


class TestUnorderedStreamElementQueue:
    def test_releases_records_as_they_complete(self):
        queue = UnorderedStreamElementQueue(10)
        a, b, c = _record("a"), _record("b"), _record("c")
        for entry in (a, b, c):
            queue.add(entry)
        _complete(queue, c)
        assert _released(queue) == ["c"]
        _complete(queue, a)
        assert _released(queue) == ["a"]
        assert len(queue) == 1

    def test_nothing_crosses_a_watermark(self):
        queue = UnorderedStreamElementQueue(10)
        a, b, c = _record("a"), _record("b"), _record("c")
        queue.add(a)
        queue.add(b)
        queue.add(WatermarkEntry(7))
        queue.add(c)
        _complete(queue, c)
        assert _released(queue) == []  # after the watermark, which waits for a and b
        _complete(queue, b)
        assert _released(queue) == ["b"]
        _complete(queue, a)
        assert _released(queue) == ["a", "W7", "c"]
        assert len(queue) == 0

    def test_consecutive_watermarks_keep_their_order(self):
        queue = UnorderedStreamElementQueue(10)
        a = _record("a")
        queue.add(a)
        queue.add(WatermarkEntry(1))
        queue.add(WatermarkEntry(2))
        b = _record("b")
        queue.add(b)
        _complete(queue, b)
        _complete(queue, a)
        assert _released(queue) == ["a", "W1", "W2", "b"]

    def test_a_watermark_on_a_drained_queue_goes_at_once(self):
        queue = UnorderedStreamElementQueue(10)
        a = _record("a")
        queue.add(a)
        _complete(queue, a)
        assert _released(queue) == ["a"]
        queue.add(WatermarkEntry(4))
        assert _released(queue) == ["W4"]
        assert len(queue) == 0

    @pytest.mark.parametrize("completion_order", [[0, 1, 2, 3], [3, 2, 1, 0], [2, 0, 3, 1]])
    def test_every_element_is_released_once_whatever_the_completion_order(self, completion_order):
        queue = UnorderedStreamElementQueue(10)
        records = [_record(i) for i in range(4)]
        queue.add(records[0])
        queue.add(records[1])
        queue.add(WatermarkEntry(9))
        queue.add(records[2])
        queue.add(records[3])
        released: list[Any] = []
        for i in completion_order:
            _complete(queue, records[i])
            released += _released(queue)
        assert sorted(released[:2]) == [0, 1]
        assert released[2] == "W9"
        assert sorted(released[3:]) == [2, 3]
        assert len(queue) == 0

    def test_entries_keep_records_between_their_watermarks(self):
        queue = UnorderedStreamElementQueue(10)
        a, b, c = _record("a"), _record("b"), _record("c")
        queue.add(a)
        queue.add(b)
        queue.add(WatermarkEntry(2))
        queue.add(c)
        _complete(queue, b)  # done, but held: a is not
        assert [e.element() for e in queue.entries()] == [
            ("record", "b", None),
            ("record", "a", None),
            ("watermark", 2),
            ("record", "c", None),
        ]
