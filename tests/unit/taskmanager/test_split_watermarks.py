"""SplitWatermarks: one generator per source split, the source's watermark the minimum
over the active ones."""

from __future__ import annotations

from typing import Any

from weir.common import Duration, WatermarkStrategy
from weir.common.watermark_strategy import TimestampAssigner
from weir.core.source import SplitSourceReader
from weir.core.watermarks import Watermark, WatermarkGenerator
from weir.taskmanager.operators.base import MAX_WATERMARK, Output
from weir.taskmanager.operators.split_watermarks import SplitWatermarks


class SecondField(TimestampAssigner):
    def extract_timestamp(self, value: Any, record_timestamp: int) -> int:
        return value[1]


class Punctuated(WatermarkGenerator):
    """A watermark at every record's timestamp; the record ("idle", _) marks its split idle."""

    def on_event(self, event: Any, event_timestamp: int, output: Any) -> None:
        if event[0] == "idle":
            output.mark_idle()
        else:
            output.emit_watermark(Watermark(event_timestamp))

    def on_periodic_emit(self, output: Any) -> None:
        pass


class ScriptedSplits:
    """The parts of a split reader SplitWatermarks uses: which splits it holds and which
    one the current batch is from."""

    def __init__(self, *splits: str) -> None:
        self.held = list(splits)
        self.current = ""

    def poll_batch(self, max_records: int) -> list[Any] | None:
        return None

    def close(self) -> None:
        pass

    def split_ids(self) -> list[str]:
        return list(self.held)

    def current_split_id(self) -> str:
        return self.current


class Harness:
    def __init__(
        self, reader: ScriptedSplits, strategy: Any = None, clock_ms: Any = lambda: 0
    ) -> None:
        self.events: list[Any] = []
        self.reader = reader
        strategy = strategy or WatermarkStrategy.for_generator(Punctuated).with_timestamp_assigner(
            SecondField()
        )
        self.output = Output(
            lambda b, ts: self.events.append(("records", list(b))),
            lambda wm: self.events.append(("watermark", wm)),
            lambda idle: self.events.append(("idle", idle)),
        )
        self.splits = SplitWatermarks(
            strategy, reader, self.output, clock_ms=clock_ms, processing_timers=None, interval_ms=0
        )

    def batch(self, split: str, *records: Any) -> None:
        self.reader.current = split
        self.splits.process(list(records), None, self.output.collect)

    def watermarks(self) -> list[int]:
        return [e[1] for e in self.events if e[0] == "watermark"]


def test_the_reader_protocol_is_recognised() -> None:
    assert isinstance(ScriptedSplits("a"), SplitSourceReader)


def test_a_split_that_runs_ahead_does_not_carry_the_watermark_past_the_others() -> None:
    h = Harness(ScriptedSplits("a", "b"))
    h.batch("a", ("x", 1000))
    assert h.watermarks() == []  # b holds it back at Long.MIN_VALUE
    h.batch("b", ("y", 400))
    h.batch("b", ("y", 450))
    h.batch("a", ("x", 1100))
    assert h.watermarks() == [400, 450]
    assert h.events[:3] == [
        ("records", [("x", 1000)]),
        ("records", [("y", 400)]),
        ("watermark", 400),
    ]


def test_an_idle_split_stops_holding_the_watermark_back_until_it_has_data_again() -> None:
    h = Harness(ScriptedSplits("a", "b"))
    h.batch("b", ("y", 400))
    h.batch("a", ("x", 1000))
    assert h.watermarks() == [400]
    h.batch("b", ("idle", 0))
    assert h.watermarks() == [400, 1000]
    h.batch("b", ("y", 500))  # active again, behind: the watermark does not go back
    h.batch("a", ("x", 2000))
    assert h.watermarks() == [400, 1000]
    h.batch("b", ("y", 1500))
    assert h.watermarks() == [400, 1000, 1500]


def test_every_split_idle_makes_the_source_idle() -> None:
    h = Harness(ScriptedSplits("a", "b"))
    h.batch("a", ("idle", 0))
    assert ("idle", True) not in h.events
    h.batch("b", ("idle", 0))
    assert h.events[-1] == ("idle", True)
    h.batch("a", ("x", 10))
    assert h.events[-3:] == [("idle", False), ("records", [("x", 10)]), ("watermark", 10)]


def test_a_finished_split_stops_counting() -> None:
    reader = ScriptedSplits("a", "b")
    h = Harness(reader)
    h.batch("a", ("x", 1000))
    h.batch("b", ("y", 300))
    reader.held = ["a", "c"]  # b finished, c assigned
    h.batch("c", ("z", 700))
    assert h.splits.split_ids == ["a", "c"]
    assert h.watermarks() == [300, 700]


def test_the_end_of_input_is_the_end_of_event_time() -> None:
    h = Harness(ScriptedSplits("a", "b"))
    h.batch("a", ("idle", 0))
    h.batch("b", ("idle", 0))
    h.splits.end_of_input()
    assert h.events[-2:] == [("idle", False), ("watermark", MAX_WATERMARK)]


def test_periodic_generators_run_per_split() -> None:
    strategy = WatermarkStrategy.for_monotonous_timestamps().with_timestamp_assigner(SecondField())
    h = Harness(ScriptedSplits("a", "b"), strategy)
    h.batch("a", ("x", 1000), ("x", 1001))
    h.batch("b", ("y", 200))
    h.splits.periodic_emit()
    # monotonous: the maximum seen minus one, per split; the minimum goes out.
    assert h.watermarks() == [199]


def test_with_idleness_a_silent_split_goes_idle_on_its_own() -> None:
    now = [0]
    strategy = (
        WatermarkStrategy.for_monotonous_timestamps()
        .with_idleness(Duration.of_millis(100))
        .with_timestamp_assigner(SecondField())
    )
    h = Harness(ScriptedSplits("a", "b"), strategy, lambda: now[0])
    for t in (0, 50, 100, 150):
        now[0] = t
        h.batch("a", ("x", 1000 + t))  # a keeps reading; b has nothing
        h.splits.periodic_emit()
    # b idle after 100 ms of silence: a's watermark (monotonous: max - 1) goes out.
    assert h.watermarks() == [1099, 1149]
    assert ("idle", True) not in h.events
