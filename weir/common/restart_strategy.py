"""``RestartStrategies``, as ``pyflink.common.restart_strategy``: importable, but, as in
PyFlink 2.3 (whose Java side dropped them in Flink 2), not constructible. Restart strategies
are configured with the ``restart-strategy.*`` keys instead::

    config = Configuration()
    config.set_string("restart-strategy.type", "fixed-delay")
    config.set_string("restart-strategy.fixed-delay.attempts", "3")
    config.set_string("restart-strategy.fixed-delay.delay", "10 s")
    env = StreamExecutionEnvironment.get_execution_environment(config)
"""

from __future__ import annotations

import abc
from typing import NoReturn

__all__ = ["RestartStrategies", "RestartStrategyConfiguration"]


def _removed(name: str, keys: str) -> NoReturn:
    # PyFlink 2.3 raises a TypeError here too (its Java classes are gone).
    msg = (
        f"RestartStrategies.{name} was removed in Flink 2 (PyFlink 2.3 fails the same way); "
        f"configure the restart strategy instead: {keys}"
    )
    raise TypeError(msg)


class RestartStrategyConfiguration(abc.ABC):  # noqa: B024 - PyFlink's marker base class
    """The base of PyFlink's restart strategy configurations."""


class RestartStrategies:
    """PyFlink's factory of restart strategy configurations; every factory raises."""

    class NoRestartStrategyConfiguration(RestartStrategyConfiguration):
        def __init__(self) -> None:
            _removed("no_restart()", "restart-strategy.type: none")

    class FixedDelayRestartStrategyConfiguration(RestartStrategyConfiguration):
        def __init__(self, *args: object) -> None:
            _removed(
                "fixed_delay_restart()",
                "restart-strategy.type: fixed-delay, restart-strategy.fixed-delay.attempts "
                "and restart-strategy.fixed-delay.delay",
            )

    class FailureRateRestartStrategyConfiguration(RestartStrategyConfiguration):
        def __init__(self, *args: object) -> None:
            _removed(
                "failure_rate_restart()",
                "restart-strategy.type: failure-rate and its "
                "restart-strategy.failure-rate.* settings",
            )

    class FallbackRestartStrategyConfiguration(RestartStrategyConfiguration):
        def __init__(self) -> None:
            _removed("fall_back_restart()", "leave restart-strategy.type unset")

    @staticmethod
    def no_restart() -> RestartStrategies.NoRestartStrategyConfiguration:
        return RestartStrategies.NoRestartStrategyConfiguration()

    @staticmethod
    def fall_back_restart() -> RestartStrategies.FallbackRestartStrategyConfiguration:
        return RestartStrategies.FallbackRestartStrategyConfiguration()

    @staticmethod
    def fixed_delay_restart(
        restart_attempts: int, delay_between_attempts: int
    ) -> RestartStrategies.FixedDelayRestartStrategyConfiguration:
        return RestartStrategies.FixedDelayRestartStrategyConfiguration(
            restart_attempts, delay_between_attempts
        )

    @staticmethod
    def failure_rate_restart(
        failure_rate: int, failure_interval: int, delay_interval: int
    ) -> RestartStrategies.FailureRateRestartStrategyConfiguration:
        return RestartStrategies.FailureRateRestartStrategyConfiguration(
            failure_rate, failure_interval, delay_interval
        )
