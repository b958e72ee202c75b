"""ordered_wait_with_retry and unordered_wait_with_retry: a result predicate retries empty
results, an exception predicate retries failures, with fixed and exponential back-off;
the strategies and predicates are PyFlink's own."""

import asyncio

from pyflink.common import Time, Types
from pyflink.datastream import AsyncDataStream, StreamExecutionEnvironment
from pyflink.datastream.async_retry_predicates import (
    empty_result_predicate,
    exception_type_predicate,
    has_exception_predicate,
)
from pyflink.datastream.async_retry_strategies import (
    ExponentialBackoffDelayRetryStrategy,
    FixedDelayRetryStrategy,
)
from pyflink.datastream.functions import AsyncFunction


class EmptyUntilThirdAttempt(AsyncFunction):
    def open(self, runtime_context):
        self.attempts = {}

    async def async_invoke(self, value):
        await asyncio.sleep(0.001)
        n = self.attempts[value] = self.attempts.get(value, 0) + 1
        if value % 4 == 0:
            return []  # never satisfied: gives up after the last retry, emits nothing
        if n < 3:
            return []
        return [(value, n)]


class FailsOnce(AsyncFunction):
    def open(self, runtime_context):
        self.attempts = {}

    async def async_invoke(self, value):
        n = self.attempts[value] = self.attempts.get(value, 0) + 1
        if n == 1:
            raise ConnectionError(f"lookup of {value} failed")
        return [(value, n)]


env = StreamExecutionEnvironment.get_execution_environment()
env.set_parallelism(1)
numbers = env.from_collection(list(range(1, 11)), type_info=Types.INT())
pairs = Types.TUPLE([Types.INT(), Types.INT()])

fixed = FixedDelayRetryStrategy(3, 5, empty_result_predicate, None)
ordered = AsyncDataStream.ordered_wait_with_retry(
    numbers, EmptyUntilThirdAttempt(), Time.seconds(30), fixed, 4, pairs
)
print(list(ordered.execute_and_collect()))

backoff = ExponentialBackoffDelayRetryStrategy(
    2, 2, 20, 2.0, None, lambda e: exception_type_predicate(e, ConnectionError)
)
unordered = AsyncDataStream.unordered_wait_with_retry(
    numbers, FailsOnce(), Time.seconds(30), backoff, output_type=pairs
)
print(sorted(unordered.execute_and_collect()))

either = FixedDelayRetryStrategy(5, 1, empty_result_predicate, has_exception_predicate)
both = AsyncDataStream.unordered_wait_with_retry(
    numbers, EmptyUntilThirdAttempt(), Time.seconds(30), either, 2, pairs
)
print(sorted(both.execute_and_collect()))
