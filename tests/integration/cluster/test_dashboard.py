"""The web dashboard in a real browser: Debian's chromium, headless, driven through
chromium-driver (installed by `make test`, nothing downloaded here), against the
MiniCluster running a real job. Pages load without console errors, the job graph shows
the job's operators, counts grow between two reads, the TaskManager page shows its log,
and cancelling from the page cancels the job. A screenshot of the job page is saved in
build/test-artifacts/ (gitignored)."""

from __future__ import annotations

import json
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest
from headless_chromium import chromium
from test_checkpoint_recovery import await_condition

from weir.common import Configuration, Types, WatermarkStrategy
from weir.datastream import StreamExecutionEnvironment
from weir.datastream.connectors.number_seq import NumberSequenceSource

pytestmark = pytest.mark.spark

ARTIFACTS = Path(__file__).resolve().parents[3] / "build" / "test-artifacts"


@pytest.fixture
def browser() -> Iterator[object]:
    with chromium() as driver:
        yield driver


def _text(driver, selector: str) -> str:
    """The text of the first element matching ``selector`` ("" if none), read in one
    script call: the page redraws itself every refresh, so an element found in one call
    may be gone in the next."""
    return driver.execute_script(
        "const e = document.querySelector(arguments[0]); return e ? e.textContent : '';",
        selector,
    )


def _count(driver, selector: str) -> int:
    return driver.execute_script("return document.querySelectorAll(arguments[0]).length;", selector)


def _click(driver, selector: str) -> bool:
    return driver.execute_script(
        "const e = document.querySelector(arguments[0]); if (e) e.click(); return !!e;", selector
    )


def _console_errors(driver) -> list[str]:
    return [e["message"] for e in driver.get_log("browser") if e["level"] == "SEVERE"]


def _job_state(url: str, job_id: str) -> str:
    with urllib.request.urlopen(f"{url}/jobs/{job_id}", timeout=30) as response:
        return json.loads(response.read())["state"]


def _start_job(mini_cluster) -> str:
    from weir.core.executor import register_executor

    register_executor(mini_cluster.executor())
    try:
        env = StreamExecutionEnvironment.get_execution_environment(Configuration())
        env.set_parallelism(1)
        (
            env.from_source(
                NumberSequenceSource(1, 10**12), WatermarkStrategy.no_watermarks(), "numbers"
            )
            .map(lambda x: (x % 4, 1), output_type=Types.TUPLE([Types.LONG(), Types.INT()]))
            .key_by(lambda t: t[0])
            .reduce(lambda a, b: (a[0], a[1] + b[1]))
            .filter(lambda t: False)
            .print()
        )
        return str(env.execute_async("dashboard job").get_job_id())
    finally:
        register_executor(None)


def test_dashboard_shows_a_running_job_and_cancels_it(mini_cluster, browser):
    driver = browser
    url = mini_cluster.rest_url
    job_id = _start_job(mini_cluster)
    await_condition(lambda: _job_state(url, job_id) == "RUNNING", "the job to run")

    # Overview: TaskManagers, slots and the job.
    driver.get(f"{url}/#/overview")
    await_condition(
        lambda: _count(driver, f'tr.job-row[data-job-id="{job_id}"]'),
        "the job in the overview's job list",
    )
    # The page refreshes itself until the job's TaskManager has registered.
    await_condition(
        lambda: int(_text(driver, "#overview-taskmanagers .value") or 0),
        "a TaskManager in the overview",
    )
    assert _console_errors(driver) == []

    # The job page: its graph from the plan, with the job's operators and ship strategy.
    driver.get(f"{url}/#/job/{job_id}")
    await_condition(
        lambda: _count(driver, "#job-graph g.vertex") == 2, "the job graph's two vertices"
    )
    graph = _text(driver, "#job-graph")
    assert "Source: numbers" in graph and "Map" in graph and "Reduce" in graph
    assert "HASH" in graph

    def records_out() -> int:
        text = _text(driver, "#vertices-table tr.vertex-row td.records-out").replace(",", "")
        return int(text) if text.isdigit() else -1

    first = await_condition(lambda: records_out() > 0 and records_out(), "records out")
    # The page refreshes itself: the count grows without a reload.
    await_condition(lambda: records_out() > first, "records out to grow on the page")
    await_condition(lambda: "/s in" in _text(driver, "#job-graph"), "rates in the graph")
    assert _console_errors(driver) == []
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    assert driver.save_screenshot(str(ARTIFACTS / "dashboard-job.png"))

    # A TaskManager's page with its log.
    tm_id = driver.execute_script(
        "return fetch('/taskmanagers').then(r => r.json()).then(b => b.taskmanagers[0].id)"
    )
    driver.get(f"{url}/#/taskmanager/{tm_id}")
    # The page shows the tail of the TaskManager's log file as the REST API serves it (the
    # shared cluster's logs roll over, so their first lines are long gone).

    def shows_the_log() -> bool:
        shown = _text(driver, "#tm-log").strip()
        if not shown:
            return False
        with urllib.request.urlopen(f"{url}/taskmanagers/{tm_id}/log", timeout=30) as response:
            served = response.read().decode("utf-8", "replace")
        return shown.splitlines()[-1] in served

    await_condition(shows_the_log, "the TaskManager's log")
    assert _console_errors(driver) == []

    # Cancel from the page: the button asks for a second click, then the job is cancelled.
    driver.get(f"{url}/#/job/{job_id}")
    await_condition(lambda: _click(driver, "#cancel-job"), "the cancel button")
    assert _job_state(url, job_id) == "RUNNING"
    await_condition(
        lambda: _text(driver, "#cancel-job") == "Confirm Cancel",
        "the cancel button to ask for confirmation",
    )
    assert _click(driver, "#cancel-job")
    await_condition(lambda: _job_state(url, job_id) == "CANCELED", "the job to be cancelled")
    await_condition(
        lambda: "CANCELED" in _text(driver, "#job-name"), "the page to show the job cancelled"
    )
