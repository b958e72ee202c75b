"""Names PyFlink programs use where Weir's once differed: EmbeddedRocksDBStateBackend's getters
and setters, StateTtlConfig's protobuf round trip (PyFlink's own tests use it), and
set_python_executable, whose value a function reads back from the `python` environment
variable, as PyFlink's own test does."""

import os
import sys

from pyflink.common import Time, Types
from pyflink.datastream import StreamExecutionEnvironment
from pyflink.datastream.state import StateTtlConfig
from pyflink.datastream.state_backend import EmbeddedRocksDBStateBackend, PredefinedOptions

backend = EmbeddedRocksDBStateBackend()
print("incremental by default:", backend.is_incremental_checkpoints_enabled())
print(
    "incremental when asked:",
    EmbeddedRocksDBStateBackend(True).is_incremental_checkpoints_enabled(),
)
print("predefined options:", backend.get_predefined_options())
backend.set_predefined_options(PredefinedOptions.SPINNING_DISK_OPTIMIZED_HIGH_MEM)
print("predefined options set:", backend.get_predefined_options())
print("options factory:", backend.get_options())
print("transfer threads:", backend.get_number_of_transfer_threads())
backend.set_number_of_transfer_threads(4)
print("transfer threads set:", backend.get_number_of_transfer_threads())
backend.set_db_storage_paths("file:///tmp/weir-compat-db1", "file:///tmp/weir-compat-db2")
print("db storage paths:", backend.get_db_storage_paths())
print("predefined options listed:", [o.name for o in PredefinedOptions])

config = (
    StateTtlConfig.new_builder(Time.days(1))
    .set_update_type(StateTtlConfig.UpdateType.OnReadAndWrite)
    .set_state_visibility(StateTtlConfig.StateVisibility.ReturnExpiredIfNotCleanedUp)
    .cleanup_incrementally(10, True)
    .cleanup_in_rocksdb_compact_filter(17)
    .cleanup_full_snapshot()
    .build()
)
restored = StateTtlConfig._from_proto(config._to_proto())
print("ttl:", restored.get_ttl().to_milliseconds())
print("update type:", restored.get_update_type())
print("visibility:", restored.get_state_visibility())
print("time characteristic:", restored.get_ttl_time_characteristic())
strategies = restored.get_cleanup_strategies()
print("in background:", strategies.is_cleanup_in_background())
print("full snapshot:", strategies.in_full_snapshot())
incremental = strategies.get_incremental_cleanup_strategy()
print("incremental:", incremental.get_cleanup_size(), incremental.run_cleanup_for_every_record())
print(
    "compaction filter:",
    strategies.get_rocksdb_compact_filter_cleanup_strategy().get_query_time_after_num_entries(),
)
default = StateTtlConfig._from_proto(
    StateTtlConfig.new_builder(Time.seconds(3)).build()._to_proto()
)
print(
    "default round trip:",
    default.get_ttl().to_milliseconds(),
    default.get_update_type(),
    default.get_state_visibility(),
    default.get_cleanup_strategies().is_cleanup_in_background(),
    default.get_cleanup_strategies()
    .get_rocksdb_compact_filter_cleanup_strategy()
    .get_query_time_after_num_entries(),
)
print(
    "update type round trip:",
    StateTtlConfig.UpdateType._from_proto(StateTtlConfig.UpdateType.Disabled._to_proto()),
)

env = StreamExecutionEnvironment.get_execution_environment()
env.set_parallelism(1)
env.set_python_executable(sys.executable)
expected = sys.executable


def check(i):
    return "%d python executable seen: %s" % (i, os.environ.get("python") == expected)


env.from_collection([1, 2], type_info=Types.INT()).map(check, output_type=Types.STRING()).print()
env.execute("pyflink names")
