"""Queryable state: read a running job's keyed state from outside the job (Flink's
``org.apache.flink.queryablestate.client``), through the client proxy of the master."""

from weir.queryablestate.client import QueryableStateClient
from weir.queryablestate.immutable_state import (
    ImmutableAggregatingState,
    ImmutableListState,
    ImmutableMapState,
    ImmutableReducingState,
    ImmutableStateError,
    ImmutableValueState,
)

__all__ = [
    "ImmutableAggregatingState",
    "ImmutableListState",
    "ImmutableMapState",
    "ImmutableReducingState",
    "ImmutableStateError",
    "ImmutableValueState",
    "QueryableStateClient",
]
