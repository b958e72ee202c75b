"""Whether a restart can cure a task's failure (Flink's ``ThrowableClassifier``): a failure
is non-recoverable when a ``NonRecoverableError`` is anywhere in its chain of causes. The
task classifies what it raised, the one place where the exception itself (of any class,
user code's included) still exists; the type travels with the failure to the JobMaster,
whose scheduler fails the job at once for a non-recoverable one."""

from __future__ import annotations

import enum

from weir.core.errors import NonRecoverableError

__all__ = ["ThrowableType", "throwable_type"]


class ThrowableType(enum.Enum):
    """Flink's ``ThrowableType``, as far as the scheduler tells them apart."""

    NON_RECOVERABLE_ERROR = "NON_RECOVERABLE_ERROR"
    """No restart can cure it: the job fails whatever its restart strategy allows."""
    RECOVERABLE_ERROR = "RECOVERABLE_ERROR"
    """The restart strategy decides (every other failure)."""


def throwable_type(exc: BaseException) -> ThrowableType:
    """NON_RECOVERABLE_ERROR when ``exc`` or one of its causes is a ``NonRecoverableError``:
    its ``__cause__`` (``raise ... from``) or its ``__context__`` (raised while handling
    it) unless ``raise ... from None`` set that aside."""
    seen: set[int] = set()
    current: BaseException | None = exc
    while current is not None and id(current) not in seen:
        if isinstance(current, NonRecoverableError):
            return ThrowableType.NON_RECOVERABLE_ERROR
        seen.add(id(current))
        if current.__cause__ is not None:
            current = current.__cause__
        else:
            current = None if current.__suppress_context__ else current.__context__
    return ThrowableType.RECOVERABLE_ERROR
