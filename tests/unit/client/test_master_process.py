"""The master process's command line and configuration (no Spark, no sockets)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from weir.client import master_process
from weir.core.errors import ConfigurationError


def parse(conf_dir: Path, *args: str):
    return master_process.build_parser().parse_args(["--config-dir", str(conf_dir), *args])


@pytest.fixture
def conf_dir(tmp_path: Path) -> Path:
    (tmp_path / "weir-conf.yaml").write_text(
        "jobmanager.rpc.port: 6123\n"
        "jobmanager.bind-host: 127.0.0.1\n"
        "resourcemanager.taskmanager.min: 0\n"
        "spark.master: local[2]\n"
    )
    return tmp_path


class TestLoadMasterConfig:
    def test_reads_the_file(self, conf_dir: Path) -> None:
        config = master_process.load_master_config(parse(conf_dir))
        assert config["jobmanager.rpc.port"] == "6123"
        assert config["spark.master"] == "local[2]"

    def test_command_line_wins_over_the_file(self, conf_dir: Path) -> None:
        ns = parse(
            conf_dir,
            "--host",
            "0.0.0.0",
            "--port",
            "0",
            "--set",
            "resourcemanager.taskmanager.min=2",
            "--set",
            "spark.master=local[4]",
        )
        config = master_process.load_master_config(ns)
        assert config["jobmanager.bind-host"] == "0.0.0.0"
        assert config["jobmanager.rpc.port"] == "0"
        assert config["resourcemanager.taskmanager.min"] == "2"
        assert config["spark.master"] == "local[4]"

    def test_an_unknown_key_in_set_is_named(self, conf_dir: Path) -> None:
        with pytest.raises(ConfigurationError, match=re.escape("resourcemanager.taskmanagers.min")):
            master_process.load_master_config(
                parse(conf_dir, "--set", "resourcemanager.taskmanagers.min=2")
            )

    def test_a_bad_value_in_the_file_is_named(self, conf_dir: Path) -> None:
        (conf_dir / "weir-conf.yaml").write_text("jobmanager.rpc.port: many\n")
        with pytest.raises(ConfigurationError, match=re.escape("jobmanager.rpc.port")):
            master_process.load_master_config(parse(conf_dir))

    def test_a_missing_file_says_where_it_looked(self, tmp_path: Path) -> None:
        with pytest.raises(ConfigurationError, match=re.escape("weir-conf.yaml")):
            master_process.load_master_config(parse(tmp_path / "nowhere"))


class TestMain:
    def test_exits_1_naming_a_bad_key(self, conf_dir: Path, capsys) -> None:
        (conf_dir / "weir-conf.yaml").write_text("jobmanager.rpc.prot: 1\n")
        assert master_process.main(["--config-dir", str(conf_dir)]) == 1
        assert "jobmanager.rpc.prot" in capsys.readouterr().err

    def test_a_set_without_a_value_is_a_usage_error(self, conf_dir: Path) -> None:
        with pytest.raises(SystemExit) as exited:
            parse(conf_dir, "--set", "no-equals-sign")
        assert exited.value.code == 2

    def test_the_shipped_configuration_is_valid(self) -> None:
        shipped = Path(__file__).resolve().parents[3] / "deploy" / "conf"
        config = master_process.load_master_config(parse(shipped))
        assert config["jobmanager.rpc.port"] == "6123"
        assert config["taskmanager.numberOfTaskSlots"] == "1"

    @pytest.mark.parametrize(
        ("line", "named"),
        [
            ("jobmanager.rpc.port: 99999\n", r"'jobmanager.rpc.port'.*'99999'"),
            ("spark.master: lcoal[2]\n", r"'spark.master'.*'lcoal\[2\]'"),
            ("heartbeat.interval: 10 s\nheartbeat.timeout: 3 s\n", r"heartbeat.timeout \(3000 ms"),
        ],
    )
    def test_exits_1_naming_a_bad_value_before_starting_anything(
        self, conf_dir: Path, capsys, line: str, named: str
    ) -> None:
        (conf_dir / "weir-conf.yaml").write_text(line)
        assert master_process.main(["--config-dir", str(conf_dir)]) == 1
        assert re.search(named, capsys.readouterr().err)

    def test_the_heartbeat_check_sees_the_file_and_the_command_line_together(
        self, conf_dir: Path
    ) -> None:
        (conf_dir / "weir-conf.yaml").write_text("heartbeat.timeout: 3 s\n")
        config = master_process.load_master_config(
            parse(conf_dir, "--set", "heartbeat.interval=1 s")
        )
        assert config["heartbeat.interval"] == "1 s"


def test_an_application_is_the_last_of_the_arguments(conf_dir: Path) -> None:
    ns = parse(conf_dir, "--set", "a=b", "--application", "/opt/app/job.py", "--set", "x")
    assert ns.application == ["/opt/app/job.py", "--set", "x"]
    assert ns.settings == [("a", "b")]
    assert parse(conf_dir).application is None
