"""kazoo is installed with Weir, and a package a setting needs but the environment lacks
ends the CLI and the master in one line saying what to install."""

from __future__ import annotations

import sys
import tomllib
from pathlib import Path

import pytest

from weir.client import cli, master_process
from weir.core.errors import ConfigurationError, MissingDependencyError
from weir.core.highavailability.zookeeper.client import KAZOO_REQUIREMENT, create_client
from weir.core.optional_dependency import require

ROOT = Path(__file__).resolve().parents[3]
HA_CONFIG = {
    "high-availability.type": "zookeeper",
    "high-availability.zookeeper.quorum": "127.0.0.1:1",
    "high-availability.storageDir": "file:///nonexistent/weir-ha",
}


@pytest.fixture
def without_kazoo(monkeypatch: pytest.MonkeyPatch) -> None:
    """kazoo as if it were not installed: importing it raises ModuleNotFoundError."""
    for name in [m for m in sys.modules if m == "kazoo" or m.startswith("kazoo.")]:
        monkeypatch.delitem(sys.modules, name)
    monkeypatch.setitem(sys.modules, "kazoo", None)


class TestKazooIsADependency:
    def test_pyproject_lists_kazoo_among_the_dependencies(self) -> None:
        project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
        assert KAZOO_REQUIREMENT in project["dependencies"]


class TestRequire:
    def test_returns_the_module(self) -> None:
        assert require("json", needed_for="x", requirement="json") is sys.modules["json"]

    def test_names_the_setting_and_what_to_install(self, without_kazoo: None) -> None:
        with pytest.raises(MissingDependencyError) as raised:
            require("kazoo.client", needed_for="ZooKeeper HA", requirement="kazoo==2.11.0")
        message = str(raised.value)
        assert "\n" not in message
        assert message.startswith("ZooKeeper HA needs the Python package 'kazoo'")
        assert message.endswith("install it with 'pip install kazoo==2.11.0'")
        # The CLI and the master print ConfigurationErrors; code catching ImportError
        # still sees one.
        assert isinstance(raised.value, ConfigurationError)
        assert isinstance(raised.value, ImportError)


class TestWithoutKazoo:
    def test_the_zookeeper_client_says_what_is_missing(self, without_kazoo: None) -> None:
        with pytest.raises(MissingDependencyError, match="high-availability.type: zookeeper"):
            create_client(HA_CONFIG)

    def test_the_cli_prints_one_line(
        self,
        without_kazoo: None,
        tmp_path: Path,
        monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str],
    ) -> None:
        (tmp_path / "weir-conf.yaml").write_text(
            "".join(f"{key}: {value}\n" for key, value in HA_CONFIG.items())
        )
        monkeypatch.setenv("WEIR_CONF_DIR", str(tmp_path))
        assert cli.main(["list"]) == 1
        err = capsys.readouterr().err
        assert err.count("\n") == 1
        assert err.startswith("error: high-availability.type: zookeeper needs the Python")
        assert "pip install kazoo==2.11.0" in err

    def test_the_master_logs_one_line_and_exits_1(
        self, without_kazoo: None, caplog: pytest.LogCaptureFixture
    ) -> None:
        stop = master_process.ShutdownSignals()
        assert master_process.run({**HA_CONFIG}, stop) == 1
        errors = [r for r in caplog.records if r.levelname == "ERROR"]
        assert len(errors) == 1
        assert errors[0].exc_info is None
        assert "needs the Python package 'kazoo'" in errors[0].getMessage()
