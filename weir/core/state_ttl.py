"""``StateTtl``: a state's time-to-live as the state backends see it.

The user builds a ``weir.datastream.state.StateTtlConfig`` and sets it on a descriptor;
the descriptor reaches the TaskManager pickled, and ``StateTtl.of_descriptor`` reads
it by its PyFlink method names, so the backends need not import the API package.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

__all__ = ["StateTtl"]


@dataclass(frozen=True, slots=True)
class StateTtl:
    """A value expires ``ttl_ms`` after its last access (processing time).

    ``update_on_read``: reads are accesses too (OnReadAndWrite), not only writes.
    ``return_expired``: a read may still return an expired value it then removes
    (ReturnExpiredIfNotCleanedUp) instead of treating it as absent.
    ``cleanup_full_snapshot``: snapshots leave expired values out.
    """

    ttl_ms: int
    update_on_read: bool = False
    return_expired: bool = False
    cleanup_full_snapshot: bool = False

    def __post_init__(self) -> None:
        if self.ttl_ms <= 0:
            msg = f"a state TTL must be positive; got {self.ttl_ms} ms"
            raise ValueError(msg)

    @staticmethod
    def of_descriptor(descriptor: Any) -> StateTtl | None:
        """The TTL a state descriptor enabled, or None when it has none (or it is disabled)."""
        config = getattr(descriptor, "_ttl_config", None)
        if config is None or not config.is_enabled():
            return None
        characteristic = config.get_ttl_time_characteristic().name
        if characteristic != "ProcessingTime":
            msg = (
                f"state {getattr(descriptor, 'name', descriptor)!r}: TTL in "
                f"{characteristic} is not supported; use processing time "
                "(StateTtlConfig.Builder.use_processing_time())"
            )
            raise ValueError(msg)
        return StateTtl(
            ttl_ms=int(config.get_ttl().to_milliseconds()),
            update_on_read=config.get_update_type().name == "OnReadAndWrite",
            return_expired=(config.get_state_visibility().name == "ReturnExpiredIfNotCleanedUp"),
            cleanup_full_snapshot=config.get_cleanup_strategies().in_full_snapshot(),
        )
