"""Builder-style classes as PyFlink's: a builder's setters change and return the builder,
and what it built before does not change with it; PyFlink's names of
EmbeddedRocksDBStateBackend, StateTtlConfig's protobuf round trip and
set_python_executable."""

import pickle

import pytest

from weir.common.serialization import Encoder
from weir.common.time import Duration, Time
from weir.datastream import StreamExecutionEnvironment
from weir.datastream.connectors.file_system import (
    FileSink,
    FileSource,
    OutputFileConfig,
    RollingPolicy,
    StreamFormat,
)
from weir.datastream.state import StateTtlConfig
from weir.datastream.state_backend import EmbeddedRocksDBStateBackend, PredefinedOptions


def test_state_ttl_builder_returns_itself_and_built_configs_stay():
    builder = StateTtlConfig.new_builder(Time.seconds(1))
    assert builder.set_update_type(StateTtlConfig.UpdateType.OnReadAndWrite) is builder
    assert builder.cleanup_full_snapshot() is builder
    first = builder.build()
    builder.cleanup_in_rocksdb_compact_filter(17).set_ttl(Time.seconds(9))
    second = builder.build()
    assert first.get_ttl() == Time.seconds(1) and second.get_ttl() == Time.seconds(9)
    compaction = first.get_cleanup_strategies().get_rocksdb_compact_filter_cleanup_strategy()
    assert compaction.get_query_time_after_num_entries() == 1000
    assert (
        second.get_cleanup_strategies()
        .get_rocksdb_compact_filter_cleanup_strategy()
        .get_query_time_after_num_entries()
        == 17
    )


def test_output_file_config_builder_returns_itself_and_built_configs_stay():
    builder = OutputFileConfig.builder()
    assert builder.with_part_prefix("a") is builder
    first = builder.build()
    builder.with_part_prefix("b").with_part_suffix(".txt")
    assert (first.get_part_prefix(), first.get_part_suffix()) == ("a", "")
    assert builder.build().get_part_suffix() == ".txt"


def test_file_sink_builder_returns_itself_and_built_sinks_stay(tmp_path):
    builder = FileSink.for_row_format(str(tmp_path), Encoder.simple_string_encoder())
    policy = RollingPolicy.on_checkpoint_rolling_policy()
    assert builder.with_rolling_policy(policy) is builder
    assert builder.with_bucket_check_interval(5) is builder
    first = builder.build()
    builder.with_rolling_policy(RollingPolicy.default_rolling_policy()).with_output_file_config(
        OutputFileConfig.builder().with_part_prefix("x").build()
    )
    assert first._rolling_policy is policy
    assert first._output_file_config.get_part_prefix() == "part"


def test_rolling_policies_are_values():
    one = RollingPolicy.default_rolling_policy(part_size=10)
    two = RollingPolicy.default_rolling_policy(part_size=20)
    assert one is not two and one.part_size == 10 and two.part_size == 20


def test_file_source_builder_returns_itself_and_built_sources_stay(tmp_path):
    builder = FileSource.for_record_stream_format(StreamFormat.text_line_format(), str(tmp_path))
    first = builder.build()
    assert builder.monitor_continuously(Duration.of_seconds(1)) is builder
    assert first.is_bounded() and not builder.build().is_bounded()


def test_state_ttl_config_round_trips_through_its_message():
    for explicit in (False, True):
        builder = StateTtlConfig.new_builder(Time.days(1))
        if explicit:
            builder.cleanup_in_rocksdb_compact_filter(17, Duration.of_days(2))
            builder.cleanup_incrementally(3, True).cleanup_full_snapshot()
            builder.disable_cleanup_in_background()
        config = builder.build()
        for restored in (
            StateTtlConfig._from_proto(config._to_proto()),
            pickle.loads(pickle.dumps(config)),
        ):
            assert restored.get_ttl().to_milliseconds() == Time.days(1).to_milliseconds()
            strategies = restored.get_cleanup_strategies()
            compaction = strategies.get_rocksdb_compact_filter_cleanup_strategy()
            assert compaction.get_query_time_after_num_entries() == (17 if explicit else 1000)
            assert strategies.in_full_snapshot() is explicit
            assert strategies.is_cleanup_in_background() is not explicit
            if explicit:
                assert compaction.get_periodic_compaction_time().to_milliseconds() == 2 * 86400000
                incremental = strategies.get_incremental_cleanup_strategy()
                assert (
                    incremental.get_cleanup_size(),
                    incremental.run_cleanup_for_every_record(),
                ) == (
                    3,
                    True,
                )
    message = config._to_proto()
    assert message.update_type == 1 and message.state_visibility == 1 and message.ttl == 86400000
    kinds = [
        e.HasField("rocksdb_compact_filter_cleanup_strategy")
        for e in message.cleanup_strategies.strategies
    ]
    assert kinds == [True, False, False]
    for enum in (StateTtlConfig.UpdateType, StateTtlConfig.StateVisibility):
        for member in enum:
            assert enum._from_proto(member._to_proto()) is member


def test_embedded_rocksdb_state_backend_has_pyflinks_methods():
    backend = EmbeddedRocksDBStateBackend()
    assert not backend.is_incremental_checkpoints_enabled()
    assert EmbeddedRocksDBStateBackend(True).is_incremental_checkpoints_enabled()
    assert backend.get_predefined_options() is PredefinedOptions.DEFAULT
    backend.set_predefined_options(PredefinedOptions.FLASH_SSD_OPTIMIZED)
    assert backend.get_predefined_options() is PredefinedOptions.FLASH_SSD_OPTIMIZED
    assert backend.get_options() is None
    backend.set_options("org.example.Factory")
    assert backend.get_options() == "org.example.Factory"
    assert backend.get_number_of_transfer_threads() == 4
    backend.set_number_of_transfer_threads(2)
    assert backend.get_number_of_transfer_threads() == 2
    backend.set_db_storage_paths("file://var/db1/", "file:///tmp/db2", "/tmp/db3")
    assert backend.get_db_storage_paths() == ["/db1", "/tmp/db2", "/tmp/db3"]
    assert backend._config()["taskmanager.state.local.root-dirs"] == "/db1,/tmp/db2,/tmp/db3"
    backend.set_db_storage_paths()
    assert "taskmanager.state.local.root-dirs" not in backend._config()
    with pytest.raises(TypeError, match="enable_incremental_checkpointing"):
        EmbeddedRocksDBStateBackend("yes")


def test_set_python_executable_is_recorded_where_pyflink_reads_it():
    env = StreamExecutionEnvironment.get_execution_environment()
    env.set_python_executable("/opt/py/bin/python")
    assert env._configuration.get_string("python.executable", "") == "/opt/py/bin/python"
