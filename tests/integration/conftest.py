"""Integration fixtures shared by every suite: one SparkSession for the whole run."""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from pyspark.sql import SparkSession

_REPO_ROOT = str(Path(__file__).resolve().parents[2])
# The service packages come from the checkout, ahead of same-named test directories
# (tests/integration/resourcemanager must not shadow the resourcemanager package).
if _REPO_ROOT not in sys.path:
    sys.path.insert(0, _REPO_ROOT)


@pytest.fixture(scope="session")
def spark_session() -> Iterator[object]:
    """A ``local[4]`` SparkSession shared by the whole test session (starting one takes
    seconds). Suites that lease TaskManagers cap themselves at two each
    (``resourcemanager.taskmanager.max``), so a session-scoped cluster holding its leases
    does not starve a later suite. Tests must leave no Spark job running behind them."""
    os.environ["PYSPARK_PYTHON"] = sys.executable
    # Spark's Python workers import Weir's packages from the checkout, installed or not.
    paths = [p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p]
    if _REPO_ROOT not in paths:
        os.environ["PYTHONPATH"] = os.pathsep.join([_REPO_ROOT, *paths])
    spark = (
        SparkSession.builder.master("local[4]")
        .appName("weir-tests")
        .config("spark.ui.enabled", "false")
        .config("spark.pyspark.python", sys.executable)
        .getOrCreate()
    )
    spark.sparkContext.setLogLevel("WARN")
    yield spark
    spark.stop()
