"""One leadership per master process, elected through a lease in the cluster's ConfigMap
(Flink's ``KubernetesLeaderElector``, client-go's ``leaderelection`` with a ConfigMap
lock), and the fenced writes of its leader. While the process leads, its Dispatcher,
ResourceManager and JobMasters are leaders with one fencing token, the lease's holder
identity: a random id of this leadership, new at each acquisition.

The lease is the annotation ``control-plane.alpha.kubernetes.io/leader`` of the ConfigMap,
in client-go's format::

    {"holderIdentity": "<token>", "leaseDurationSeconds": 15,
     "acquireTime": "...Z", "renewTime": "...Z", "leaderTransitions": 3}

* A standby reads it every retry period. It takes the lease (a compare-and-swap on the
  ConfigMap's ``resourceVersion``) when nobody holds it, or when it has seen it unchanged
  for the lease duration by its own clock (client-go's observed time: the masters' clocks
  need not agree). Taking it removes the former leader's published addresses.
* The leader renews it every retry period. It leads while its last successful renewal
  began less than the renew deadline ago, by its own monotonic clock, which runs on while
  the process is paused: ``has_leadership`` turns False by itself at the deadline, before
  any thread has run. A renewal that finds another holder ends the leadership at once.
  The renew deadline is at most the lease duration, so the leader stops leading no later
  than a standby may take over.
* ``guarded_update`` is every write a leader makes to the ConfigMap: read it, check that
  the lease names this leadership and that the leadership is still valid here, change the
  data, and write it back only if the ConfigMap is unchanged since the read
  (``resourceVersion``). A deposed leader's write fails in the API server itself, whatever
  its own threads believe: the successor's acquisition changed the ConfigMap.
* ``stop`` gives the leadership up (the listeners are told) and releases the lease (an
  empty holder), so that a standby takes over at its next attempt.

Threading: the elector's own thread takes, renews and releases the lease and does nothing
else, so that no listener can delay a renewal. Grants and revocations are told on another
thread of the elector's, one at a time and in order; ``add_listener`` tells a listener
added during a leadership at once, on the caller's thread (as the ZooKeeper latch does).
"""

from __future__ import annotations

import datetime
import json
import logging
import math
import threading
import time
import uuid
from collections.abc import Callable, Mapping
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, replace

from weir.core.errors import LeaderLostError, PossibleInconsistentStateError
from weir.core.highavailability.kubernetes.api_client import (
    ConfigMap,
    KubernetesApiClient,
    KubernetesApiError,
    KubernetesConflictError,
    KubernetesUnavailableError,
)

logger = logging.getLogger(__name__)

LEADER_ANNOTATION = "control-plane.alpha.kubernetes.io/leader"
LEADER_KEY_PREFIX = "leader."
"""Data keys ``leader.<component>`` hold the published address of each leader."""

LeadershipListener = Callable[[str | None], None]
"""Called with the fencing token when leadership is granted, None when revoked."""

DataUpdate = Callable[[dict[str, str]], "dict[str, str] | None"]
"""Given a copy of the ConfigMap's data, the data to write, or None to write nothing."""

# A request of the elector's waits at most this long for its answer even with time to
# spare: a standby retries at its next period, a leader at its next renewal.
_MIN_REQUEST_TIMEOUT_S = 0.2
# How long ``stop`` waits for the listeners to hear of the revocation.
_STOP_NOTIFY_WAIT_S = 30.0


@dataclass(frozen=True, slots=True)
class LeaderRecord:
    holder_identity: str
    lease_duration_s: int
    acquire_time: str
    renew_time: str
    leader_transitions: int

    def encode(self) -> str:
        return json.dumps(
            {
                "holderIdentity": self.holder_identity,
                "leaseDurationSeconds": self.lease_duration_s,
                "acquireTime": self.acquire_time,
                "renewTime": self.renew_time,
                "leaderTransitions": self.leader_transitions,
            },
            separators=(",", ":"),
        )

    @classmethod
    def decode(cls, text: str | None) -> LeaderRecord | None:
        if not text:
            return None
        try:
            raw = json.loads(text)
            return cls(
                holder_identity=str(raw.get("holderIdentity") or ""),
                lease_duration_s=int(raw.get("leaseDurationSeconds") or 0),
                acquire_time=str(raw.get("acquireTime") or ""),
                renew_time=str(raw.get("renewTime") or ""),
                leader_transitions=int(raw.get("leaderTransitions") or 0),
            )
        except (ValueError, TypeError, AttributeError):
            logger.warning("ignoring an unreadable leader annotation %r", text[:200])
            return None


