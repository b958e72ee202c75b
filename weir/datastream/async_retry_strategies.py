"""The retry strategies of ``AsyncDataStream.*_wait_with_retry`` (mirrors
``pyflink.datastream.async_retry_strategies``): none, a fixed delay, and an exponential
back-off. ``max_attempts`` counts the retries after the first attempt, as Flink's
strategies do: ``can_retry(n)`` holds while ``n <= max_attempts``.

Here too are the interfaces they implement, ``AsyncRetryStrategy`` (whose factories make
them) and ``AsyncRetryPredicate``; PyFlink programs import those from
``weir.datastream.functions``.

The task calls a strategy on the task thread only, once per decision: an exponential
back-off keeps the last delay it returned, across every element of the subtask, as
PyFlink's does.
"""

from __future__ import annotations

import abc
from collections.abc import Callable
from typing import Any, Generic, TypeVar

# PyFlink's names only: the interfaces are exported where PyFlink has them, in
# weir.datastream.functions.
__all__ = [
    "ExponentialBackoffDelayRetryStrategy",
    "FixedDelayRetryStrategy",
    "NoRetryStrategy",
    "RetryPredicate",
]

OUT = TypeVar("OUT")

ResultPredicate = Callable[[list[OUT]], bool]
ExceptionPredicate = Callable[[Exception], bool]


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
    """How often and after how long a request is tried again (PyFlink's three are below)."""

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
        return NO_RETRY_STRATEGY

    @staticmethod
    def fixed_delay(
        max_attempts: int,
        backoff_time_millis: int,
        result_predicate: Callable[[list[OUT]], bool] | None,
        exception_predicate: Callable[[Exception], bool] | None,
    ) -> FixedDelayRetryStrategy[OUT]:
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
        return ExponentialBackoffDelayRetryStrategy(
            max_attempts,
            initial_delay,
            max_retry_delay,
            multiplier,
            result_predicate,
            exception_predicate,
        )


class RetryPredicate(AsyncRetryPredicate[OUT], Generic[OUT]):
    """The two optional predicates a strategy retries on."""

    def __init__(
        self,
        result_predicate: ResultPredicate[OUT] | None,
        exception_predicate: ExceptionPredicate | None,
    ) -> None:
        self._result_predicate = result_predicate
        self._exception_predicate = exception_predicate

    def result_predicate(self) -> ResultPredicate[OUT] | None:
        return self._result_predicate

    def exception_predicate(self) -> ExceptionPredicate | None:
        return self._exception_predicate


class NoRetryStrategy(AsyncRetryStrategy[OUT], Generic[OUT]):
    """Never retries (``NO_RETRY_STRATEGY``)."""

    def can_retry(self, current_attempts: int) -> bool:
        return False

    def get_backoff_time_millis(self, current_attempts: int) -> int:
        return -1

    def get_retry_predicate(self) -> AsyncRetryPredicate[OUT]:
        return RetryPredicate(None, None)


class FixedDelayRetryStrategy(AsyncRetryStrategy[OUT], Generic[OUT]):
    """Up to ``max_attempts`` retries, ``backoff_time_millis`` apart."""

    def __init__(
        self,
        max_attempts: int,
        backoff_time_millis: int,
        result_predicate: ResultPredicate[OUT] | None,
        exception_predicate: ExceptionPredicate | None,
    ) -> None:
        # AssertionErrors, with PyFlink's messages: programs written for it catch those.
        assert max_attempts > 0, "max_attempts should be greater than zero."
        assert backoff_time_millis > 0, "backoff_time_millis should be greater than zero."
        self._max_attempts = max_attempts
        self._backoff_time_millis = backoff_time_millis
        self._predicate = RetryPredicate(result_predicate, exception_predicate)

    def can_retry(self, current_attempts: int) -> bool:
        return current_attempts <= self._max_attempts

    def get_backoff_time_millis(self, current_attempts: int) -> int:
        return self._backoff_time_millis

    def get_retry_predicate(self) -> AsyncRetryPredicate[OUT]:
        return self._predicate


class ExponentialBackoffDelayRetryStrategy(AsyncRetryStrategy[OUT], Generic[OUT]):
    """Up to ``max_attempts`` retries, the first after ``initial_delay`` ms, each next one
    ``multiplier`` times later than the one before, at most ``max_retry_delay`` ms."""

    def __init__(  # noqa: PLR0917 - PyFlink's signature
        self,
        max_attempts: int,
        initial_delay: int,
        max_retry_delay: int,
        multiplier: float,
        result_predicate: ResultPredicate[OUT] | None,
        exception_predicate: ExceptionPredicate | None,
    ) -> None:
        assert max_attempts > 0, "max_attempts should be greater than zero."
        assert initial_delay > 0, "initial_delay should be greater than zero."
        assert max_retry_delay > 0, "max_retry_delay should be greater than zero."
        assert multiplier > 0, "multiplier should be greater than zero."
        self._max_attempts = max_attempts
        self._initial_delay = initial_delay
        self._max_retry_delay = max_retry_delay
        self._multiplier = multiplier
        self._last_retry_delay = initial_delay
        self._predicate = RetryPredicate(result_predicate, exception_predicate)

    def can_retry(self, current_attempts: int) -> bool:
        return current_attempts <= self._max_attempts

    def get_backoff_time_millis(self, current_attempts: int) -> int:
        if current_attempts <= 1:
            self._last_retry_delay = self._initial_delay
            return self._last_retry_delay
        backoff = int(min(self._last_retry_delay * self._multiplier, self._max_retry_delay))
        self._last_retry_delay = backoff
        return backoff

    def get_retry_predicate(self) -> AsyncRetryPredicate[OUT]:
        return self._predicate


NO_RETRY_STRATEGY: AsyncRetryStrategy = NoRetryStrategy()
