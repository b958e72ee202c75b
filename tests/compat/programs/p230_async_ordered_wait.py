"""AsyncDataStream.ordered_wait: results come out in input order although later requests
finish first; a request may return several results or none; typed and untyped outputs."""

import asyncio

from pyflink.common import Time, Types
from pyflink.datastream import AsyncDataStream, StreamExecutionEnvironment
from pyflink.datastream.functions import AsyncFunction


class Lookup(AsyncFunction):
    async def async_invoke(self, value):
        # Later values sleep less, so they complete before earlier ones.
        await asyncio.sleep((10 - value % 10) * 0.005)
        if value % 5 == 0:
            return []
        if value % 3 == 0:
            return [value * 10, value * 10 + 1]
        return [value * 10]


class Describe(AsyncFunction):
    async def async_invoke(self, value):
        await asyncio.sleep(0.001 * (3 - value % 3))
        return [(value, str(value) * 2), {"v": value}]


env = StreamExecutionEnvironment.get_execution_environment()
env.set_parallelism(1)
numbers = env.from_collection(list(range(1, 31)), type_info=Types.INT())
ordered = AsyncDataStream.ordered_wait(numbers, Lookup(), Time.seconds(30), 4, Types.INT())
print(list(ordered.execute_and_collect()))

untyped = AsyncDataStream.ordered_wait(
    env.from_collection([1, 2, 3, 4], type_info=Types.INT()), Describe(), Time.seconds(30)
)
for value in untyped.execute_and_collect():
    print(repr(value))

chained = AsyncDataStream.ordered_wait(
    numbers.map(lambda x: x * 2, output_type=Types.INT()),
    Lookup(),
    Time.milliseconds(30000),
    capacity=2,
    output_type=Types.INT(),
).map(lambda x: x + 1, output_type=Types.INT())
print(list(chained.execute_and_collect()))
