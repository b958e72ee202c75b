"""is_unaligned_checkpoints_enabled() reads the flag only while checkpointing is on in
EXACTLY_ONCE mode, on the CheckpointConfig and on the environment."""

from pyflink.datastream import CheckpointingMode, StreamExecutionEnvironment

env = StreamExecutionEnvironment.get_execution_environment()
cc = env.get_checkpoint_config()


def show(tag):
    print(tag, cc.is_unaligned_checkpoints_enabled(), env.is_unaligned_checkpoints_enabled())


show("default")
cc.enable_unaligned_checkpoints()
show("enabled, checkpointing off")
env.enable_checkpointing(1000, CheckpointingMode.AT_LEAST_ONCE)
show("enabled, at least once")
cc.set_checkpointing_mode(CheckpointingMode.EXACTLY_ONCE)
show("enabled, exactly once")
cc.disable_unaligned_checkpoints()
show("disabled, exactly once")
