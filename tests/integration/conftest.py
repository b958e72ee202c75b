"""Integration fixtures shared by every suite: one SparkSession for the whole run."""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator

import pytest
from pyspark.sql import SparkSession


@pytest.fixture(scope="session")
def spark_session() -> Iterator[object]:
    """A ``local[4]`` SparkSession shared by the whole test session (starting one takes
    seconds). Suites that lease TaskManagers cap themselves at two each
    (``resourcemanager.taskmanager.max``), so a session-scoped cluster holding its leases
    does not starve a later suite. Tests must leave no Spark job running behind them."""
    os.environ["PYSPARK_PYTHON"] = sys.executable
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
