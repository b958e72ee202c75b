"""Every CheckpointConfig setter and getter after enable_checkpointing."""

from pyflink.common import Duration
from pyflink.datastream import (
    CheckpointingMode,
    ExternalizedCheckpointRetention,
    StreamExecutionEnvironment,
)

env = StreamExecutionEnvironment.get_execution_environment()
cc = env.get_checkpoint_config()


def show(tag):
    print(tag, "enabled", cc.is_checkpointing_enabled())
    print(tag, "mode", cc.get_checkpointing_mode())
    print(tag, "interval", cc.get_checkpoint_interval(), env.get_checkpoint_interval())
    print(tag, "timeout", cc.get_checkpoint_timeout())
    print(tag, "min pause", cc.get_min_pause_between_checkpoints())
    print(tag, "max concurrent", cc.get_max_concurrent_checkpoints())
    print(tag, "tolerable", cc.get_tolerable_checkpoint_failure_number())
    print(tag, "fail on errors", cc.is_fail_on_checkpointing_errors())
    print(
        tag, "unaligned", cc.is_unaligned_checkpoints_enabled(), cc.is_force_unaligned_checkpoints()
    )
    print(
        tag,
        "aligned timeout",
        [cc.get_aligned_checkpoint_timeout() == Duration.of_millis(ms) for ms in (0, 3000)],
        cc.get_alignment_timeout() == cc.get_aligned_checkpoint_timeout(),
    )
    print(
        tag,
        "externalized",
        cc.is_externalized_checkpoints_enabled(),
        cc.get_externalized_checkpoint_retention(),
    )
    print(tag, "env mode", env.get_checkpointing_mode(), env.get_checkpointing_consistency_mode())


print(
    "default enabled",
    cc.is_checkpointing_enabled(),
    cc.get_checkpoint_timeout(),
    cc.get_max_concurrent_checkpoints(),
    cc.get_min_pause_between_checkpoints(),
    cc.get_tolerable_checkpoint_failure_number(),
    cc.is_unaligned_checkpoints_enabled(),
)
env.enable_checkpointing(5000, CheckpointingMode.AT_LEAST_ONCE)
print(
    "enabled",
    cc.is_checkpointing_enabled(),
    cc.get_checkpoint_interval(),
    cc.get_checkpointing_mode(),
    env.get_checkpointing_consistency_mode(),
)
r = (
    cc.set_checkpoint_timeout(120000)
    .set_min_pause_between_checkpoints(250)
    .set_max_concurrent_checkpoints(3)
    .set_tolerable_checkpoint_failure_number(2)
    .set_checkpointing_mode(CheckpointingMode.EXACTLY_ONCE)
    .set_checkpoint_interval(7000)
)
print("chain returns config", r is cc)
cc.enable_unaligned_checkpoints()
cc.set_aligned_checkpoint_timeout(Duration.of_seconds(3))
cc.set_force_unaligned_checkpoints(True)
cc.set_externalized_checkpoint_retention(ExternalizedCheckpointRetention.RETAIN_ON_CANCELLATION)
show("set")
cc.set_fail_on_checkpointing_errors(False)
cc.disable_unaligned_checkpoints()
cc.set_externalized_checkpoint_retention(
    ExternalizedCheckpointRetention.NO_EXTERNALIZED_CHECKPOINTS
)
show("after")
print("same object", env.get_checkpoint_config() is cc)
