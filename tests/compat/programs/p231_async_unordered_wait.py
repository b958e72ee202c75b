"""AsyncDataStream.unordered_wait: results come out as they complete, but never across a
watermark: an event-time window after it sees every record in time."""

import asyncio

from pyflink.common import Duration, Time, Types, WatermarkStrategy
from pyflink.common.watermark_strategy import TimestampAssigner
from pyflink.datastream import AsyncDataStream, StreamExecutionEnvironment
from pyflink.datastream.functions import AsyncFunction, ProcessWindowFunction
from pyflink.datastream.window import TumblingEventTimeWindows


class Enrich(AsyncFunction):
    async def async_invoke(self, value):
        await asyncio.sleep((value * 37 % 11) * 0.002)
        return [(value // 10, value)]


class ByIndex(TimestampAssigner):
    def extract_timestamp(self, value, record_timestamp):
        return value * 10


class Count(ProcessWindowFunction):
    def process(self, key, context, elements):
        values = [v for _, v in elements]
        yield key, context.window().start, len(values), sum(values)


env = StreamExecutionEnvironment.get_execution_environment()
env.set_parallelism(1)
env.get_config().set_auto_watermark_interval(5)
source = env.from_collection(list(range(200)), type_info=Types.INT())
stamped = source.assign_timestamps_and_watermarks(
    WatermarkStrategy.for_bounded_out_of_orderness(Duration.of_millis(0)).with_timestamp_assigner(
        ByIndex()
    )
)
enriched = AsyncDataStream.unordered_wait(
    stamped,
    Enrich(),
    Time.seconds(30),
    16,
    Types.TUPLE([Types.INT(), Types.INT()]),
)
unordered = list(enriched.map(lambda t: t[1], output_type=Types.INT()).execute_and_collect())
print(len(unordered), sorted(unordered) == list(range(200)))

windows = (
    enriched.key_by(lambda t: t[0] % 2, key_type=Types.INT())
    .window(TumblingEventTimeWindows.of(Time.milliseconds(100)))
    .process(Count())
)
for row in sorted(windows.execute_and_collect()):
    print(row)
