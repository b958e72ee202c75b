"""WatermarkStrategy's with_* methods as PyFlink's: with_timestamp_assigner changes and
returns its strategy; with_idleness and with_watermark_alignment return new strategies
(without the assigner), leaving the one they were called on as it was."""

from weir.common import Duration, Types
from weir.common.watermark_strategy import TimestampAssigner, WatermarkStrategy
from weir.datastream import StreamExecutionEnvironment


class First(TimestampAssigner):
    def extract_timestamp(self, value, record_timestamp):
        return value


class Second(TimestampAssigner):
    def extract_timestamp(self, value, record_timestamp):
        return value + 1


def test_with_idleness_returns_a_new_strategy_and_leaves_its_base_alone():
    base = WatermarkStrategy.for_bounded_out_of_orderness(Duration.of_seconds(5))
    idle = base.with_idleness(Duration.of_seconds(1))
    other = base.with_idleness(Duration.of_seconds(9))
    assert idle is not base and other is not idle
    assert base.idle_timeout_ms is None
    assert (idle.idle_timeout_ms, other.idle_timeout_ms) == (1000, 9000)
    assert idle.max_out_of_orderness_ms == 5000 and idle.kind == base.kind


def test_with_watermark_alignment_returns_a_new_strategy():
    base = WatermarkStrategy.for_monotonous_timestamps().with_idleness(Duration.of_seconds(2))
    aligned = base.with_watermark_alignment("g", Duration.of_seconds(1), Duration.of_millis(10))
    assert aligned is not base
    assert base._alignment is None
    assert aligned._alignment == ("g", aligned._alignment[1], aligned._alignment[2])
    assert aligned.idle_timeout_ms == 2000


def test_with_timestamp_assigner_sets_it_on_the_strategy_and_derived_ones_do_not_carry_it():
    base = WatermarkStrategy.for_monotonous_timestamps()
    assigner = First()
    assert base.with_timestamp_assigner(assigner) is base
    assert base.timestamp_assigner is assigner
    assert base.with_idleness(Duration.of_seconds(1)).timestamp_assigner is None
    assert base.with_watermark_alignment("g", Duration.of_seconds(1)).timestamp_assigner is None


def test_a_stream_keeps_the_assigner_the_strategy_had_when_it_was_given():
    env = StreamExecutionEnvironment.get_execution_environment()
    strategy = WatermarkStrategy.for_monotonous_timestamps().with_timestamp_assigner(First())
    stream = env.from_collection([1], type_info=Types.INT())
    stamped = stream.assign_timestamps_and_watermarks(strategy)
    strategy.with_timestamp_assigner(Second())
    kept = stamped._transformation.payload["watermark_strategy"]
    assert isinstance(kept.timestamp_assigner, First)
    assert isinstance(strategy.timestamp_assigner, Second)