def holder_of(config_map: ConfigMap | None) -> str:
    """The holder identity of the lease (a leadership's fencing token); empty when free."""
    if config_map is None:
        return ""
    record = LeaderRecord.decode(config_map.annotations.get(LEADER_ANNOTATION))
    return record.holder_identity if record else ""


def _now_rfc3339() -> str:
    now = datetime.datetime.now(datetime.UTC)
    return now.strftime("%Y-%m-%dT%H:%M:%S.%fZ")


class _Deposed(Exception):
    """The lease names another holder: this leadership is over."""


@dataclass(frozen=True, slots=True)
class ConfigMapRef:
    namespace: str
    name: str
    labels: Mapping[str, str]


class KubernetesLeaderElector:
    """``lease_duration_s``, ``renew_deadline_s``, ``retry_period_s``: see the module
    docstring (and the ``high-availability.kubernetes.leader-election.*`` keys);
    ``max_retries``: compare-and-swap attempts of one write; ``clock``: monotonic seconds."""

    def __init__(
        self,
        client: KubernetesApiClient,
        config_map: ConfigMapRef,
        identifier: str,
        *,
        lease_duration_s: float,
        renew_deadline_s: float,
        retry_period_s: float,
        max_retries: int = 5,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._client = client
        self.config_map = config_map
        self._identifier = identifier
        self._lease_duration_s = lease_duration_s
        self._renew_deadline_s = renew_deadline_s
        self._retry_period_s = retry_period_s
        self._max_retries = max_retries
        self._clock = clock
        self._lock = threading.Lock()
        self._changed = threading.Condition(self._lock)
        self._token: str | None = None
        self._valid_until = 0.0
        self._stopped = False
        self._listeners: list[LeadershipListener] = []
        self._observed: tuple[str | None, float] = (None, 0.0)
        """The lease annotation as last seen, and when (by ``clock``) it was first seen."""
        self._last_problem = ""
        self._thread: threading.Thread | None = None
        self._events = ThreadPoolExecutor(1, thread_name_prefix="weir-leader-elector-events")
        self._last_event: Future[None] | None = None
        self.leaderships = 0
        """How many times this elector became leader (for tests and logs)."""

    # -- lifecycle ---------------------------------------------------------------------
    def start(self) -> None:
        self._thread = threading.Thread(target=self._run, daemon=True, name="weir-leader-elector")
        self._thread.start()

    def stop(self) -> None:
        """Leave the election; a leader gives up its leadership (listeners are told, and
        have been by the time this returns) and releases the lease."""
        with self._changed:
            self._stopped = True
            self._changed.notify_all()
        if self._thread is not None:
            self._thread.join(timeout=self._renew_deadline_s + _STOP_NOTIFY_WAIT_S)
        last = self._last_event
        if last is not None:
            try:
                last.result(timeout=_STOP_NOTIFY_WAIT_S)
            except TimeoutError:
                logger.warning(
                    "a leadership listener did not return within %.0f s", _STOP_NOTIFY_WAIT_S
                )
        self._events.shutdown(wait=False)

    def add_listener(self, listener: LeadershipListener) -> None:
        with self._lock:
            self._listeners.append(listener)
            token = self._token
        if token is not None:
            listener(token)

    def remove_listener(self, listener: LeadershipListener) -> None:
        with self._lock:
            if listener in self._listeners:
                self._listeners.remove(listener)

    # -- queries -----------------------------------------------------------------------
    @property
    def token(self) -> str | None:
        with self._lock:
            return self._token

    def has_leadership(self, token: str) -> bool:
        with self._lock:
            return token == self._token and self._clock() < self._valid_until

    def await_leadership(self, timeout: float | None = None) -> str | None:
        """The fencing token once this process leads; None at the timeout or on stop."""
        with self._changed:
            self._changed.wait_for(lambda: self._token is not None or self._stopped, timeout)
            return self._token

    def await_revocation(self, timeout: float | None = None) -> bool:
        """True once leadership is gone (given up, or stop)."""
        with self._changed:
            return self._changed.wait_for(lambda: self._token is None, timeout)

    def confirm(self, token: str) -> bool:
        """Ask the API server, now, whether the lease still names leadership ``token`` (a
        paused leader's view of itself may be stale)."""
        if not self.has_leadership(token):
            return False
        try:
            current = self._client.get_config_map(
                self.config_map.namespace, self.config_map.name, timeout_s=self._remaining(token)
            )
        except KubernetesApiError:
            return False
        return holder_of(current) == token and self.has_leadership(token)

    def read(self) -> ConfigMap | None:
        """The ConfigMap as the API server has it now (anyone may read)."""
        return self._client.get_config_map(self.config_map.namespace, self.config_map.name)

    # -- fenced writes -----------------------------------------------------------------
    def guarded_update(self, token: str, update: DataUpdate) -> dict[str, str]:
        """Change the ConfigMap's data as ``update`` says, only while leadership ``token``
        holds the lease, by compare-and-swap (the module docstring). Returns the data now
        in the ConfigMap. Raises LeaderLostError when the leadership is over (in this
        process's view or the API server's), or after ``max_retries`` compare-and-swaps
        lost to other writers; PossibleInconsistentStateError when the write was sent but
        its answer lost (it may have been applied). ``update`` may raise; it may be called
        several times, each with the data as then read."""
        ref = self.config_map
        for _ in range(self._max_retries + 1):
            self._check_valid(token)
            try:
                current = self._client.get_config_map(
                    ref.namespace, ref.name, timeout_s=self._remaining(token)
                )
            except KubernetesApiError as exc:
                msg = f"the HA ConfigMap {ref.name} cannot be read ({exc}); nothing written"
                raise LeaderLostError(msg) from exc
            if current is None or holder_of(current) != token:
                msg = (
                    f"the API server refused a write of leader session {token[:8]}: the lease "
                    f"in ConfigMap {ref.namespace}/{ref.name} names another holder; nothing "
                    "written"
                )
                raise LeaderLostError(msg)
            data = update(dict(current.data))
            if data is None:
                return dict(current.data)
            self._check_valid(token)
            try:
                written = self._client.replace_config_map(
                    replace(current, data=data), timeout_s=self._remaining(token)
                )
            except KubernetesConflictError:
                continue  # renewed or written since the read: read and check again
            except KubernetesUnavailableError as exc:
                if exc.maybe_applied:
                    msg = (
                        f"a fenced write to ConfigMap {ref.name} lost its answer ({exc}): it "
                        "may or may not be applied"
                    )
                    raise PossibleInconsistentStateError(msg) from exc
                msg = f"a fenced write to ConfigMap {ref.name} failed ({exc}); nothing written"
                raise LeaderLostError(msg) from exc
            except KubernetesApiError as exc:
                msg = f"a fenced write to ConfigMap {ref.name} was refused: {exc}"
                raise LeaderLostError(msg) from exc
            return dict(written.data)
        msg = (
            f"a fenced write to ConfigMap {ref.name} found it changed by other writers "
            f"{self._max_retries + 1} times in a row (kubernetes.transactional-operation."
            "max-retries); nothing written"
        )
        raise LeaderLostError(msg)

    def _check_valid(self, token: str) -> None:
        if not self.has_leadership(token):
            msg = f"this master no longer leads (leader session {token[:8]}); nothing written"
            raise LeaderLostError(msg)

    def _remaining(self, token: str) -> float:
        """A request of leadership ``token`` waits for its answer at most until the
        leadership would end."""
        with self._lock:
            left = self._valid_until - self._clock() if token == self._token else 0.0
        return max(_MIN_REQUEST_TIMEOUT_S, min(left, self._renew_deadline_s))

    # -- the election ------------------------------------------------------------------
    def _run(self) -> None:
        while self._await_acquisition():
            self._lead()

    def _wait(self, seconds: float) -> bool:
        """Sleep up to ``seconds`` unless stopped; True when stopped."""
        with self._changed:
            self._changed.wait_for(lambda: self._stopped, max(0.0, seconds))
            return self._stopped

    def _await_acquisition(self) -> bool:
        """As a standby, try to take the lease every retry period; True once taken, False
        when stopped first."""
        candidate = uuid.uuid4().hex
        while True:
            with self._lock:
                if self._stopped:
                    return False
            began = self._clock()
            try:
                acquired = self._try_acquire_or_renew(candidate, self._renew_deadline_s)
            except KubernetesApiError as exc:
                self._problem(f"cannot reach the lease: {exc}")
                acquired = False
            if acquired:
                with self._changed:
                    if self._stopped:
                        stopped = True
                    else:
                        stopped = False
                        self._token = candidate
                        self._valid_until = began + self._renew_deadline_s
                        self.leaderships += 1
                        listeners = list(self._listeners)
                        self._changed.notify_all()
                if stopped:
                    self._release(candidate)
                    return False
                self._problem("")
                logger.info(
                    "this master (%s) is now the leader, session %s (lease in ConfigMap %s/%s)",
                    self._identifier,
                    candidate,
                    self.config_map.namespace,
                    self.config_map.name,
                )
                self._tell(listeners, candidate)
                return True
            if self._wait(self._retry_period_s - (self._clock() - began)):
                return False

    def _lead(self) -> None:
        """Renew the lease every retry period until the leadership ends or stop."""
        with self._lock:
            token = self._token
            valid_until = self._valid_until
        assert token is not None
        next_attempt = valid_until - self._renew_deadline_s + self._retry_period_s
        reason = ""
        while True:
            if self._wait(next_attempt - self._clock()):
                break
            began = self._clock()
            try:
                renewed = self._try_acquire_or_renew(token, max(0.0, valid_until - began))
            except _Deposed as exc:
                reason = str(exc)
                break
            except KubernetesApiError as exc:
                self._problem(f"cannot renew the lease: {exc}")
                renewed = False
            if renewed:
                self._problem("")
                valid_until = began + self._renew_deadline_s
                with self._lock:
                    self._valid_until = valid_until
                next_attempt = began + self._retry_period_s
            elif self._clock() >= valid_until:
                reason = (
                    f"the lease was not renewed for the renew deadline "
                    f"({self._renew_deadline_s * 1000:.0f} ms by this master's clock)"
                )
                break
            else:
                next_attempt = began + self._retry_period_s
        with self._changed:
            self._token = None
            self._valid_until = 0.0
            listeners = list(self._listeners)
            stopped = self._stopped
            self._changed.notify_all()
        if stopped:
            logger.info("leaving the election: giving up leadership session %s", token[:8])
        else:
            logger.error(
                "leadership session %s lost: %s; jobs resume under the next leader, and this "
                "master contends again",
                token[:8],
                reason,
            )
        self._tell(listeners, None)
        if stopped:
            self._release(token)

    def _try_acquire_or_renew(self, candidate: str, timeout_s: float) -> bool:
        """One attempt to take or renew the lease for ``candidate``; raises _Deposed when
        ``candidate`` leads but the lease names another holder (or is gone)."""
        ref = self.config_map
        timeout = max(_MIN_REQUEST_TIMEOUT_S, min(timeout_s, self._renew_deadline_s))
        leading = self.token == candidate
        for _ in range(self._max_retries + 1):
            current = self._client.get_config_map(ref.namespace, ref.name, timeout_s=timeout)
            now = _now_rfc3339()
            record = LeaderRecord(
                holder_identity=candidate,
                lease_duration_s=math.ceil(self._lease_duration_s),
                acquire_time=now,
                renew_time=now,
                leader_transitions=0,
            )
            if current is None:
                if leading:
                    msg = f"the ConfigMap {ref.namespace}/{ref.name} holding the lease was deleted"
                    raise _Deposed(msg)
                created = ConfigMap(
                    namespace=ref.namespace,
                    name=ref.name,
                    labels=dict(ref.labels),
                    annotations={LEADER_ANNOTATION: record.encode()},
                )
                try:
                    self._client.create_config_map(created, timeout_s=timeout)
                except KubernetesConflictError:
                    return False  # another master created it first
                self._observe(record.encode())
                return True
            raw = current.annotations.get(LEADER_ANNOTATION)
            observed_at = self._observe(raw)
            old = LeaderRecord.decode(raw)
            holder = old.holder_identity if old else ""
            if holder and holder != candidate:
                if leading:
                    msg = f"the lease names another holder (session {holder[:8]})"
                    raise _Deposed(msg)
                assert old is not None
                if self._clock() < observed_at + old.lease_duration_s:
                    return False  # held, and renewed within the lease as far as we know
            data = dict(current.data)
            if holder == candidate and old is not None:
                record = replace(
                    record,
                    acquire_time=old.acquire_time,
                    leader_transitions=old.leader_transitions,
                )
            else:
                record = replace(
                    record, leader_transitions=(old.leader_transitions + 1) if old else 0
                )
                # The former leader's published addresses go with its lease.
                data = {k: v for k, v in data.items() if not k.startswith(LEADER_KEY_PREFIX)}
            annotations = {**current.annotations, LEADER_ANNOTATION: record.encode()}
            try:
                self._client.replace_config_map(
                    replace(current, annotations=annotations, data=data), timeout_s=timeout
                )
            except KubernetesConflictError:
                if not leading:
                    return False  # another standby or a write came first: next period
                continue  # the leader's own writes moved it on: read and renew again
            self._observe(record.encode())
            return True
        return False

    def _observe(self, raw: str | None) -> float:
        """Note the lease annotation as read now; returns when it was first seen so."""
        with self._lock:
            seen = self._observed[0]
            if raw != seen:
                self._observed = (raw, self._clock())
            return self._observed[1]

    def _release(self, token: str) -> None:
        """Let go of the lease (an empty holder), removing this leadership's addresses:
        a standby takes it at its next attempt instead of after the lease duration."""
        ref = self.config_map
        try:
            for _ in range(self._max_retries + 1):
                current = self._client.get_config_map(
                    ref.namespace, ref.name, timeout_s=self._retry_period_s
                )
                if current is None or holder_of(current) != token:
                    return
                old = LeaderRecord.decode(current.annotations.get(LEADER_ANNOTATION))
                assert old is not None
                released = replace(
                    old, holder_identity="", lease_duration_s=1, renew_time=_now_rfc3339()
                )
                data = {
                    k: v
                    for k, v in current.data.items()
                    if not (k.startswith(LEADER_KEY_PREFIX) and token in v)
                }
                annotations = {**current.annotations, LEADER_ANNOTATION: released.encode()}
                try:
                    self._client.replace_config_map(
                        replace(current, annotations=annotations, data=data),
                        timeout_s=self._retry_period_s,
                    )
                except KubernetesConflictError:
                    continue
                logger.info("lease released: a standby takes over at its next attempt")
                return
        except KubernetesApiError as exc:
            logger.warning(
                "the lease could not be released (%s); a standby takes over once it expires",
                exc,
            )

    def _tell(self, listeners: list[LeadershipListener], token: str | None) -> None:
        self._last_event = self._events.submit(_notify, listeners, token)

    def _problem(self, text: str) -> None:
        """Log a problem with the API server once, and once more when it is over."""
        if text == self._last_problem:
            return
        if text:
            logger.warning(
                "leader election: %s; trying again every %.1f s", text, self._retry_period_s
            )
        else:
            logger.info("leader election: the API server answers again")
        self._last_problem = text


def _notify(listeners: list[LeadershipListener], token: str | None) -> None:
    for listener in listeners:
        try:
            listener(token)
        except Exception:
            # One listener's failure must not keep the others from hearing of it.
            logger.exception("a leadership listener failed")
