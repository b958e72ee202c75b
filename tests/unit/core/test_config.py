import re

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
    # Kubernetes' quantities, as the Helm chart's values write pod sizes.
    assert cfg.parse_memory_bytes("2048Mi") == cfg.parse_memory_bytes("2 gb") == 2 << 30
    with pytest.raises(ValueError, match="1 mb"):
        cfg.parse_memory_bytes("2ib")


def test_spark_keys_pass_through():
    assert cfg.validate({"spark.executor.memory": "1g"}) == {"spark.executor.memory": "1g"}


def test_config_file_errors_name_the_key(tmp_path):
    path = tmp_path / "weir-conf.yaml"
    path.write_text("jobmanager:\n  rpc:\n    port: 7000\nslot.request.timeout: soon\n")
    with pytest.raises(ConfigurationError, match="slot.request.timeout"):
        cfg.load_config_file(path)


@pytest.mark.parametrize(
    ("content", "says"),
    [
        (b"a: 1\n\x00\x01", "holds binary data (a NUL byte at offset 5)"),
        (b"a: caf\xe9\n", "is not UTF-8 text (byte 0xe9 at offset 6)"),
        (b"a: [1,\n", "cannot parse configuration file"),
        (b"a: \x07\n", "cannot parse configuration file"),
    ],
)
def test_a_config_file_that_is_not_yaml_text_is_named_on_one_line(tmp_path, content, says):
    path = tmp_path / "weir-conf.yaml"
    path.write_bytes(content)
    with pytest.raises(ConfigurationError) as info:
        cfg.load_config_file(path)
    assert str(path) in str(info.value) and says in str(info.value)
    assert "\n" not in str(info.value)


def test_a_config_file_that_cannot_be_read_is_named(tmp_path):
    with pytest.raises(ConfigurationError, match="cannot read configuration file.*directory"):
        cfg.load_config_file(tmp_path)


def test_a_nul_character_in_a_key_or_value_is_refused_naming_the_key():
    with pytest.raises(ConfigurationError, match=r"value for configuration key 'a\.b'.*position 2"):
        cfg.validate({"a.b": "/x\x00"})
    with pytest.raises(ConfigurationError, match=r"configuration key 'spark\.x\\x00'"):
        cfg.validate({"spark.x\x00": "1"})


def test_docs_table_lists_every_key():
    table = cfg.docs_table()
    assert all(f"`{key}`" in table for key in cfg.OPTIONS)


@pytest.mark.parametrize("port", ["99999", "-1", "65536"])
def test_a_port_out_of_range_is_refused_by_name(port):
    with pytest.raises(ConfigurationError, match=rf"'jobmanager.rpc.port'.*0 to 65535.*'{port}'"):
        cfg.validate({"jobmanager.rpc.port": port})
    assert cfg.get({"jobmanager.rpc.port": "0"}, cfg.JOBMANAGER_PORT) == 0


def test_a_heartbeat_timeout_shorter_than_the_interval_is_refused():
    entries = cfg.validate({"heartbeat.interval": "10 s", "heartbeat.timeout": "2 s"})
    with pytest.raises(ConfigurationError, match=r"heartbeat.timeout \(2000 ms\).*heartbeat"):
        cfg.check_relations(entries)
    # the default interval (10 s) counts when only the timeout is given
    with pytest.raises(ConfigurationError, match="heartbeat.interval"):
        cfg.check_relations({"heartbeat.timeout": "5 s"})
    cfg.check_relations({"heartbeat.interval": "500 ms", "heartbeat.timeout": "6 s"})
    with pytest.raises(ConfigurationError, match=r"'heartbeat.interval'.*'0 ms'"):
        cfg.validate({"heartbeat.interval": "0 ms"})


@pytest.mark.parametrize(
    "master", ["local", "local[4]", "local[*]", "local[2, 3]", "spark://h1:7077,h2:7077", "yarn"]
)
def test_spark_master_urls_spark_accepts(master):
    assert cfg.get({"spark.master": master}, cfg.SPARK_MASTER) == master


@pytest.mark.parametrize("master", ["lcoal[2]", "local[0]", "spark://host", "local[two]", ""])
def test_a_bad_spark_master_is_named_with_the_forms_spark_accepts(master):
    with pytest.raises(
        ConfigurationError, match=rf"'spark.master'.*local\[N\].*'{re.escape(master)}'"
    ):
        cfg.validate({"spark.master": master})


@pytest.mark.parametrize(
    ("key", "first_choice"),
    [("restart-strategy.type", "none"), ("execution.checkpointing.storage", "jobmanager")],
)
def test_a_bad_choice_lists_the_choices_and_that_the_key_may_be_unset(key, first_choice):
    with pytest.raises(ConfigurationError) as caught:
        cfg.validate({key: "sometimes"})
    message = str(caught.value)
    assert f"expected one of {first_choice}, " in message
    assert ", ," not in message
    assert message.endswith("or leave it unset")
    assert cfg.validate({key: ""}) == {key: ""}


def test_no_option_lists_an_empty_choice():
    assert all("" not in option.choices for option in cfg.OPTIONS.values())
