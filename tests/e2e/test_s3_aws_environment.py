"""A cluster whose only S3 credentials and endpoint are the AWS SDK's environment variables
(``AWS_ENDPOINT_URL``, ``AWS_ACCESS_KEY_ID``, ``AWS_SECRET_ACCESS_KEY``, ``AWS_REGION``),
with real processes: a master on Spark ``local[2]`` started by start-cluster.sh, no
``s3.*`` credential key anywhere in its configuration, and the running-sum job checkpointing
to ``s3://`` and writing its exactly-once FileSink there, on a real MinIO server
(tests/minio_server.py). The JobMaster and the TaskManagers reach the bucket through the
environment they inherit; the secret shows in no log."""

from __future__ import annotations

import re
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
from cluster_harness import WeirCluster
from ha_cluster import RUNNING_SUM, expected_running_sums

pytestmark = [pytest.mark.spark, pytest.mark.long]


def committed_on_s3(fs: Any, prefix: str) -> Counter[str]:
    lines: Counter[str] = Counter()
    for path in fs.find(prefix):
        if not path.rsplit("/", 1)[-1].startswith("."):
            lines.update(fs.cat_file(path).decode().splitlines())
    return lines


def test_a_cluster_given_s3_credentials_only_by_aws_environment_variables_checkpoints_there(
    minio: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    bucket = minio.new_bucket("aws-env")
    # What the master, and through it every TaskManager, inherits.
    monkeypatch.setenv("AWS_ENDPOINT_URL", minio.endpoint)
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", minio.access_key)
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", minio.secret_key)
    monkeypatch.setenv("AWS_REGION", "us-east-1")
    # MinIO on an IP address: path-style requests. No endpoint, no credential key.
    cluster = WeirCluster(
        tmp_path / "weir", "local[2]", extra_conf={"s3.path.style.access": "true"}
    )
    assert not [k for k in cluster.conf if k.startswith("s3.") and k != "s3.path.style.access"]
    started = cluster.start("-n", "2")
    assert started.returncode == 0, cluster.explain(started)
    try:
        records = 4_000
        result = cluster.weir(
            "run",
            str(RUNNING_SUM),
            "--output",
            f"s3://{bucket}/out",
            "--checkpoints",
            f"s3://{bucket}/checkpoints",
            "--records",
            str(records),
        )
        assert result.returncode == 0, cluster.explain(result)
        fs = minio.file_system()
        assert committed_on_s3(fs, f"{bucket}/out") == expected_running_sums(records)
        # It checkpointed into the bucket (the JobMaster wrote each _metadata there).
        completed = re.findall(r"checkpoint \d+ completed in", cluster.log_text())
        assert completed, cluster.log_text()[-3000:]
    finally:
        stopped = cluster.stop()
    assert stopped.returncode == 0, cluster.explain(stopped)
    for log in (p for p in cluster.log_dir.rglob("*") if p.is_file()):
        assert minio.secret_key not in log.read_text(errors="replace"), log
