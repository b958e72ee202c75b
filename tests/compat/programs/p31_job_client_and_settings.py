"""execute_async and the JobClient's futures, tuple projection, and the settings a program may
read back: checkpointing modes, snapshot compression, the savepoint directory, the execution
config's parallelism shared with the environment, and Row kinds."""

from pyflink.common import Configuration, JobStatus, Row, Types
from pyflink.common.types import RowKind
from pyflink.datastream import CheckpointingMode, StreamExecutionEnvironment
from pyflink.datastream.time_domain import TimeDomain

env = StreamExecutionEnvironment.get_execution_environment()
config = env.get_config()
config.set_parallelism(1)
print("parallelism", env.get_parallelism(), config.get_parallelism())
print("consistency before", env.get_checkpointing_consistency_mode())
env.enable_checkpointing(60000, CheckpointingMode.EXACTLY_ONCE)
print("consistency after", env.get_checkpointing_consistency_mode())
print("unaligned", env.is_unaligned_checkpoints_enabled(), env.is_force_unaligned_checkpoints())
config.set_use_snapshot_compression(True)
print("compression", config.is_use_snapshot_compression())
env.set_default_savepoint_directory("file:///tmp/savepoints")
print("savepoints", env.get_default_savepoint_directory())
print("closure cleaner", config.is_closure_cleaner_enabled())
print("list", Configuration.parse_list_value("a;b"), Configuration.parse_list_value("[1, 2]"))
print("kinds", [str(k) for k in RowKind], Row.of_kind(RowKind.DELETE, 1, "x").get_row_kind())
print("domain", TimeDomain.EVENT_TIME)

ds = env.from_collection(
    [(1, "a", 2.5), (2, "b", 3.5), (3, "a", 4.5)],
    type_info=Types.TUPLE([Types.INT(), Types.STRING(), Types.DOUBLE()]),
)
ds.project(2, 0).print()
ds.key_by(lambda x: x[1]).project(1, 1).print()

client = env.execute_async("job client")
result = client.get_job_execution_result().result()
print("result is for the job", str(result.get_job_id()) == str(client.get_job_id()))
print("terminal states", [s.name for s in JobStatus if s.is_globally_terminal_state()])
print("runtime is a number", result.get_net_runtime() >= 0)
