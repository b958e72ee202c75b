"""AsyncDataStream's API: PyFlink's defaults, what it refuses before a job runs, and the
operator it adds."""

from __future__ import annotations

import pytest

from weir.common import Time, Types
from weir.core.job_graph import OperatorKind
from weir.datastream import AsyncDataStream, StreamExecutionEnvironment
from weir.datastream.async_data_stream import AsyncFunctionDefinitionError
from weir.datastream.async_retry_predicates import (
    EMPTY_RESULT_PREDICATE,
    empty_result_predicate,
)
from weir.datastream.async_retry_strategies import (
    NO_RETRY_STRATEGY,
    FixedDelayRetryStrategy,
)
from weir.datastream.functions import AsyncFunction


class Lookup(AsyncFunction):
    async def async_invoke(self, value):
        return [value]


class Blocking(AsyncFunction):
    def async_invoke(self, value):  # not a coroutine
        return [value]


@pytest.fixture
def stream():
    env = StreamExecutionEnvironment.get_execution_environment()
    return env.from_collection([1, 2, 3], type_info=Types.INT())


def test_unordered_wait_adds_an_async_wait_operator_with_pyflinks_defaults(stream):
    result = AsyncDataStream.unordered_wait(stream, Lookup(), Time.seconds(3))
    t = result._transformation
    assert t.kind is OperatorKind.ASYNC_WAIT
    assert t.name == "async wait operator"
    assert t.payload["capacity"] == 100
    assert t.payload["timeout_ms"] == 3000
    assert t.payload["ordered"] is False
    assert t.payload["retry_strategy"] is None
    assert t.output_type == Types.PICKLED_BYTE_ARRAY()


def test_a_strategy_with_a_predicate_is_kept_and_one_without_is_dropped(stream):
    retrying = FixedDelayRetryStrategy(2, 10, empty_result_predicate, None)
    kept = AsyncDataStream.ordered_wait_with_retry(
        stream, Lookup(), Time.seconds(1), retrying, 5, Types.INT()
    )
    assert kept._transformation.payload["retry_strategy"] is retrying
    assert kept._transformation.payload["ordered"] is True
    assert kept._transformation.output_type == Types.INT()
    idle = FixedDelayRetryStrategy(2, 10, None, None)
    dropped = AsyncDataStream.unordered_wait_with_retry(stream, Lookup(), Time.seconds(1), idle)
    assert dropped._transformation.payload["retry_strategy"] is None


@pytest.mark.parametrize(
    ("call", "message"),
    [
        (lambda s: AsyncDataStream.unordered_wait(s, Blocking(), Time.seconds(1)), "async def"),
        (
            lambda s: AsyncDataStream.ordered_wait_with_retry(s, Lookup(), Time.seconds(1), None),
            "should not be None",
        ),
        (
            lambda s: AsyncDataStream.ordered_wait_with_retry(
                s, Lookup(), Time.seconds(0), FixedDelayRetryStrategy(1, 1, None, None)
            ),
            "Timeout should be configured",
        ),
        (lambda s: AsyncDataStream.ordered_wait(s, Lookup(), Time.seconds(1), 0), "capacity=0"),
        (lambda s: AsyncDataStream.ordered_wait(s, Lookup(), 5), "Time or a Duration"),
    ],
)
def test_what_cannot_run_is_refused_before_the_job_with_a_type_error(stream, call, message):
    with pytest.raises(AsyncFunctionDefinitionError, match=message) as raised:
        call(stream)
    assert isinstance(raised.value, TypeError)


def test_no_retry_without_a_timeout_is_allowed(stream):
    result = AsyncDataStream.ordered_wait_with_retry(
        stream, Lookup(), Time.seconds(0), NO_RETRY_STRATEGY
    )
    assert result._transformation.payload["timeout_ms"] == 0


def test_flinks_predicate_names_are_the_same_predicates():
    assert EMPTY_RESULT_PREDICATE is empty_result_predicate
    assert EMPTY_RESULT_PREDICATE([]) and not EMPTY_RESULT_PREDICATE([0])
