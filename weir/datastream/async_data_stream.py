"""``AsyncDataStream``: applies an ``AsyncFunction`` to a stream (mirrors
``pyflink.datastream.async_data_stream``), as Flink's ``AsyncWaitOperator`` runs it.

- At most ``capacity`` elements are in flight per subtask; with the queue full the
  subtask reads no more input, which back-pressures its producers.
- ``ordered_wait`` emits the results in the order of the input elements;
  ``unordered_wait`` as the requests complete, but never across a watermark: results of
  elements before a watermark go out before it, those of elements after it after it.
- The elements in flight are part of every checkpoint and are requested again on
  restore, so after a failure no result is lost or duplicated downstream.
- A request still running ``timeout`` after it started gets ``timeout(value)``'s
  results; the default ``timeout`` fails the job. A timeout of zero (or less) never
  times out, which a retry strategy does not allow.
- With a retry strategy, a request whose result or exception satisfies the strategy's
  predicate is tried again after its back-off, until the strategy gives up, the timeout
  fires or the input ends (then each waiting retry is made at once, and is the last).

Each subtask's coroutines run on one event loop of their own (a thread beside the task
thread); results come back to the task thread, which alone emits them.
"""

from __future__ import annotations

import inspect
from typing import Any

from weir.common.typeinfo import TypeInformation
from weir.core.errors import WeirError
from weir.core.job_graph import OperatorKind
from weir.datastream import async_retry_strategies
from weir.datastream.data_stream import DataStream, _output_type
from weir.datastream.functions import AsyncFunction, AsyncRetryStrategy

__all__ = ["AsyncDataStream", "AsyncFunctionDefinitionError"]

_NAME = "async wait operator"


class AsyncFunctionDefinitionError(WeirError, TypeError):
    """An async function, its timeout, capacity or retry strategy cannot be used as given."""


class AsyncDataStream:
    """A helper class to apply an ``AsyncFunction`` to a data stream::

    results = AsyncDataStream.unordered_wait(
        stream, Lookup(), Time.seconds(5), capacity=100, output_type=Types.STRING()
    )
    """

    @staticmethod
    def unordered_wait(
        data_stream: DataStream,
        async_function: AsyncFunction,
        timeout: Any,
        capacity: int = 100,
        output_type: TypeInformation | None = None,
    ) -> DataStream:
        """Adds an async function to the data stream; the results may be reordered, but
        not across watermarks. ``timeout`` is a ``Time`` (or ``Duration``)."""
        return AsyncDataStream.unordered_wait_with_retry(
            data_stream,
            async_function,
            timeout,
            async_retry_strategies.NO_RETRY_STRATEGY,
            capacity,
            output_type,
        )

    @staticmethod
    def unordered_wait_with_retry(  # noqa: PLR0917 - PyFlink's signature
        data_stream: DataStream,
        async_function: AsyncFunction,
        timeout: Any,
        async_retry_strategy: AsyncRetryStrategy,
        capacity: int = 100,
        output_type: TypeInformation | None = None,
    ) -> DataStream:
        """As ``unordered_wait``, retrying requests as ``async_retry_strategy`` says."""
        return _async_wait(
            data_stream,
            async_function,
            timeout,
            retry_strategy=async_retry_strategy,
            capacity=capacity,
            output_type=output_type,
            ordered=False,
        )

    @staticmethod
    def ordered_wait(
        data_stream: DataStream,
        async_function: AsyncFunction,
        timeout: Any,
        capacity: int = 100,
        output_type: TypeInformation | None = None,
    ) -> DataStream:
        """Adds an async function to the data stream; the results keep the order of the
        input elements."""
        return AsyncDataStream.ordered_wait_with_retry(
            data_stream,
            async_function,
            timeout,
            async_retry_strategies.NO_RETRY_STRATEGY,
            capacity,
            output_type,
        )

    @staticmethod
    def ordered_wait_with_retry(  # noqa: PLR0917 - PyFlink's signature
        data_stream: DataStream,
        async_function: AsyncFunction,
        timeout: Any,
        async_retry_strategy: AsyncRetryStrategy,
        capacity: int = 100,
        output_type: TypeInformation | None = None,
    ) -> DataStream:
        """As ``ordered_wait``, retrying requests as ``async_retry_strategy`` says."""
        return _async_wait(
            data_stream,
            async_function,
            timeout,
            retry_strategy=async_retry_strategy,
            capacity=capacity,
            output_type=output_type,
            ordered=True,
        )


def _async_wait(
    data_stream: DataStream,
    async_function: AsyncFunction,
    timeout: Any,
    *,
    retry_strategy: AsyncRetryStrategy | None,
    capacity: int,
    output_type: TypeInformation | list[TypeInformation] | None,
    ordered: bool,
) -> DataStream:
    timeout_ms = _validate(async_function, timeout, retry_strategy, capacity)
    assert retry_strategy is not None  # _validate refused None
    predicate = retry_strategy.get_retry_predicate()
    # As Flink: retries only when the strategy has a predicate to retry on.
    retrying = retry_strategy is not async_retry_strategies.NO_RETRY_STRATEGY and (
        predicate.result_predicate() is not None or predicate.exception_predicate() is not None
    )
    payload = {
        "function": async_function,
        "timeout_ms": timeout_ms,
        "capacity": capacity,
        "ordered": ordered,
        "retry_strategy": retry_strategy if retrying else None,
    }
    return data_stream._one_input(
        OperatorKind.ASYNC_WAIT, _NAME, payload, _output_type(output_type)
    )


def _validate(
    async_function: AsyncFunction,
    timeout: Any,
    retry_strategy: AsyncRetryStrategy | None,
    capacity: int,
) -> int:
    """The timeout in ms, once what PyFlink refuses is refused (with its messages)."""
    if not inspect.iscoroutinefunction(getattr(async_function, "async_invoke", None)):
        msg = (
            f"Method 'async_invoke' of class '{type(async_function)}' should be declared as "
            "'async def'."
        )
        raise AsyncFunctionDefinitionError(msg)
    if retry_strategy is None:
        msg = "Async retry strategy should not be None."
        raise AsyncFunctionDefinitionError(msg)
    to_milliseconds = getattr(timeout, "to_milliseconds", None)
    if to_milliseconds is None:
        msg = (
            f"the timeout of an async function is a Time or a Duration, e.g. Time.seconds(5); "
            f"got {timeout!r}"
        )
        raise AsyncFunctionDefinitionError(msg)
    timeout_ms = int(to_milliseconds())
    if retry_strategy is not async_retry_strategies.NO_RETRY_STRATEGY and timeout_ms <= 0:
        msg = "Timeout should be configured when do async with retry."
        raise AsyncFunctionDefinitionError(msg)
    if retry_strategy.get_retry_predicate() is None:
        msg = f"Retry predicate of the async retry strategy '{type(retry_strategy)}' is None."
        raise AsyncFunctionDefinitionError(msg)
    if not isinstance(capacity, int) or isinstance(capacity, bool) or capacity <= 0:
        msg = (
            "The number of concurrent async operation should be greater than 0; got "
            f"capacity={capacity!r}"
        )
        raise AsyncFunctionDefinitionError(msg)
    return timeout_ms
