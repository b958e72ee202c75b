import pytest

from weir.core import config as cfg
from weir.core.errors import ConfigurationError


def test_unknown_key_is_named_with_a_suggestion():
    with pytest.raises(ConfigurationError, match=r"'parallelism.defualt'.*'parallelism.default'"):
        cfg.validate({"parallelism.defualt": 2})


def test_bad_value_names_the_key():
    with pytest.raises(ConfigurationError, match="taskmanager.numberOfTaskSlots"):
        cfg.validate({"taskmanager.numberOfTaskSlots": "zero"})
    with pytest.raises(ConfigurationError, match="high-availability.type"):
        cfg.validate({"high-availability.type": "etcd"})


def test_durations_and_sizes_parse_flink_syntax():
    assert cfg.get({"heartbeat.timeout": "50 s"}, cfg.HEARTBEAT_TIMEOUT) == 50_000
    assert cfg.get({"execution.buffer-timeout.interval": "-1"}, cfg.BUFFER_TIMEOUT) == -1
    assert cfg.get({"taskmanager.memory.segment-size": "64kb"}, cfg.SEGMENT_SIZE) == 65536


def test_spark_keys_pass_through():
    assert cfg.validate({"spark.executor.memory": "1g"}) == {"spark.executor.memory": "1g"}


def test_config_file_errors_name_the_key(tmp_path):
    path = tmp_path / "weir-conf.yaml"
    path.write_text("jobmanager:\n  rpc:\n    port: 7000\nslot.request.timeout: soon\n")
    with pytest.raises(ConfigurationError, match="slot.request.timeout"):
        cfg.load_config_file(path)


def test_docs_table_lists_every_key():
    table = cfg.docs_table()
    assert all(f"`{key}`" in table for key in cfg.OPTIONS)
