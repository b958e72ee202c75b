"""Restart strategies: attempts and delays of each, with a hand-driven clock."""

from __future__ import annotations

import random

import pytest

from weir.core.errors import ConfigurationError
from weir.jobmanager.restart_strategy import (
    ExponentialDelayRestartBackoffTimeStrategy,
    FailureRateRestartBackoffTimeStrategy,
    FixedDelayRestartBackoffTimeStrategy,
    NoRestartBackoffTimeStrategy,
    create_restart_strategy,
)


class Clock:
    def __init__(self, now: int = 0) -> None:
        self.now = now

    def __call__(self) -> int:
        return self.now


class TestFactory:
    def test_default_is_none_without_checkpointing(self):
        assert isinstance(create_restart_strategy({}), NoRestartBackoffTimeStrategy)

    def test_default_is_exponential_delay_with_flink_defaults_when_checkpointing(self):
        strategy = create_restart_strategy({"execution.checkpointing.interval": "10 s"})
        assert isinstance(strategy, ExponentialDelayRestartBackoffTimeStrategy)
        assert (strategy.initial_backoff_ms, strategy.max_backoff_ms) == (1000, 60_000)
        assert (strategy.multiplier, strategy.jitter_factor) == (1.5, 0.1)
        assert strategy.reset_threshold_ms == 3_600_000
        assert strategy.attempts == 2**31 - 1
        explicit = create_restart_strategy({}, checkpointing_enabled=True)
        assert isinstance(explicit, ExponentialDelayRestartBackoffTimeStrategy)

    @pytest.mark.parametrize(
        ("name", "kind"),
        [
            ("none", NoRestartBackoffTimeStrategy),
            ("off", NoRestartBackoffTimeStrategy),
            ("disable", NoRestartBackoffTimeStrategy),
            ("fixed-delay", FixedDelayRestartBackoffTimeStrategy),
            ("fixeddelay", FixedDelayRestartBackoffTimeStrategy),
            ("failure-rate", FailureRateRestartBackoffTimeStrategy),
            ("failurerate", FailureRateRestartBackoffTimeStrategy),
            ("exponential-delay", ExponentialDelayRestartBackoffTimeStrategy),
            ("Exponential-Delay", ExponentialDelayRestartBackoffTimeStrategy),
        ],
    )
    def test_type_names(self, name, kind):
        config = {"restart-strategy.type": name, "execution.checkpointing.interval": "1 s"}
        assert isinstance(create_restart_strategy(config), kind)

    def test_explicit_type_wins_over_the_checkpointing_default(self):
        config = {"restart-strategy.type": "none", "execution.checkpointing.interval": "1 s"}
        assert isinstance(create_restart_strategy(config), NoRestartBackoffTimeStrategy)

    def test_unknown_type_names_the_key(self):
        with pytest.raises(ConfigurationError, match=r"restart-strategy\.type"):
            create_restart_strategy({"restart-strategy.type": "sometimes"})

    def test_bad_exponential_settings_are_refused(self):
        with pytest.raises(ConfigurationError, match="initial-backoff <= max-backoff"):
            create_restart_strategy(
                {
                    "restart-strategy.type": "exponential-delay",
                    "restart-strategy.exponential-delay.initial-backoff": "2 min",
                }
            )
        with pytest.raises(ConfigurationError, match="jitter-factor"):
            create_restart_strategy(
                {
                    "restart-strategy.type": "exponential-delay",
                    "restart-strategy.exponential-delay.jitter-factor": "2",
                }
            )


def test_no_restart():
    strategy = NoRestartBackoffTimeStrategy()
    strategy.notify_failure(0)
    assert not strategy.can_restart()


class TestFixedDelay:
    def test_attempts_then_gives_up(self):
        strategy = create_restart_strategy(
            {
                "restart-strategy.type": "fixed-delay",
                "restart-strategy.fixed-delay.attempts": "3",
                "restart-strategy.fixed-delay.delay": "10 s",
            }
        )
        for i in range(3):
            strategy.notify_failure(i)
            assert strategy.can_restart()
            assert strategy.get_backoff_time_ms() == 10_000
        strategy.notify_failure(4)
        assert not strategy.can_restart()

    def test_flink_defaults_one_attempt_one_second(self):
        strategy = create_restart_strategy({"restart-strategy.type": "fixed-delay"})
        strategy.notify_failure(0)
        assert strategy.can_restart() and strategy.get_backoff_time_ms() == 1000
        strategy.notify_failure(1)
        assert not strategy.can_restart()


