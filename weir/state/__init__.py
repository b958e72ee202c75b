"""Reading state outside a job: ``read_savepoint(path)`` lists a savepoint's operators
and iterates their keyed, list, union list and broadcast state as Python objects;
``QueryableStateClient(address)`` reads a running job's queryable state (it lives in
``weir.queryablestate`` and is loaded, with gRPC, only when asked for)."""

from typing import Any

from weir.state.savepoint_reader import OperatorInfo, SavepointReader, read_savepoint

__all__ = ["OperatorInfo", "QueryableStateClient", "SavepointReader", "read_savepoint"]


def __getattr__(name: str) -> Any:
    if name == "QueryableStateClient":
        from weir.queryablestate.client import QueryableStateClient  # noqa: PLC0415 (lazy)

        return QueryableStateClient
    msg = f"module {__name__!r} has no attribute {name!r}"
    raise AttributeError(msg)
