"""Restart strategies: whether a failed job may restart and how long to wait first
(Flink's RestartBackoffTimeStrategy and its fixed-delay, failure-rate and exponential-delay
implementations), configured with Flink 2.x's ``restart-strategy.*`` keys."""

from __future__ import annotations

import abc
import collections
import random
from collections.abc import Mapping

from weir.core import config as cfg
from weir.core.errors import ConfigurationError
from weir.jobmanager.checkpoint.scheduling import Clock, system_clock_ms


class RestartBackoffTimeStrategy(abc.ABC):
    """Asked by the scheduler on every failure: ``notify_failure`` first, then
    ``can_restart`` and ``get_backoff_time_ms``. Not thread-safe: the scheduler's lock
    guards it."""

    @abc.abstractmethod
    def notify_failure(self, timestamp_ms: int) -> bool:
        """Record a failure at ``timestamp_ms``. Returns False when it is merged into the
        restart already planned (several tasks failing together count once)."""

    @abc.abstractmethod
    def can_restart(self) -> bool: ...

    @abc.abstractmethod
    def get_backoff_time_ms(self) -> int:
        """How long to wait before restarting."""


class NoRestartBackoffTimeStrategy(RestartBackoffTimeStrategy):
    def notify_failure(self, timestamp_ms: int) -> bool:
        return True

    def can_restart(self) -> bool:
        return False

    def get_backoff_time_ms(self) -> int:
        return 0

    def __repr__(self) -> str:
        return "NoRestartBackoffTimeStrategy()"


class FixedDelayRestartBackoffTimeStrategy(RestartBackoffTimeStrategy):
    """Up to ``attempts`` restarts, ``delay_ms`` apart; the next failure fails the job."""

    def __init__(self, attempts: int, delay_ms: int) -> None:
        if attempts < 0 or delay_ms < 0:
            msg = (
                f"fixed-delay needs attempts >= 0 and delay >= 0; got {attempts} and {delay_ms} ms"
            )
            raise ConfigurationError(msg)
        self.attempts = attempts
        self.delay_ms = delay_ms
        self._failures = 0

    def notify_failure(self, timestamp_ms: int) -> bool:
        self._failures += 1
        return True

    def can_restart(self) -> bool:
        return self._failures <= self.attempts

    def get_backoff_time_ms(self) -> int:
        return self.delay_ms

    def __repr__(self) -> str:
        return (
            f"FixedDelayRestartBackoffTimeStrategy(attempts={self.attempts}, "
            f"delay_ms={self.delay_ms})"
        )


class FailureRateRestartBackoffTimeStrategy(RestartBackoffTimeStrategy):
    """Restarts ``delay_ms`` after a failure unless more than ``max_failures`` failures
    fell within ``interval_ms``."""

    def __init__(self, max_failures: int, interval_ms: int, delay_ms: int, clock: Clock) -> None:
        if max_failures < 1 or interval_ms <= 0 or delay_ms < 0:
            msg = (
                "failure-rate needs max-failures-per-interval >= 1, a positive interval and "
                f"delay >= 0; got {max_failures}, {interval_ms} ms and {delay_ms} ms"
            )
            raise ConfigurationError(msg)
        self.max_failures = max_failures
        self.interval_ms = interval_ms
        self.delay_ms = delay_ms
        self._clock = clock
        self._failures: collections.deque[int] = collections.deque(maxlen=max_failures)

    def notify_failure(self, timestamp_ms: int) -> bool:
        self._failures.append(timestamp_ms)  # the deque drops the oldest when full
        return True

    def can_restart(self) -> bool:
        if len(self._failures) < self.max_failures:
            return True
        return self._clock() - self._failures[0] > self.interval_ms

    def get_backoff_time_ms(self) -> int:
        return self.delay_ms

    def __repr__(self) -> str:
        return (
            f"FailureRateRestartBackoffTimeStrategy(max_failures={self.max_failures}, "
            f"interval_ms={self.interval_ms}, delay_ms={self.delay_ms})"
        )