class TestFailureRate:
    def _strategy(self, clock):
        return create_restart_strategy(
            {
                "restart-strategy.type": "failure-rate",
                "restart-strategy.failure-rate.max-failures-per-interval": "2",
                "restart-strategy.failure-rate.failure-rate-interval": "1 min",
                "restart-strategy.failure-rate.delay": "5 s",
            },
            clock=clock,
        )

    def test_too_many_failures_within_the_interval_fail(self):
        clock = Clock()
        strategy = self._strategy(clock)
        strategy.notify_failure(0)
        assert strategy.can_restart() and strategy.get_backoff_time_ms() == 5000
        clock.now = 30_000
        strategy.notify_failure(30_000)
        assert not strategy.can_restart()

    def test_failures_spread_out_keep_restarting(self):
        clock = Clock()
        strategy = self._strategy(clock)
        for t in (0, 60_001, 120_002, 180_003):
            clock.now = t
            strategy.notify_failure(t)
            assert strategy.can_restart()

    def test_the_window_slides_with_the_clock(self):
        clock = Clock()
        strategy = self._strategy(clock)
        strategy.notify_failure(0)
        strategy.notify_failure(10_000)
        clock.now = 10_000
        assert not strategy.can_restart()
        clock.now = 60_001
        assert strategy.can_restart()


class TestExponentialDelay:
    def _strategy(self, clock, **overrides):
        settings = {
            "initial_backoff_ms": 1000,
            "max_backoff_ms": 10_000,
            "multiplier": 2.0,
            "reset_threshold_ms": 60_000,
            "jitter_factor": 0.0,
            "attempts": 100,
        }
        settings.update(overrides)
        return ExponentialDelayRestartBackoffTimeStrategy(**settings, clock=clock)

    def test_backoff_doubles_up_to_the_max(self):
        clock = Clock()
        strategy = self._strategy(clock)
        waits = []
        for _ in range(6):
            assert strategy.notify_failure(clock.now)
            waits.append(strategy.get_backoff_time_ms())
            clock.now += strategy.get_backoff_time_ms() + 1  # restart, then fail again
        assert waits == [1000, 2000, 4000, 8000, 10_000, 10_000]

    def test_failures_during_the_backoff_merge_into_one_restart(self):
        clock = Clock()
        strategy = self._strategy(clock)
        assert strategy.notify_failure(0)
        clock.now = 500
        assert not strategy.notify_failure(500)
        assert strategy.get_backoff_time_ms() == 500  # still the first restart, half waited

    def test_resets_after_a_quiet_threshold(self):
        clock = Clock()
        strategy = self._strategy(clock)
        for _ in range(3):
            strategy.notify_failure(clock.now)
            clock.now += strategy.get_backoff_time_ms() + 1
        clock.now += 60_000
        strategy.notify_failure(clock.now)
        assert strategy.get_backoff_time_ms() == 1000

    def test_attempts_before_reset_bound_the_restarts(self):
        clock = Clock()
        strategy = self._strategy(clock, attempts=2)
        for expected in (True, True, False):
            strategy.notify_failure(clock.now)
            assert strategy.can_restart() is expected
            clock.now += strategy.get_backoff_time_ms() + 1

    def test_jitter_stays_within_the_factor_and_above_the_initial_backoff(self):
        for seed in range(50):
            clock = Clock()
            strategy = self._strategy(clock, jitter_factor=0.1, initial_backoff_ms=1000)
            strategy._rng = random.Random(seed)
            strategy.notify_failure(0)
            first = strategy.get_backoff_time_ms()
            assert 1000 <= first <= 1100
            clock.now = first + 1
            strategy.notify_failure(clock.now)
            assert 1800 <= strategy.get_backoff_time_ms() <= 2200

    def test_configured_through_flink_keys(self):
        clock = Clock()
        strategy = create_restart_strategy(
            {
                "restart-strategy.type": "exponential-delay",
                "restart-strategy.exponential-delay.initial-backoff": "10 s",
                "restart-strategy.exponential-delay.max-backoff": "2 min",
                "restart-strategy.exponential-delay.backoff-multiplier": "1.4",
                "restart-strategy.exponential-delay.reset-backoff-threshold": "10 min",
                "restart-strategy.exponential-delay.jitter-factor": "0",
                "restart-strategy.exponential-delay.attempts-before-reset-backoff": "10",
            },
            clock=clock,
        )
        strategy.notify_failure(0)
        assert strategy.get_backoff_time_ms() == 10_000
        clock.now = 10_001
        strategy.notify_failure(10_001)
        assert strategy.get_backoff_time_ms() == 14_000
