"""SourceFunctionContext: how a source function's records are cut into batches."""

from __future__ import annotations

from weir.core import config
from weir.taskmanager.operators.source import SourceFunctionContext, source_function_batching


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def context(batch_size: int = 1000, max_age_s: float = 0.2):
    clock = Clock()
    log: list = []
    ctx = SourceFunctionContext(
        lambda batch, ts: log.append(list(batch)),
        batch_size,
        lambda: log.append("flush"),
        lambda: log.append("serve"),
        None,
        max_age_s=max_age_s,
        clock=clock,
    )
    return ctx, clock, log


class TestBatches:
    def test_a_fast_source_fills_batches_of_the_bundle_size(self):
        ctx, clock, log = context(batch_size=3)
        ctx.collect("first")  # the first record comes after a pause: alone, at once
        for i in range(6):
            clock.now += 0.001
            ctx.collect(i)
        ctx.close()
        # A slow record's batch is flushed at once; the mailbox is served before the next.
        assert log == [["first"], "flush", "serve", [0, 1, 2], "serve", [3, 4, 5]]

    def test_a_batch_older_than_its_age_limit_is_cut_before_the_next_record(self):
        ctx, clock, log = context(max_age_s=0.2)
        ctx.collect("first")
        log.clear()
        for i in range(100):  # a record every 4 ms: never a pause, 400 ms in all
            clock.now += 0.004
            ctx.collect(i)
        ctx.close()
        # 0.2 s of records per batch: 50 of them, and the mailbox served in between.
        assert log == ["serve", list(range(50)), "serve", list(range(50, 100))]

    def test_a_record_after_a_pause_follows_the_pending_ones_in_a_batch_of_its_own(self):
        ctx, clock, log = context()
        ctx.collect("first")
        log.clear()
        clock.now += 0.001
        ctx.collect("a")
        clock.now += 0.001
        ctx.collect("b")
        clock.now += 1.0  # a pause: a periodic watermark may fall due before "c"
        ctx.collect("c")
        assert log == ["serve", ["a", "b"], "flush", "serve", ["c"], "flush"]

    def test_timestamps_stay_with_their_records_across_a_cut(self):
        out: list = []
        clock = Clock()
        ctx = SourceFunctionContext(
            lambda batch, ts: out.append((list(batch), ts)),
            10,
            lambda: None,
            lambda: None,
            max_age_s=0.2,
            clock=clock,
        )
        ctx.collect_with_timestamp("a", 1)
        clock.now += 0.001
        ctx.collect("b")
        clock.now += 0.001
        ctx.collect_with_timestamp("c", 3)
        clock.now += 1.0
        ctx.collect_with_timestamp("d", 4)
        assert out == [(["a"], [1]), (["b", "c"], [None, 3]), (["d"], [4])]


class TestLimits:
    def test_the_bundle_time_or_the_shorter_watermark_interval(self):
        assert source_function_batching({}, 1000) == (1000, 0.2)
        assert source_function_batching({config.PYTHON_BUNDLE_TIME.key: "50"}, 7) == (7, 0.05)
        off = {config.AUTO_WATERMARK_INTERVAL.key: "0"}
        assert source_function_batching(off, 1000) == (1000, 1.0)
        batch = {config.RUNTIME_MODE.key: "BATCH"}
        assert source_function_batching(batch, 1000) == (1000, 1.0)
