"""The window API: PyFlink's window values, assigner checks and the recorded operator."""

from __future__ import annotations

import pickle

import pytest
from hypothesis import given
from hypothesis import strategies as st

from weir.common.time import Duration, Time
from weir.core.job_graph import OperatorKind
from weir.core.windowing import CountWindow, TimeWindow, mod_inverse
from weir.datastream import StreamExecutionEnvironment
from weir.datastream.window import (
    CountTrigger,
    EventTimeSessionWindows,
    SlidingEventTimeWindows,
    TumblingEventTimeWindows,
    TumblingProcessingTimeWindows,
)
from weir.datastream.window_triggers import Trigger, TriggerResult

LONGS = st.integers(-(1 << 63), (1 << 63) - 1)


@given(LONGS, LONGS)
def test_time_window_hash_is_pyflinks(start, end):
    assert hash(TimeWindow(start, end)) == hash(start + mod_inverse((end << 1) + 1))


def test_window_values_print_compare_and_pickle_as_in_pyflink():
    w = TimeWindow(0, 10)
    assert repr(w) == "TimeWindow(start=0, end=10)"
    assert w.max_timestamp() == 9
    assert TimeWindow(0, 5) < TimeWindow(0, 10) < TimeWindow(1, 2)
    assert w.cover(TimeWindow(5, 20)) == TimeWindow(0, 20)
    assert w.intersects(TimeWindow(10, 20)) and not w.intersects(TimeWindow(11, 20))
    assert pickle.loads(pickle.dumps(w)) == w and hash(pickle.loads(pickle.dumps(w))) == hash(w)
    assert repr(CountWindow(3)) == "CountWindow(id=3)"
    assert TimeWindow.get_window_start_with_offset(13, 3, 10) == 13
    assert TimeWindow.get_window_start_with_offset(12, 3, 10) == 3


def test_sizes_accept_time_and_duration():
    assert repr(TumblingEventTimeWindows.of(Time.seconds(1))) == "TumblingEventTimeWindows(1000, 0)"
    assert (
        repr(SlidingEventTimeWindows.of(Duration.of_seconds(10), Duration.of_seconds(5)))
        == "SlidingEventTimeWindows(10000, 5000, 0)"
    )


@pytest.mark.parametrize(
    ("build", "match"),
    [
        (lambda: TumblingEventTimeWindows.of(Time.seconds(0)), "abs\\(offset\\) < size"),
        (lambda: TumblingEventTimeWindows.of(Time.seconds(1), Time.seconds(1)), "offset=1000"),
        (lambda: SlidingEventTimeWindows.of(Time.seconds(1), Time.seconds(0)), "< slide and size"),
        (lambda: EventTimeSessionWindows.with_gap(Time.seconds(0)), "0 < size"),
        (lambda: TumblingEventTimeWindows.of(10), "Time or Duration"),
        (lambda: CountTrigger.of(0), "positive count"),
    ],
)
def test_bad_window_parameters_say_what_is_wrong(build, match):
    with pytest.raises((ValueError, TypeError), match=match):
        build()


def stream():
    return StreamExecutionEnvironment().from_collection([("a", 1)])


def test_window_records_a_keyed_window_operator_with_its_settings():
    ds = (
        stream()
        .key_by(lambda x: x[0])
        .window(TumblingEventTimeWindows.of(Time.seconds(5)))
        .allowed_lateness(100)
        .reduce(lambda a, b: a)
    )
    t = ds._transformation
    assert t.kind is OperatorKind.WINDOW
    assert t.name == "TumblingEventTimeWindows"
    assert t.payload["allowed_lateness"] == 100
    assert t.payload["window_state"] == "reducing"
    assert t.payload["fast_path"] == {"size": 5000, "slide": 5000, "offset": 0, "event_time": True}
    assert len(t.payload["key_selectors"]) == 1


def test_a_custom_trigger_turns_the_fast_path_off():
    class Never(Trigger):
        def on_element(self, *a):
            return TriggerResult.CONTINUE

        on_processing_time = on_event_time = on_element

        def on_merge(self, *a):
            pass

        def clear(self, *a):
            pass

    ds = (
        stream()
        .key_by(lambda x: x[0])
        .window(TumblingProcessingTimeWindows.of(Time.seconds(5)))
        .trigger(Never())
        .reduce(max)
    )
    assert ds._transformation.payload["fast_path"] is None


def test_window_all_keys_every_element_alike_at_the_default_parallelism():
    """As PyFlink's: one key, so one subtask sees every window, but the operator runs at
    the default parallelism (and may be given another)."""
    ds = stream().window_all(TumblingEventTimeWindows.of(Time.seconds(5))).reduce(max)
    assert ds._transformation.parallelism is None
    key = ds._transformation.payload["key_selectors"][0]
    assert {key(x) for x in [(1, 2), "a", None]} == {0}
    ds.set_parallelism(2)


def test_negative_lateness_and_wrong_arguments_are_refused():
    windowed = stream().key_by(lambda x: x[0]).window(TumblingEventTimeWindows.of(Time.seconds(5)))
    with pytest.raises(ValueError, match="cannot be negative"):
        windowed.allowed_lateness(-1)
    with pytest.raises(TypeError, match="WindowFunction or ProcessWindowFunction"):
        windowed.reduce(max, window_function=max)
    with pytest.raises(TypeError, match="WindowAssigner"):
        stream().key_by(lambda x: x[0]).window(5)


def test_a_merging_all_window_needs_a_merging_trigger():
    class NotMerging(CountTrigger):
        def can_merge(self) -> bool:
            return False

    windowed = stream().window_all(EventTimeSessionWindows.with_gap(Time.seconds(1)))
    with pytest.raises(TypeError, match="does not support merging"):
        windowed.trigger(NotMerging(2))


def test_window_functions_triggers_and_assigners_are_generic_as_in_pyflink():
    from weir.datastream.functions import ProcessAllWindowFunction, ProcessWindowFunction
    from weir.datastream.window import CountWindow, TimeWindow, Trigger, WindowAssigner

    class Count(ProcessWindowFunction[tuple, tuple, str, TimeWindow]):
        def process(self, key, context: ProcessWindowFunction.Context[TimeWindow], elements):
            return [len(list(elements))]

    assert Count().process("k", None, [1, 2]) == [2]
    assert ProcessAllWindowFunction[tuple, tuple, CountWindow] is not None
    assert Trigger[tuple, TimeWindow] is not None and WindowAssigner[tuple, TimeWindow] is not None
