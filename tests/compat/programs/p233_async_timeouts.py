"""A request that outlives the timeout: timeout() supplies its results; the default
timeout() fails the job, as does an exception raised by async_invoke."""

import asyncio

from pyflink.common import Time, Types
from pyflink.datastream import AsyncDataStream, StreamExecutionEnvironment
from pyflink.datastream.functions import AsyncFunction


class SlowOdd(AsyncFunction):
    async def async_invoke(self, value):
        await asyncio.sleep(30 if value % 2 else 0)
        return [value]

    def timeout(self, value):
        return [-value, -value]


class Stuck(AsyncFunction):
    async def async_invoke(self, value):
        await asyncio.sleep(30)
        return [value]


class Broken(AsyncFunction):
    async def async_invoke(self, value):
        if value == 3:
            raise ValueError("no such record: 3")
        return [value]


env = StreamExecutionEnvironment.get_execution_environment()
env.set_parallelism(1)
numbers = env.from_collection([1, 2, 3, 4, 5, 6], type_info=Types.INT())

timed = AsyncDataStream.ordered_wait(numbers, SlowOdd(), Time.milliseconds(500), 10, Types.INT())
print(list(timed.execute_and_collect()))

for name, function in [("stuck", Stuck()), ("broken", Broken())]:
    failing = AsyncDataStream.unordered_wait(
        numbers, function, Time.milliseconds(500), 10, Types.INT()
    )
    try:
        list(failing.execute_and_collect())
        print(name, "finished")
    except Exception as e:
        message = str(e)
        print(
            name,
            "failed:",
            "Async function call has timed out for input: 1" in message,
            "no such record: 3" in message,
        )
