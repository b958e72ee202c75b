"""SlotSharingGroup and MemorySize as PyFlink's, and where a group reaches the graph."""

from __future__ import annotations

import pytest

from weir.datastream import MemorySize, SlotSharingGroup, StreamExecutionEnvironment
from weir.metrics import Counter, Distribution, Meter, Metric, MetricGroup


class TestMemorySize:
    def test_units_and_printing(self):
        size = MemorySize.of_mebi_bytes(1024)
        assert (size.get_bytes(), size.get_kibi_bytes(), size.get_gibi_bytes()) == (
            1 << 30,
            1 << 20,
            1,
        )
        assert [str(MemorySize(bytes_size=b)) for b in (0, 1500, 2048, 100 << 20)] == [
            "0 bytes",
            "1500 bytes",
            "2 kb",
            "100 mb",
        ]
        assert MemorySize.of_mebi_bytes(1) < size and MemorySize(bytes_size=1 << 20) <= size


class TestSlotSharingGroup:
    def test_a_group_with_resources_needs_cpu_and_heap_and_zeroes_the_rest(self):
        group = SlotSharingGroup.builder("g").set_cpu_cores(2).set_task_heap_memory_mb(64).build()
        assert group.get_managed_memory() == MemorySize(bytes_size=0)
        assert group.get_cpu_cores() == 2.0
        with pytest.raises(ValueError, match="cpu cores and task heap memory are required"):
            SlotSharingGroup.builder("g").set_managed_memory_mb(1).build()

    def test_a_plain_group_has_only_its_name(self):
        group = SlotSharingGroup.builder("g").build()
        assert group == SlotSharingGroup.builder("g").build()
        assert group.get_cpu_cores() is None and group.get_external_resources() == {}

    def test_operators_take_its_name(self):
        env = StreamExecutionEnvironment.get_execution_environment()
        group = SlotSharingGroup.builder("heavy").build()
        env.register_slot_sharing_group(group)
        ds = env.from_collection([1]).map(lambda x: x).slot_sharing_group(group)
        assert ds._transformation.slot_sharing_group == "heavy"
        with pytest.raises(TypeError, match="a name or a SlotSharingGroup"):
            ds.slot_sharing_group(3)


def test_the_metric_interfaces_import_and_stay_abstract():
    assert issubclass(Counter, Metric) and issubclass(Meter, Metric)
    assert issubclass(Distribution, Metric)
    for interface in (MetricGroup, Counter, Meter, Distribution):
        with pytest.raises(TypeError):
            interface()
