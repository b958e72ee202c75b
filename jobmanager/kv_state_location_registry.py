"""KvStateLocationRegistry: where each key group of a job's queryable states is served
(Flink's ``KvStateLocationRegistry``).

Tasks register a queryable state when their operator creates it (``open``); an entry
lives until its execution attempt ends (the JobMaster hears every terminal state) or a
newer attempt of the same subtask registers. Thread-safe: registrations come from the
JobMaster's gRPC threads, lookups from others.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass, field

from weir.core.errors import JobSubmissionError, UnknownKvStateLocationError


class KvStateRegistrationError(JobSubmissionError):
    """Two operators of one job registered the same queryable state name."""


@dataclass(frozen=True, slots=True)
class KvStateLocationEntry:
    """One subtask's part of a queryable state."""

    subtask_index: int
    key_groups: range
    kv_state_id: str
    server_address: str
    attempt_id: str


@dataclass(slots=True)
class KvStateLocation:
    """A queryable state of one operator: its key groups and who serves them."""

    registration_name: str
    operator_id: str
    num_key_groups: int
    key_type: str
    entries: dict[int, KvStateLocationEntry] = field(default_factory=dict)


class KvStateLocationRegistry:
    def __init__(self, job_id: str) -> None:
        self._job_id = job_id
        self._lock = threading.Lock()
        self._locations: dict[str, KvStateLocation] = {}

    def notify_kv_state_registered(
        self,
        *,
        operator_id: str,
        registration_name: str,
        num_key_groups: int,
        key_type: str,
        entry: KvStateLocationEntry,
    ) -> None:
        """Record ``entry`` (a newer attempt of a subtask replaces the older one). Another
        operator already registered under ``registration_name``: KvStateRegistrationError,
        as Flink's "Registration name clash"."""
        with self._lock:
            location = self._locations.get(registration_name)
            if location is not None and location.operator_id != operator_id:
                msg = (
                    f"registration name clash: queryable state {registration_name!r} of job "
                    f"{self._job_id} is registered by operator {location.operator_id} "
                    f"already, and operator {operator_id} registers it too; give each "
                    "queryable state its own name (set_queryable / as_queryable_state)"
                )
                raise KvStateRegistrationError(msg)
            if location is None:
                location = KvStateLocation(registration_name, operator_id, num_key_groups, key_type)
                self._locations[registration_name] = location
            location.entries[entry.subtask_index] = entry

    def attempt_ended(self, attempt_id: str) -> None:
        """Forget what the ended attempt registered: its task no longer serves it."""
        with self._lock:
            for location in self._locations.values():
                ended = [i for i, e in location.entries.items() if e.attempt_id == attempt_id]
                for index in ended:
                    del location.entries[index]

    def location(self, registration_name: str) -> KvStateLocation:
        """A copy of the location of ``registration_name``; UnknownKvStateLocationError
        when no operator registered it (Flink's UnknownKvStateLocation)."""
        with self._lock:
            location = self._locations.get(registration_name)
            if location is None:
                known = ", ".join(sorted(self._locations)) or "none"
                msg = (
                    f"no queryable state named {registration_name!r} in job {self._job_id} "
                    f"(registered: {known}); make a state queryable with "
                    "descriptor.set_queryable(name) or KeyedStream.as_queryable_state(name)"
                )
                raise UnknownKvStateLocationError(msg)
            return KvStateLocation(
                location.registration_name,
                location.operator_id,
                location.num_key_groups,
                location.key_type,
                dict(location.entries),
            )
