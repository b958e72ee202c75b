"""The capacity bounds the requests in flight: never more run at once, and a full queue
holds the input back until one completes."""

import asyncio

from pyflink.common import Time, Types
from pyflink.datastream import AsyncDataStream, StreamExecutionEnvironment
from pyflink.datastream.functions import AsyncFunction


class Gauge(AsyncFunction):
    def open(self, runtime_context):
        self.in_flight = 0

    async def async_invoke(self, value):
        self.in_flight += 1
        seen = self.in_flight
        await asyncio.sleep(0.05)
        self.in_flight -= 1
        return [seen]


env = StreamExecutionEnvironment.get_execution_environment()
env.set_parallelism(1)
numbers = env.from_collection(list(range(40)), type_info=Types.INT())
for capacity in (1, 3, 8):
    for wait in (AsyncDataStream.ordered_wait, AsyncDataStream.unordered_wait):
        seen = list(
            wait(numbers, Gauge(), Time.seconds(30), capacity, Types.INT()).execute_and_collect()
        )
        print(wait.__name__, capacity, len(seen), max(seen))
