"""A master that cannot start says which setting to fix, and exits 1."""

from __future__ import annotations

import subprocess

from cluster_harness import PYTHON, START_TIMEOUT_S


def test_a_spark_setting_that_stops_the_driver_jvm_is_named(tmp_path):
    (tmp_path / "weir-conf.yaml").write_text("jobmanager.bind-host: 127.0.0.1\n")
    result = subprocess.run(
        [
            PYTHON,
            "-m",
            "weir.client.master_process",
            "--config-dir",
            str(tmp_path),
            "--port",
            "0",
            "--set",
            "spark.driver.memory=1k",  # a heap too small for the JVM to start
        ],
        capture_output=True,
        text=True,
        timeout=START_TIMEOUT_S,
        check=False,
    )
    assert result.returncode == 1, result.stderr
    assert "the Spark driver's JVM exited" in result.stderr
    assert "spark.driver.memory='1k'" in result.stderr
    assert "JAVA_GATEWAY_EXITED" not in result.stderr.splitlines()[-1]
