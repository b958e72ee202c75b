"""``SlotSharingGroup`` and ``MemorySize``, as ``pyflink.datastream.slot_sharing_group``.

A group's name decides which operators may share a slot, as everywhere in Weir. The
resources a group may specify (CPU cores, memory, external resources) are kept and read
back, but not used: a TaskManager has one slot per Python worker, sized by Spark.
"""

from __future__ import annotations

from dataclasses import dataclass, field

__all__ = ["MemorySize", "SlotSharingGroup"]

_UNITS = ((1 << 40, "tb"), (1 << 30, "gb"), (1 << 20, "mb"), (1 << 10, "kb"))


class MemorySize:
    """An amount of memory in bytes (Flink's ``MemorySize``)::

    >>> str(MemorySize.of_mebi_bytes(1024))
    '1 gb'
    """

    def __init__(self, j_memory_size: object = None, bytes_size: int | None = None) -> None:
        # PyFlink's first argument wraps a JVM object; there is none here.
        if bytes_size is None:
            bytes_size = int(getattr(j_memory_size, "get_bytes", lambda: 0)())
        if bytes_size < 0:
            msg = f"a memory size cannot be negative; got {bytes_size} bytes"
            raise ValueError(msg)
        self._bytes = int(bytes_size)

    @staticmethod
    def of_mebi_bytes(mebi_bytes: int) -> MemorySize:
        return MemorySize(bytes_size=mebi_bytes << 20)

    def get_bytes(self) -> int:
        return self._bytes

    def get_kibi_bytes(self) -> int:
        return self._bytes >> 10

    def get_mebi_bytes(self) -> int:
        return self._bytes >> 20

    def get_gibi_bytes(self) -> int:
        return self._bytes >> 30

    def get_tebi_bytes(self) -> int:
        return self._bytes >> 40

    def __eq__(self, other: object) -> bool:
        return isinstance(other, MemorySize) and other._bytes == self._bytes

    def __hash__(self) -> int:
        return hash(self._bytes)

    def __lt__(self, other: MemorySize) -> bool:
        return self._bytes < other._bytes

    def __le__(self, other: MemorySize) -> bool:
        return self._bytes <= other._bytes

    def __str__(self) -> str:
        """Flink's: in the largest unit that divides it exactly ("100 mb", "1500 bytes")."""
        for size, unit in _UNITS:
            if self._bytes and self._bytes % size == 0:
                return f"{self._bytes // size} {unit}"
        return f"{self._bytes} bytes"


@dataclass(frozen=True)
class SlotSharingGroup:
    """A slot sharing group's name and, optionally, the resources it asks for::

    >>> group = SlotSharingGroup.builder("heavy").set_cpu_cores(1.0) \\
    ...     .set_task_heap_memory_mb(512).build()
    >>> ds.map(parse).slot_sharing_group(group)
    """

    name: str
    cpu_cores: float | None = None
    task_heap_memory: MemorySize | None = None
    task_off_heap_memory: MemorySize | None = None
    managed_memory: MemorySize | None = None
    external_resources: dict[str, float] = field(default_factory=dict)

    def get_name(self) -> str:
        return self.name

    def get_managed_memory(self) -> MemorySize | None:
        return self.managed_memory

    def get_task_heap_memory(self) -> MemorySize | None:
        return self.task_heap_memory

    def get_task_off_heap_memory(self) -> MemorySize | None:
        return self.task_off_heap_memory

    def get_cpu_cores(self) -> float | None:
        return self.cpu_cores

    def get_external_resources(self) -> dict[str, float]:
        return dict(self.external_resources)

    def __hash__(self) -> int:
        return hash((self.name, self.cpu_cores, self.task_heap_memory))

    @staticmethod
    def builder(name: str) -> SlotSharingGroup.Builder:
        return SlotSharingGroup.Builder(name)

    class Builder:
        """Builds a SlotSharingGroup; every setter returns the builder."""

        def __init__(self, name: str) -> None:
            self._name = name
            self._cpu_cores: float | None = None
            self._task_heap: MemorySize | None = None
            self._task_off_heap: MemorySize | None = None
            self._managed: MemorySize | None = None
            self._external: dict[str, float] = {}

        def set_cpu_cores(self, cpu_cores: float) -> SlotSharingGroup.Builder:
            if cpu_cores <= 0:
                msg = f"the cpu cores of a slot sharing group must be positive; got {cpu_cores}"
                raise ValueError(msg)
            self._cpu_cores = float(cpu_cores)
            return self

        def set_task_heap_memory(self, task_heap_memory: MemorySize) -> SlotSharingGroup.Builder:
            self._task_heap = task_heap_memory
            return self

        def set_task_heap_memory_mb(self, task_heap_memory_mb: int) -> SlotSharingGroup.Builder:
            return self.set_task_heap_memory(MemorySize.of_mebi_bytes(task_heap_memory_mb))

        def set_task_off_heap_memory(
            self, task_off_heap_memory: MemorySize
        ) -> SlotSharingGroup.Builder:
            self._task_off_heap = task_off_heap_memory
            return self

        def set_task_off_heap_memory_mb(
            self, task_off_heap_memory_mb: int
        ) -> SlotSharingGroup.Builder:
            return self.set_task_off_heap_memory(MemorySize.of_mebi_bytes(task_off_heap_memory_mb))

        def set_managed_memory(self, managed_memory: MemorySize) -> SlotSharingGroup.Builder:
            self._managed = managed_memory
            return self

        def set_managed_memory_mb(self, managed_memory_mb: int) -> SlotSharingGroup.Builder:
            return self.set_managed_memory(MemorySize.of_mebi_bytes(managed_memory_mb))

        def set_external_resource(self, name: str, value: float) -> SlotSharingGroup.Builder:
            self._external[name] = float(value)
            return self

        def build(self) -> SlotSharingGroup:
            """As Flink's: a group with resources needs its cpu cores and task heap memory;
            the memory left out is then zero."""
            if self._cpu_cores is not None and self._task_heap is not None:
                zero = MemorySize(bytes_size=0)
                return SlotSharingGroup(
                    self._name,
                    self._cpu_cores,
                    self._task_heap,
                    self._task_off_heap or zero,
                    self._managed or zero,
                    dict(self._external),
                )
            if (
                self._cpu_cores is not None
                or self._task_heap is not None
                or self._task_off_heap is not None
                or self._managed is not None
                or self._external
            ):
                msg = (
                    "The cpu cores and task heap memory are required when specifying the "
                    "resource of a slot sharing group. You need to explicitly configure them "
                    "with positive value."
                )
                raise ValueError(msg)
            return SlotSharingGroup(self._name)
