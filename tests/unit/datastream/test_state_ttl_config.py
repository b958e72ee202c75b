"""StateTtlConfig: PyFlink's builder, defaults and names, and what the backends read of it."""

import pickle

import pytest

from weir.common.time import Duration, Time
from weir.core.state_ttl import StateTtl
from weir.datastream.state import StateTtlConfig, ValueStateDescriptor


def _descriptor(config):
    descriptor = ValueStateDescriptor("v", None)
    descriptor.enable_time_to_live(config)
    return descriptor


class TestStateTtlConfig:
    def test_defaults_are_pyflinks(self):
        config = StateTtlConfig.new_builder(Time.seconds(1)).build()
        assert config.get_ttl() == Time.seconds(1)
        assert config.get_update_type() is StateTtlConfig.UpdateType.OnCreateAndWrite
        assert config.get_state_visibility() is StateTtlConfig.StateVisibility.NeverReturnExpired
        assert (
            config.get_ttl_time_characteristic()
            is StateTtlConfig.TtlTimeCharacteristic.ProcessingTime
        )
        assert config.is_enabled()
        strategies = config.get_cleanup_strategies()
        assert strategies.is_cleanup_in_background()
        assert not strategies.in_full_snapshot()
        assert strategies.get_incremental_cleanup_strategy().get_cleanup_size() == 5
        assert (
            strategies.get_rocksdb_compact_filter_cleanup_strategy().get_query_time_after_num_entries()
            == 1000
        )

    def test_builder_setters(self):
        config = (
            StateTtlConfig.new_builder(Time.seconds(1))
            .update_ttl_on_read_and_write()
            .return_expired_if_not_cleaned_up()
            .use_processing_time()
            .cleanup_full_snapshot()
            .cleanup_incrementally(10, True)
            .cleanup_in_rocksdb_compact_filter(50, Duration.of_hours(1))
            .disable_cleanup_in_background()
            .set_ttl(Duration.of_seconds(3))
            .build()
        )
        assert config.get_update_type() is StateTtlConfig.UpdateType.OnReadAndWrite
        assert (
            config.get_state_visibility()
            is StateTtlConfig.StateVisibility.ReturnExpiredIfNotCleanedUp
        )
        assert config.get_ttl().to_milliseconds() == 3000
        strategies = config.get_cleanup_strategies()
        assert strategies.in_full_snapshot() and not strategies.is_cleanup_in_background()
        incremental = strategies.get_incremental_cleanup_strategy()
        assert incremental.get_cleanup_size() == 10 and incremental.run_cleanup_for_every_record()
        rocksdb = strategies.get_rocksdb_compact_filter_cleanup_strategy()
        assert rocksdb.get_query_time_after_num_entries() == 50
        assert rocksdb.get_periodic_compaction_time() == Duration.of_hours(1)

    def test_prints_as_pyflinks(self):
        config = (
            StateTtlConfig.new_builder(Time.seconds(1))
            .set_update_type(StateTtlConfig.UpdateType.OnReadAndWrite)
            .build()
        )
        assert (
            repr(config)
            == str(config)
            == (
                "StateTtlConfig<update_type=UpdateType.OnReadAndWrite, "
                "state_visibility=StateVisibility.NeverReturnExpired,"
                "ttl_time_characteristic =TtlTimeCharacteristic.ProcessingTime,ttl=1000 ms>"
            )
        )

    def test_without_background_cleanup_no_default_strategies(self):
        strategies = (
            StateTtlConfig.new_builder(Time.seconds(1))
            .disable_cleanup_in_background()
            .build()
            .get_cleanup_strategies()
        )
        assert strategies.get_incremental_cleanup_strategy() is None
        assert strategies.get_rocksdb_compact_filter_cleanup_strategy() is None

    def test_disabled_update_type_disables_it(self):
        config = (
            StateTtlConfig.new_builder(Time.seconds(1))
            .set_update_type(StateTtlConfig.UpdateType.Disabled)
            .build()
        )
        assert not config.is_enabled()
        assert StateTtl.of_descriptor(_descriptor(config)) is None

    def test_survives_pickling_with_its_descriptor(self):
        config = StateTtlConfig.new_builder(Time.seconds(1)).cleanup_full_snapshot().build()
        copy = pickle.loads(pickle.dumps(_descriptor(config)))
        assert copy._ttl_config == config
        assert copy._ttl_config.get_update_type() is StateTtlConfig.UpdateType.OnCreateAndWrite

    @pytest.mark.parametrize("ttl", [Time.milliseconds(0), Duration.of_millis(-5)])
    def test_a_ttl_must_be_positive(self, ttl):
        with pytest.raises(ValueError, match="must be positive"):
            StateTtlConfig.new_builder(ttl)

    def test_a_ttl_must_be_a_time_or_duration(self):
        with pytest.raises(TypeError, match=r"Time or a Duration, e.g. Time.seconds\(10\); got 5"):
            StateTtlConfig.new_builder(5)

    def test_enable_time_to_live_takes_a_config(self):
        with pytest.raises(TypeError, match="takes a StateTtlConfig"):
            ValueStateDescriptor("v", None).enable_time_to_live(Time.seconds(1))

    def test_imported_where_pyflink_has_it(self):
        import weir.datastream.state as state

        assert "StateTtlConfig" in state.__all__


class TestStateTtlOfDescriptor:
    def test_none_without_ttl(self):
        assert StateTtl.of_descriptor(ValueStateDescriptor("v", None)) is None

    def test_reads_the_config(self):
        config = (
            StateTtlConfig.new_builder(Time.seconds(2))
            .update_ttl_on_read_and_write()
            .return_expired_if_not_cleaned_up()
            .cleanup_full_snapshot()
            .build()
        )
        assert StateTtl.of_descriptor(_descriptor(config)) == StateTtl(
            ttl_ms=2000, update_on_read=True, return_expired=True, cleanup_full_snapshot=True
        )

    def test_defaults(self):
        config = StateTtlConfig.new_builder(Duration.of_millis(7)).build()
        assert StateTtl.of_descriptor(_descriptor(config)) == StateTtl(ttl_ms=7)
