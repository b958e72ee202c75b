"""Which task failures no restart can cure (Flink's ThrowableClassifier): a
NonRecoverableError anywhere in the chain of causes, whatever wraps it."""

from __future__ import annotations

import pytest

from weir.core.errors import NonRecoverableError, UserCodeError, WeirError
from weir.core.throwable_classifier import ThrowableType, throwable_type
from weir.datastream.connectors.kafka.errors import (
    KafkaAuthenticationError,
    KafkaConfigurationError,
    KafkaProduceError,
    KafkaTopicNotFoundError,
    KafkaTransactionError,
    KafkaUnreachableError,
)


def _raised(make):
    try:
        make()
    except BaseException as exc:  # the test inspects whatever was raised
        return exc
    raise AssertionError("nothing was raised")


def test_an_error_of_its_own_is_recoverable():
    assert throwable_type(ValueError("bad record")) is ThrowableType.RECOVERABLE_ERROR
    assert throwable_type(WeirError("anything")) is ThrowableType.RECOVERABLE_ERROR


def test_a_non_recoverable_error_is_non_recoverable():
    assert throwable_type(NonRecoverableError("no")) is ThrowableType.NON_RECOVERABLE_ERROR


def test_a_cause_or_context_that_is_non_recoverable_makes_the_failure_so():
    def wrapped():
        try:
            raise NonRecoverableError("refused")
        except NonRecoverableError as exc:
            msg = "user code failed"
            raise UserCodeError(msg) from exc

    def while_handling():
        try:
            raise NonRecoverableError("refused")
        except NonRecoverableError:
            raise RuntimeError("cleanup failed") from None

    def implicit():
        try:
            raise NonRecoverableError("refused")
        except NonRecoverableError:
            raise RuntimeError("cleanup failed")

    assert throwable_type(_raised(wrapped)) is ThrowableType.NON_RECOVERABLE_ERROR
    assert throwable_type(_raised(implicit)) is ThrowableType.NON_RECOVERABLE_ERROR
    # `from None` says the first error is not the cause: it does not count.
    assert throwable_type(_raised(while_handling)) is ThrowableType.RECOVERABLE_ERROR


def test_a_cycle_of_causes_ends():
    first, second = ValueError("a"), ValueError("b")
    first.__cause__, second.__cause__ = second, first
    assert throwable_type(first) is ThrowableType.RECOVERABLE_ERROR


@pytest.mark.parametrize(
    ("error", "expected"),
    [
        (KafkaConfigurationError, ThrowableType.NON_RECOVERABLE_ERROR),
        (KafkaTopicNotFoundError, ThrowableType.NON_RECOVERABLE_ERROR),
        (KafkaAuthenticationError, ThrowableType.NON_RECOVERABLE_ERROR),
        (KafkaUnreachableError, ThrowableType.RECOVERABLE_ERROR),
        (KafkaProduceError, ThrowableType.RECOVERABLE_ERROR),
        (KafkaTransactionError, ThrowableType.RECOVERABLE_ERROR),
    ],
)
def test_kafka_errors_no_restart_cures_are_non_recoverable(error, expected):
    assert throwable_type(error("x")) is expected
