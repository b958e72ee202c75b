"""The ``weir`` CLI: what ``run -s`` puts into the job's configuration."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from weir.client import cli
from weir.core import config as cfg
from weir.core.executor import get_context_configuration, get_executor


class TestRunFromCheckpoint:
    @pytest.fixture
    def seen(self, monkeypatch) -> dict[str, str]:
        seen: dict[str, str] = {}

        def run_script(script: str, args: list[str]) -> None:
            seen.update(get_context_configuration())
            get_executor()  # registered while the program runs

        monkeypatch.setattr(cli, "_run_script", run_script)
        return seen

    def test_restore_path_and_flag_reach_the_program(self, seen, tmp_path):
        chk = tmp_path / "chk-7"
        assert cli.main(["run", "-m", "127.0.0.1:1", "-s", str(chk), "-n", "job.py"]) == 1
        assert seen[cfg.STATE_RECOVERY_PATH.key] == str(chk)
        assert seen[cfg.STATE_RECOVERY_IGNORE_UNCLAIMED_STATE.key] == "true"
        assert get_context_configuration() == {}  # only for that program

    def test_relative_paths_become_absolute_and_urls_stay(self, seen, tmp_path, monkeypatch):
        monkeypatch.chdir(tmp_path)
        cli.main(["run", "-m", "127.0.0.1:1", "--fromSavepoint", "chk-3", "job.py"])
        assert seen[cfg.STATE_RECOVERY_PATH.key] == os.path.join(str(tmp_path), "chk-3")
        assert cfg.STATE_RECOVERY_IGNORE_UNCLAIMED_STATE.key not in seen
        cli.main(["run", "-m", "127.0.0.1:1", "-s", "s3://bucket/chk-3/_metadata", "job.py"])
        assert seen[cfg.STATE_RECOVERY_PATH.key] == "s3://bucket/chk-3/_metadata"


class TestParallelismFlag:
    @pytest.mark.parametrize("command", ["run", "info"])
    @pytest.mark.parametrize("value", ["0", "-3", "two"])
    def test_a_parallelism_below_one_is_refused_saying_what_is_allowed(
        self, command, value, monkeypatch, capsys
    ):
        monkeypatch.setattr(cli, "_run_script", pytest.fail)
        with pytest.raises(SystemExit) as exited:
            cli.main([command, "-p", value, "job.py"])
        assert exited.value.code == 2
        error = capsys.readouterr().err
        assert f"the parallelism must be a positive number, got '{value}'" in error
        assert "parallelism.default" in error

    def test_a_positive_parallelism_reaches_the_program(self, monkeypatch):
        seen: dict[str, str] = {}
        monkeypatch.setattr(
            cli, "_run_script", lambda script, args: seen.update(get_context_configuration())
        )
        cli.main(["run", "-m", "127.0.0.1:1", "-p", "3", "job.py"])
        assert seen[cfg.PARALLELISM_DEFAULT.key] == "3"


def test_kubernetes_session_takes_flinks_dynamic_properties() -> None:
    ns = cli.build_parser().parse_args(
        ["kubernetes-session", "-Dkubernetes.cluster-id=orders", "-D", "a.b=c=d", "--dry-run"]
    )
    assert ns.dynamic == [("kubernetes.cluster-id", "orders"), ("a.b", "c=d")]
    assert ns.dry_run is True


def test_a_dynamic_property_without_a_value_is_refused(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        cli.build_parser().parse_args(["kubernetes-session", "-Dkubernetes.cluster-id"])
    assert "expected -Dkey=value" in capsys.readouterr().err


def test_run_application_takes_flinks_target_and_the_programs_own_arguments() -> None:
    ns = cli.build_parser().parse_args(
        [
            "run-application",
            "-t",
            "kubernetes-application",
            "-Dkubernetes.cluster-id=wc",
            "local:///opt/app/job.py",
            "--output",
            "-D",
        ]
    )
    assert ns.target == "kubernetes-application"
    assert ns.dynamic == [("kubernetes.cluster-id", "wc")]
    assert (ns.script, ns.args) == ("local:///opt/app/job.py", ["--output", "-D"])


def test_run_application_names_its_one_target(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        cli.build_parser().parse_args(["run-application", "-t", "yarn-application", "job.py"])
    assert "kubernetes-application" in capsys.readouterr().err


def test_run_application_of_a_missing_program_says_so_before_anything_is_applied(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PATH", str(tmp_path))  # no kubectl: nothing could be applied
    code = cli.main(
        [
            "run-application",
            "-t",
            "kubernetes-application",
            "-Dkubernetes.cluster-id=wc",
            str(tmp_path / "nosuch.py"),
        ]
    )
    assert code == 1
    assert "no job file" in capsys.readouterr().err


def test_an_application_cluster_is_found_as_a_session_is() -> None:
    ns = cli.build_parser().parse_args(
        ["list", "--target", "kubernetes-application", "-Dkubernetes.cluster-id=wc"]
    )
    assert ns.target == "kubernetes-application"
