"""Ready-made retry predicates (mirrors ``pyflink.datastream.async_retry_predicates``),
for ``FixedDelayRetryStrategy`` and ``ExponentialBackoffDelayRetryStrategy``::

    FixedDelayRetryStrategy(3, 100, empty_result_predicate, has_exception_predicate)

``EMPTY_RESULT_PREDICATE`` and ``HAS_EXCEPTION_PREDICATE`` are the same two under the
names Flink's Java ``AsyncRetryPredicates`` gives them.
"""

from __future__ import annotations

from typing import Any

__all__ = [
    "EMPTY_RESULT_PREDICATE",
    "HAS_EXCEPTION_PREDICATE",
    "empty_result_predicate",
    "exception_type_predicate",
    "has_exception_predicate",
]


def empty_result_predicate(result: list[Any] | None) -> bool:
    """Retry a request that returned no result."""
    return result is None or len(result) == 0


def has_exception_predicate(error: BaseException | None) -> bool:
    """Retry a request that raised."""
    return error is not None


def exception_type_predicate(
    error: BaseException | None, expected_error_type: type[BaseException]
) -> bool:
    """Retry a request that raised an ``expected_error_type``; use it in a lambda:
    ``lambda e: exception_type_predicate(e, ConnectionError)``."""
    return isinstance(error, expected_error_type)


EMPTY_RESULT_PREDICATE = empty_result_predicate
HAS_EXCEPTION_PREDICATE = has_exception_predicate
