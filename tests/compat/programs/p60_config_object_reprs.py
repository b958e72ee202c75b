"""What configuration objects print: StateTtlConfig, Time, window assigners and windows, the
checkpoint retention of a fresh environment, Configuration (in Flink's HashMap order, secrets
hidden) and type information."""

from pyflink.common import Configuration, Time, Types
from pyflink.datastream import StreamExecutionEnvironment
from pyflink.datastream.checkpoint_config import ExternalizedCheckpointRetention
from pyflink.datastream.state import StateTtlConfig
from pyflink.datastream.window import (
    CountSlidingWindowAssigner,
    CountTumblingWindowAssigner,
    CountWindow,
    EventTimeSessionWindows,
    GlobalWindow,
    GlobalWindows,
    SlidingEventTimeWindows,
    TimeWindow,
    TumblingEventTimeWindows,
    TumblingProcessingTimeWindows,
)

ttl = StateTtlConfig.new_builder(Time.seconds(3)).build()
print(ttl)
print(repr(ttl))
tuned = (
    StateTtlConfig.new_builder(Time.minutes(2))
    .set_update_type(StateTtlConfig.UpdateType.OnReadAndWrite)
    .set_state_visibility(StateTtlConfig.StateVisibility.ReturnExpiredIfNotCleanedUp)
    .cleanup_full_snapshot()
    .build()
)
print(tuned)
print(tuned.get_ttl(), tuned.get_update_type(), tuned.get_state_visibility())
print(tuned.get_ttl_time_characteristic(), tuned.is_enabled())
print(repr(StateTtlConfig.UpdateType.Disabled), str(StateTtlConfig.UpdateType.Disabled))
print(Time.milliseconds(1500), Time.hours(1), Time.days(2))

for assigner in [
    TumblingEventTimeWindows.of(Time.seconds(5)),
    TumblingEventTimeWindows.of(Time.seconds(5), Time.seconds(1)),
    TumblingProcessingTimeWindows.of(Time.minutes(1)),
    SlidingEventTimeWindows.of(Time.seconds(10), Time.seconds(5)),
    EventTimeSessionWindows.with_gap(Time.seconds(3)),
    GlobalWindows.create(),
    CountTumblingWindowAssigner.of(4),
    CountSlidingWindowAssigner.of(4, 2),
]:
    print(assigner, assigner.is_event_time())
print(TimeWindow(0, 1000), repr(TimeWindow(-5, 5)), TimeWindow(0, 1000).max_timestamp())
print(CountWindow(7), GlobalWindow.get())

env = StreamExecutionEnvironment.get_execution_environment()
checkpoints = env.get_checkpoint_config()
print("retention", checkpoints.get_externalized_checkpoint_retention())
print("externalized", checkpoints.is_externalized_checkpoints_enabled())
checkpoints.set_externalized_checkpoint_retention(
    ExternalizedCheckpointRetention.DELETE_ON_CANCELLATION
)
print("retention", checkpoints.get_externalized_checkpoint_retention())
print("externalized", checkpoints.is_externalized_checkpoints_enabled())

config = Configuration()
print(config, config.to_dict())
for key, value in [
    ("parallelism.default", "4"),
    ("pipeline.name", "reprs"),
    ("execution.checkpointing.interval", "10 s"),
    ("s3.secret-key", "hidden"),
    ("state.backend.type", "hashmap"),
    ("a", "1"),
]:
    config.set_string(key, value)
config.set_integer("taskmanager.numberOfTaskSlots", 2)
config.set_boolean("pipeline.object-reuse", True)
print(config)
print(config.to_dict())
print(len(config.key_set()), config.contains_key("a"), config.get_integer("parallelism.default", 1))

print(Types.INT(), Types.STRING(), Types.BOOLEAN(), Types.DOUBLE(), Types.SQL_TIMESTAMP())
print(Types.ROW([Types.INT(), Types.STRING()]))
print(Types.ROW_NAMED(["id", "name"], [Types.LONG(), Types.STRING()]))
print(Types.TUPLE([Types.INT(), Types.TUPLE([Types.STRING(), Types.FLOAT()])]))
print(Types.LIST(Types.INT()), Types.MAP(Types.STRING(), Types.LONG()))
print(Types.BASIC_ARRAY(Types.INT()), Types.PRIMITIVE_ARRAY(Types.BYTE()))
print(Types.PICKLED_BYTE_ARRAY(), Types.BIG_DEC(), Types.SQL_DATE(), Types.SQL_TIME())
