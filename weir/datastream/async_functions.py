"""Async I/O functions (``pyflink.datastream.functions``' async part): ``AsyncFunction``,
whose coroutine ``async_invoke`` looks up an element in an external system, and the retry
strategy and predicate interfaces of ``AsyncDataStream.*_wait_with_retry`` (defined in
``weir.datastream.async_retry_strategies``, beside the strategies their factories make).
``weir.datastream.functions`` re-exports them, where PyFlink programs import them from.

The coroutines of a subtask run on one event loop of their own, in a thread beside the
task's (``weir.taskmanager.operators.async_runner``): an ``async_invoke`` must await
its I/O, never block, or it holds up every other request of the subtask. ``open()``,
``close()`` and ``timeout()`` run on the task thread, as every other user function does.
"""

from __future__ import annotations

import abc
from typing import Generic, TypeVar

from weir.datastream.async_retry_strategies import AsyncRetryPredicate, AsyncRetryStrategy
from weir.datastream.function_base import Function

IN = TypeVar("IN")
OUT = TypeVar("OUT")

__all__ = ["AsyncFunction", "AsyncRetryPredicate", "AsyncRetryStrategy"]


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
