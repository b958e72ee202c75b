"""Async I/O functions (``pyflink.datastream.functions``' async part): ``AsyncFunction``,
whose coroutine ``async_invoke`` looks up an element in an external system, and the retry
strategy and predicate interfaces of ``AsyncDataStream.*_wait_with_retry``.
``weir.datastream.functions`` re-exports them, where PyFlink programs import them from.

The coroutines of a subtask run on one event loop of their own, in a thread beside the
task's (``weir.taskmanager.operators.async_runner``): an ``async_invoke`` must await
its I/O, never block, or it holds up every other request of the subtask. ``open()``,
``close()`` and ``timeout()`` run on the task thread, as every other user function does.
"""

from __future__ import annotations

import abc
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Generic, TypeVar

from weir.datastream.function_base import Function

if TYPE_CHECKING:
    from weir.datastream.async_retry_strategies import (
        ExponentialBackoffDelayRetryStrategy,
        FixedDelayRetryStrategy,
    )

IN = TypeVar("IN")
OUT = TypeVar("OUT")

__all__ = ["AsyncFunction", "AsyncRetryPredicate", "AsyncRetryStrategy"]


class AsyncRetryPredicate(abc.ABC, Generic[OUT]):
    """When a completed request is tried again: on its results, on its exception, or both."""

    @abc.abstractmethod
    def result_predicate(self) -> Callable[[list[OUT]], bool] | None:
        """A test of a request's results that, when true, triggers another attempt; None
        retries no result."""

    @abc.abstractmethod
    def exception_predicate(self) -> Callable[[Exception], bool] | None:
        """A test of the exception a request raised that, when true, triggers another
        attempt; None retries no exception."""


class AsyncRetryStrategy(abc.ABC, Generic[OUT]):
    """How often and after how long a request is tried again (``async_retry_strategies``
    has PyFlink's three)."""

    @abc.abstractmethod
    def can_retry(self, current_attempts: int) -> bool:
        """Whether another attempt may follow the ``current_attempts`` made (1 after the
        first)."""

    @abc.abstractmethod
    def get_backoff_time_millis(self, current_attempts: int) -> int:
        """How long to wait before the next attempt, in milliseconds."""

    @abc.abstractmethod
    def get_retry_predicate(self) -> AsyncRetryPredicate[OUT]:
        """When to retry."""

    @staticmethod
    def no_restart() -> AsyncRetryStrategy[Any]:
        from weir.datastream import async_retry_strategies  # noqa: PLC0415 (cycle)

        return async_retry_strategies.NO_RETRY_STRATEGY

    @staticmethod
    def fixed_delay(
        max_attempts: int,
        backoff_time_millis: int,
        result_predicate: Callable[[list[OUT]], bool] | None,
        exception_predicate: Callable[[Exception], bool] | None,
    ) -> FixedDelayRetryStrategy[OUT]:
        from weir.datastream.async_retry_strategies import (  # noqa: PLC0415 (cycle)
            FixedDelayRetryStrategy,
        )

        return FixedDelayRetryStrategy(
            max_attempts, backoff_time_millis, result_predicate, exception_predicate
        )

    @staticmethod
    def exponential_backoff(  # noqa: PLR0917 - PyFlink's signature
        max_attempts: int,
        initial_delay: int,
        max_retry_delay: int,
        multiplier: float,
        result_predicate: Callable[[list[OUT]], bool] | None,
        exception_predicate: Callable[[Exception], bool] | None,
    ) -> ExponentialBackoffDelayRetryStrategy[OUT]:
        from weir.datastream.async_retry_strategies import (  # noqa: PLC0415 (cycle)
            ExponentialBackoffDelayRetryStrategy,
        )

        return ExponentialBackoffDelayRetryStrategy(
            max_attempts,
            initial_delay,
            max_retry_delay,
            multiplier,
            result_predicate,
            exception_predicate,
        )


class AsyncFunction(Function, Generic[IN, OUT]):
    """Triggers an asynchronous operation for each element (``AsyncDataStream``).

    ``async_invoke`` is a coroutine that returns the element's results as a list (empty
    for none). Up to the capacity of requests run at once; their elements are part of
    every checkpoint and are requested again after a restore. A request that has not
    completed within the timeout gets ``timeout(value)``'s results instead, whose default
    fails the job::

        class Lookup(AsyncFunction):
            def open(self, runtime_context):
                self.client = SomeAsyncClient()

            async def async_invoke(self, value):
                row = await self.client.get(value)
                return [] if row is None else [(value, row)]
    """

    @abc.abstractmethod
    async def async_invoke(self, value: IN) -> list[OUT]:
        """The results of ``value`` (awaited on the subtask's event loop). Raising fails
        the job, unless the retry strategy retries the exception."""

    def timeout(self, value: IN) -> list[OUT]:
        """The results of a request that timed out (on the task thread). By default the
        job fails."""
        raise TimeoutError("Async function call has timed out for input: " + str(value))
