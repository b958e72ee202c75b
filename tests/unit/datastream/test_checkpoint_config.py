"""CheckpointConfig writes Flink's configuration keys into the job, as PyFlink's does."""

from weir.datastream import (
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
        ExternalizedCheckpointRetention.RETAIN_ON_CANCELLATION)
    job = _job_config(env)
    assert job["execution.checkpointing.interval"] in ("500", "500 ms")
    assert job["execution.checkpointing.mode"] == "AT_LEAST_ONCE"
    assert job["execution.checkpointing.tolerable-failed-checkpoints"] == "3"
    assert job["execution.checkpointing.externalized-checkpoint-retention"] == (
        "RETAIN_ON_CANCELLATION")
    assert config.get_checkpointing_mode() is CheckpointingMode.AT_LEAST_ONCE
    assert config.is_externalized_checkpoints_enabled()


def test_fail_on_checkpointing_errors_maps_to_tolerable_failures():
    env = StreamExecutionEnvironment.get_execution_environment()
    config = env.get_checkpoint_config()
    assert config.is_fail_on_checkpointing_errors()
    config.set_fail_on_checkpointing_errors(False)
    assert config.get_tolerable_checkpoint_failure_number() == 2**31 - 1
    assert not config.is_fail_on_checkpointing_errors()
