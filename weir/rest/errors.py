"""The REST API's errors: what a handler raises to answer with Flink's
``{"errors": [...]}`` and a status code, and the status of each Weir error."""

from __future__ import annotations

from weir.core import errors

__all__ = ["RestHandlerError", "status_of"]


class RestHandlerError(errors.WeirError):
    """An answer other than success: Flink's ``RestHandlerException``, sent as
    ``{"errors": [message]}`` with ``status``."""

    def __init__(self, message: str, status: int) -> None:
        super().__init__(message)
        self.status = status


# Weir errors a handler lets through, by the status they are answered with; the first
# class that matches wins. Anything else is a 500 with its message.
_STATUS: list[tuple[type[BaseException], int]] = [
    (RestHandlerError, 0),
    (errors.JobNotFoundError, 404),
    (errors.InvalidJobIdError, 400),
    (errors.ConfigurationError, 400),
    (errors.InvalidRequestError, 400),
    (errors.JobGraphError, 400),
    (errors.JobSubmissionError, 400),
    (errors.ServiceUnavailableError, 503),
    (errors.RemoteTimeoutError, 504),
]


def status_of(exc: BaseException) -> int:
    for cls, status in _STATUS:
        if isinstance(exc, cls):
            return exc.status if isinstance(exc, RestHandlerError) else status
    return 500
