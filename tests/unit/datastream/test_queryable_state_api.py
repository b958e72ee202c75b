"""set_queryable and as_queryable_state as Flink has them."""

from __future__ import annotations

import pytest

from weir.common import Time, Types
from weir.datastream import StreamExecutionEnvironment
from weir.datastream.state import (
    ListStateDescriptor,
    ReducingStateDescriptor,
    StateTtlConfig,
    ValueStateDescriptor,
)


def _ttl() -> StateTtlConfig:
    return StateTtlConfig.new_builder(Time.seconds(1)).build()


class TestSetQueryable:
    def test_names_the_state(self):
        descriptor = ValueStateDescriptor("count", Types.LONG())
        assert not descriptor.is_queryable()
        descriptor.set_queryable("counts")
        assert descriptor.is_queryable() and descriptor.get_queryable_state_name() == "counts"
        with pytest.raises(ValueError, match="already"):
            descriptor.set_queryable("again")

    def test_is_refused_with_ttl_either_way(self):
        with_ttl = ValueStateDescriptor("count", Types.LONG())
        with_ttl.enable_time_to_live(_ttl())
        with pytest.raises(ValueError, match="not supported with TTL"):
            with_ttl.set_queryable("counts")
        queryable = ValueStateDescriptor("count", Types.LONG())
        queryable.set_queryable("counts")
        with pytest.raises(ValueError, match="not supported with TTL"):
            queryable.enable_time_to_live(_ttl())


class TestAsQueryableState:
    def _keyed(self):
        env = StreamExecutionEnvironment.get_execution_environment()
        return env.from_collection([1, 2, 3], Types.INT()).key_by(lambda x: x % 2, Types.INT())

    def test_keeps_the_latest_element_in_a_value_state_by_default(self):
        stream = self._keyed().as_queryable_state("latest")
        descriptor = stream.get_state_descriptor()
        assert stream.get_queryable_state_name() == "latest"
        assert isinstance(descriptor, ValueStateDescriptor)
        assert descriptor.get_queryable_state_name() == "latest"

    def test_a_reducing_descriptor_keeps_the_reduction(self):
        descriptor = ReducingStateDescriptor("sum", lambda a, b: a + b, Types.INT())
        stream = self._keyed().as_queryable_state("sums", descriptor)
        assert stream.get_state_descriptor() is descriptor and descriptor.is_queryable()

    def test_there_is_no_queryable_list_sink(self):
        with pytest.raises(TypeError, match="no queryable ListState sink"):
            self._keyed().as_queryable_state("all", ListStateDescriptor("all", Types.INT()))