class ExponentialDelayRestartBackoffTimeStrategy(RestartBackoffTimeStrategy):
    """The wait grows from ``initial_backoff_ms`` by ``multiplier`` per restart up to
    ``max_backoff_ms``, moved by up to ``jitter_factor`` of itself; after
    ``reset_threshold_ms`` without failures it starts over. At most ``attempts`` restarts
    between resets. Failures before the planned restart merge into it."""

    def __init__(
        self,
        *,
        initial_backoff_ms: int,
        max_backoff_ms: int,
        multiplier: float,
        reset_threshold_ms: int,
        jitter_factor: float,
        attempts: int,
        clock: Clock,
        rng: random.Random | None = None,
    ) -> None:
        if not 0 < initial_backoff_ms <= max_backoff_ms:
            msg = (
                "exponential-delay needs 0 < initial-backoff <= max-backoff; got "
                f"{initial_backoff_ms} ms and {max_backoff_ms} ms"
            )
            raise ConfigurationError(msg)
        if multiplier < 1 or not 0 <= jitter_factor <= 1 or reset_threshold_ms <= 0 or attempts < 0:
            msg = (
                "exponential-delay needs backoff-multiplier >= 1, jitter-factor in [0, 1], a "
                f"positive reset-backoff-threshold and attempts >= 0; got {multiplier}, "
                f"{jitter_factor}, {reset_threshold_ms} ms and {attempts}"
            )
            raise ConfigurationError(msg)
        self.initial_backoff_ms = initial_backoff_ms
        self.max_backoff_ms = max_backoff_ms
        self.multiplier = multiplier
        self.reset_threshold_ms = reset_threshold_ms
        self.jitter_factor = jitter_factor
        self.attempts = attempts
        self._clock = clock
        self._rng = rng or random.Random()  # noqa: S311 (jitter, not cryptography)
        self._attempt = 0
        self._next_restart_ms: int | None = None

    def notify_failure(self, timestamp_ms: int) -> bool:
        if self._next_restart_ms is not None and timestamp_ms <= self._next_restart_ms:
            return False
        if self._next_restart_ms is not None and (
            timestamp_ms - self._next_restart_ms >= self.reset_threshold_ms
        ):
            self._attempt = 0
        self._next_restart_ms = timestamp_ms + self._backoff_for_attempt()
        self._attempt += 1
        return True

    def _backoff_for_attempt(self) -> int:
        base = int(self.initial_backoff_ms * self.multiplier**self._attempt)
        jitter = 0
        if self.jitter_factor > 0:
            offset = int(base * self.jitter_factor)
            jitter = self._rng.randint(-offset, offset)
        return max(self.initial_backoff_ms, min(base + jitter, self.max_backoff_ms))

    def can_restart(self) -> bool:
        return self._attempt <= self.attempts

    def get_backoff_time_ms(self) -> int:
        if self._next_restart_ms is None:
            return 0
        return max(0, self._next_restart_ms - self._clock())

    def __repr__(self) -> str:
        return (
            "ExponentialDelayRestartBackoffTimeStrategy("
            f"initial_backoff_ms={self.initial_backoff_ms}, max_backoff_ms={self.max_backoff_ms}, "
            f"multiplier={self.multiplier}, reset_threshold_ms={self.reset_threshold_ms}, "
            f"jitter_factor={self.jitter_factor}, attempts={self.attempts})"
        )


_NONE = ("none", "off", "disable")
_FIXED = ("fixed-delay", "fixeddelay")
_RATE = ("failure-rate", "failurerate")
_EXPONENTIAL = ("exponential-delay", "exponentialdelay")


def create_restart_strategy(
    config: Mapping[str, str],
    clock: Clock = system_clock_ms,
    rng: random.Random | None = None,
    checkpointing_enabled: bool | None = None,
) -> RestartBackoffTimeStrategy:
    """The strategy ``restart-strategy.type`` names. Unset: exponential-delay (with its
    defaults) when checkpointing is on, none when it is off, as in Flink 2.x.
    ``checkpointing_enabled`` defaults to ``execution.checkpointing.interval`` > 0."""
    kind = cfg.get(config, cfg.RESTART_STRATEGY_TYPE)
    if not kind:
        if checkpointing_enabled is None:
            checkpointing_enabled = cfg.get(config, cfg.CHECKPOINTING_INTERVAL) > 0
        kind = "exponential-delay" if checkpointing_enabled else "none"
    if kind in _NONE:
        return NoRestartBackoffTimeStrategy()
    if kind in _FIXED:
        return FixedDelayRestartBackoffTimeStrategy(
            cfg.get(config, cfg.RESTART_FIXED_DELAY_ATTEMPTS),
            cfg.get(config, cfg.RESTART_FIXED_DELAY_DELAY),
        )
    if kind in _RATE:
        return FailureRateRestartBackoffTimeStrategy(
            cfg.get(config, cfg.RESTART_FAILURE_RATE_MAX_FAILURES),
            cfg.get(config, cfg.RESTART_FAILURE_RATE_INTERVAL),
            cfg.get(config, cfg.RESTART_FAILURE_RATE_DELAY),
            clock,
        )
    assert kind in _EXPONENTIAL, kind  # ConfigOption.choices admits nothing else
    return ExponentialDelayRestartBackoffTimeStrategy(
        initial_backoff_ms=cfg.get(config, cfg.RESTART_EXPONENTIAL_INITIAL_BACKOFF),
        max_backoff_ms=cfg.get(config, cfg.RESTART_EXPONENTIAL_MAX_BACKOFF),
        multiplier=cfg.get(config, cfg.RESTART_EXPONENTIAL_MULTIPLIER),
        reset_threshold_ms=cfg.get(config, cfg.RESTART_EXPONENTIAL_RESET_THRESHOLD),
        jitter_factor=cfg.get(config, cfg.RESTART_EXPONENTIAL_JITTER),
        attempts=cfg.get(config, cfg.RESTART_EXPONENTIAL_ATTEMPTS),
        clock=clock,
        rng=rng,
    )
