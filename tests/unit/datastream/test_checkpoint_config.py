"""CheckpointConfig writes Flink's configuration keys into the job, as PyFlink's does."""

import pytest

from weir.common import Configuration, Duration
from weir.core.config import parse_duration_ms
from weir.datastream import (
    CheckpointConfig,
    CheckpointingMode,
    ExternalizedCheckpointRetention,
    StreamExecutionEnvironment,
)


def _job_config(env):
    env.from_collection([1]).print()
    return env._job_graph(clear=False).job_graph.config


def test_enable_checkpointing_and_settings_reach_the_job_config():
    env = StreamExecutionEnvironment.get_execution_environment()
    env.enable_checkpointing(500, CheckpointingMode.AT_LEAST_ONCE)
    config = env.get_checkpoint_config()
    config.set_checkpoint_timeout(30_000)
    config.set_min_pause_between_checkpoints(100)
    config.set_tolerable_checkpoint_failure_number(3)
    config.set_externalized_checkpoint_retention(
        ExternalizedCheckpointRetention.RETAIN_ON_CANCELLATION
    )
    job = _job_config(env)
    assert job["execution.checkpointing.interval"] in ("500", "500 ms")
    assert job["execution.checkpointing.mode"] == "AT_LEAST_ONCE"
    assert job["execution.checkpointing.tolerable-failed-checkpoints"] == "3"
    assert job["execution.checkpointing.externalized-checkpoint-retention"] == (
        "RETAIN_ON_CANCELLATION"
    )
    assert config.get_checkpointing_mode() is CheckpointingMode.AT_LEAST_ONCE
    assert config.is_externalized_checkpoints_enabled()


def test_fail_on_checkpointing_errors_maps_to_tolerable_failures():
    env = StreamExecutionEnvironment.get_execution_environment()
    config = env.get_checkpoint_config()
    assert config.is_fail_on_checkpointing_errors()
    config.set_fail_on_checkpointing_errors(False)
    assert config.get_tolerable_checkpoint_failure_number() == 2**31 - 1
    assert not config.is_fail_on_checkpointing_errors()


class TestAlignedCheckpointTimeout:
    def test_defaults_to_zero_and_reaches_the_job_config_under_flinks_key(self):
        env = StreamExecutionEnvironment.get_execution_environment()
        config = env.get_checkpoint_config()
        assert config.get_aligned_checkpoint_timeout() == Duration.of_millis(0)
        config.set_aligned_checkpoint_timeout(Duration.of_seconds(30))
        assert config.get_aligned_checkpoint_timeout() == Duration.of_seconds(30)
        job = _job_config(env)
        assert parse_duration_ms(job["execution.checkpointing.aligned-checkpoint-timeout"]) == (
            30_000
        )

    def test_the_deprecated_names_are_the_same_setting(self):
        env = StreamExecutionEnvironment.get_execution_environment()
        config = env.get_checkpoint_config()
        config.set_alignment_timeout(Duration.of_millis(250))
        assert config.get_aligned_checkpoint_timeout() == Duration.of_millis(250)
        assert config.get_alignment_timeout() == Duration.of_millis(250)

    def test_the_deprecated_key_is_read(self):
        configuration = Configuration()
        configuration.set_string("execution.checkpointing.alignment-timeout", "2 s")
        env = StreamExecutionEnvironment.get_execution_environment(configuration)
        assert env.get_checkpoint_config().get_alignment_timeout() == Duration.of_seconds(2)

    def test_a_negative_timeout_is_refused(self):
        config = StreamExecutionEnvironment.get_execution_environment().get_checkpoint_config()
        with pytest.raises(ValueError, match="must not be negative"):
            config.set_aligned_checkpoint_timeout(Duration.of_millis(-1))


def test_force_unaligned_checkpoints_reaches_the_job_config():
    env = StreamExecutionEnvironment.get_execution_environment()
    config = env.get_checkpoint_config()
    assert not config.is_force_unaligned_checkpoints()
    config.enable_unaligned_checkpoints()
    assert config.set_force_unaligned_checkpoints() is config
    assert config.is_force_unaligned_checkpoints()
    assert _job_config(env)["execution.checkpointing.unaligned.forced"] == "true"
    config.set_force_unaligned_checkpoints(False)
    assert not config.is_force_unaligned_checkpoints()


def test_every_pyflink_checkpoint_config_method_exists():
    # PyFlink 2.x's CheckpointConfig, method by method.
    names = {
        "is_checkpointing_enabled",
        "get_checkpointing_mode",
        "set_checkpointing_mode",
        "get_checkpoint_interval",
        "set_checkpoint_interval",
        "get_checkpoint_timeout",
        "set_checkpoint_timeout",
        "get_min_pause_between_checkpoints",
        "set_min_pause_between_checkpoints",
        "get_max_concurrent_checkpoints",
        "set_max_concurrent_checkpoints",
        "is_fail_on_checkpointing_errors",
        "set_fail_on_checkpointing_errors",
        "get_tolerable_checkpoint_failure_number",
        "set_tolerable_checkpoint_failure_number",
        "set_externalized_checkpoint_retention",
        "is_externalized_checkpoints_enabled",
        "get_externalized_checkpoint_retention",
        "is_unaligned_checkpoints_enabled",
        "enable_unaligned_checkpoints",
        "disable_unaligned_checkpoints",
        "set_aligned_checkpoint_timeout",
        "get_aligned_checkpoint_timeout",
        "set_alignment_timeout",
        "get_alignment_timeout",
        "set_force_unaligned_checkpoints",
        "is_force_unaligned_checkpoints",
    }
    assert not {n for n in names if not callable(getattr(CheckpointConfig, n, None))}


def test_unaligned_checkpoints_read_as_enabled_only_while_exactly_once_checkpointing_is_on():
    # PyFlink 2: the flag alone says nothing while checkpointing is off or at-least-once.
    env = StreamExecutionEnvironment.get_execution_environment()
    config = env.get_checkpoint_config()
    config.enable_unaligned_checkpoints()
    assert not config.is_unaligned_checkpoints_enabled()
    assert not env.is_unaligned_checkpoints_enabled()
    env.enable_checkpointing(1000, CheckpointingMode.AT_LEAST_ONCE)
    assert not config.is_unaligned_checkpoints_enabled()
    config.set_checkpointing_mode(CheckpointingMode.EXACTLY_ONCE)
    assert config.is_unaligned_checkpoints_enabled()
    assert env.is_unaligned_checkpoints_enabled()
    config.disable_unaligned_checkpoints()
    assert not config.is_unaligned_checkpoints_enabled()
    # The flag itself reaches the job as it was set.
    config.enable_unaligned_checkpoints()
    env.enable_checkpointing(1000, CheckpointingMode.AT_LEAST_ONCE)
    assert _job_config(env)["execution.checkpointing.unaligned.enabled"] == "true"
