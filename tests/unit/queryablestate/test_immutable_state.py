"""What a query returns: a read-only copy of one key's state, of the descriptor's kind."""

from __future__ import annotations

import pytest

from weir.common import Types
from weir.datastream.state import (
    ListStateDescriptor,
    MapStateDescriptor,
    ReducingStateDescriptor,
    ValueStateDescriptor,
)
from weir.queryablestate import (
    ImmutableListState,
    ImmutableMapState,
    ImmutableReducingState,
    ImmutableStateError,
    ImmutableValueState,
)
from weir.queryablestate.immutable_state import immutable_state


def test_each_descriptor_gets_its_kind_of_state():
    value = immutable_state(ValueStateDescriptor("v", Types.LONG()), 3)
    assert isinstance(value, ImmutableValueState) and value.value() == 3
    listed = immutable_state(ListStateDescriptor("l", Types.INT()), [1, 2])
    assert isinstance(listed, ImmutableListState) and list(listed) == [1, 2]
    mapped = immutable_state(MapStateDescriptor("m", Types.INT(), Types.LONG()), {1: 2})
    assert isinstance(mapped, ImmutableMapState)
    assert mapped.get(1) == 2 and mapped.contains(1) and list(mapped.items()) == [(1, 2)]
    reduced = immutable_state(ReducingStateDescriptor("r", lambda a, b: a + b, None), 7)
    assert isinstance(reduced, ImmutableReducingState) and reduced.get() == 7


def test_writes_are_refused():
    value = immutable_state(ValueStateDescriptor("v", None), 3)
    mapped = immutable_state(MapStateDescriptor("m", None, None), {1: 2})
    listed = immutable_state(ListStateDescriptor("l", None), [1])
    for write in (
        lambda: value.update(4),
        value.clear,
        lambda: mapped.put(1, 3),
        lambda: mapped.remove(1),
        lambda: listed.add(2),
    ):
        with pytest.raises(ImmutableStateError, match="read-only"):
            write()
    assert value.value() == 3 and mapped.get(1) == 2 and list(listed) == [1]


def test_a_descriptor_is_required():
    with pytest.raises(TypeError, match="descriptor"):
        immutable_state(object(), 1)


@pytest.mark.parametrize("address", ["localhost", "localhost:", ":9069", "host:port"])
def test_a_client_address_without_a_port_says_how_to_give_one(address):
    from weir.state import QueryableStateClient

    with pytest.raises(ValueError, match="queryable-state.proxy.ports"):
        QueryableStateClient(address)
