"""The async I/O API's names, defaults and refusals: the retry strategies' arithmetic, the
predicates, and what AsyncDataStream rejects before a job runs."""

from pyflink.common import Time, Types
from pyflink.datastream import (
    AsyncDataStream,
    AsyncFunction,
    StreamExecutionEnvironment,
    async_retry_predicates,
    async_retry_strategies,
)
from pyflink.datastream.functions import AsyncRetryPredicate, AsyncRetryStrategy

strategies = async_retry_strategies
print(sorted(strategies.__all__))
none = strategies.NO_RETRY_STRATEGY
print(type(none).__name__, none.can_retry(0), none.can_retry(1), none.get_backoff_time_millis(1))
predicate = none.get_retry_predicate()
print(
    isinstance(predicate, AsyncRetryPredicate),
    predicate.result_predicate(),
    predicate.exception_predicate(),
)
print(AsyncRetryStrategy.no_restart() is none)

fixed = strategies.FixedDelayRetryStrategy(
    3, 100, async_retry_predicates.empty_result_predicate, None
)
print([fixed.can_retry(n) for n in range(5)], fixed.get_backoff_time_millis(2))
print(
    fixed.get_retry_predicate().result_predicate()([]),
    fixed.get_retry_predicate().result_predicate()([1]),
    fixed.get_retry_predicate().exception_predicate(),
)

exp = AsyncRetryStrategy.exponential_backoff(
    5, 10, 100, 1.5, None, async_retry_predicates.has_exception_predicate
)
print(type(exp).__name__, [exp.get_backoff_time_millis(n) for n in range(1, 8)])
print([exp.get_backoff_time_millis(n) for n in (1, 2, 1, 3)])
print(type(AsyncRetryStrategy.fixed_delay(1, 1, None, None)).__name__)

print(
    async_retry_predicates.empty_result_predicate(None),
    async_retry_predicates.empty_result_predicate([]),
    async_retry_predicates.empty_result_predicate([0]),
)
print(
    async_retry_predicates.has_exception_predicate(None),
    async_retry_predicates.has_exception_predicate(ValueError()),
)
print(
    async_retry_predicates.exception_type_predicate(KeyError(), LookupError),
    async_retry_predicates.exception_type_predicate(KeyError(), ValueError),
)

for bad in [(0, 1), (1, 0)]:
    try:
        strategies.FixedDelayRetryStrategy(bad[0], bad[1], None, None)
    except AssertionError as e:
        print("refused:", e)
try:
    strategies.ExponentialBackoffDelayRetryStrategy(1, 1, 1, 0, None, None)
except AssertionError as e:
    print("refused:", e)


class NotACoroutine(AsyncFunction):
    def async_invoke(self, value):
        return [value]


class Fine(AsyncFunction):
    async def async_invoke(self, value):
        return [value]


print(Fine().timeout.__name__)
try:
    Fine().timeout(7)
except TimeoutError as e:
    print(type(e).__name__, e)

env = StreamExecutionEnvironment.get_execution_environment()
ds = env.from_collection([1, 2], type_info=Types.INT())
try:
    AsyncDataStream.unordered_wait(ds, NotACoroutine(), Time.seconds(1))
except Exception as e:
    print("refused:", str(e).replace("__main__.", ""))
try:
    AsyncDataStream.ordered_wait_with_retry(ds, Fine(), Time.seconds(0), fixed)
except Exception as e:
    print("refused:", e)
try:
    AsyncDataStream.ordered_wait_with_retry(ds, Fine(), Time.seconds(1), None)
except Exception as e:
    print("refused:", e)
ok = AsyncDataStream.ordered_wait_with_retry(ds, Fine(), Time.seconds(0), none)
print(type(ok).__name__, ok.get_name())
