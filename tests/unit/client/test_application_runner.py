"""What an application cluster's master does once its program has run: tear the cluster
down when its jobs ended well, keep it when one failed (no Spark, no sockets: the program's
exit code and the jobs' statuses are given)."""

from __future__ import annotations

import pytest

from weir.client.kubernetes_application import ApplicationRunner
from weir.client.kubernetes_manifests import Application


class _Given(ApplicationRunner):
    def __init__(self, code: int, jobs: list[tuple[str, str]]) -> None:
        self.torn_down = 0
        super().__init__(
            {"kubernetes.cluster-id": "wc"},
            Application("/opt/app/job.py"),
            "127.0.0.1:1",
            self._count,
        )
        self._code = code
        self._given_jobs = jobs

    def _count(self) -> None:
        self.torn_down += 1

    def _run_program(self) -> int:
        return self._code

    def _jobs(self) -> list[tuple[str, str]]:
        return self._given_jobs


@pytest.mark.parametrize(
    ("code", "jobs", "outcome"),
    [
        (0, [("a", "FINISHED")], "ended"),
        (0, [("a", "FINISHED"), ("b", "FINISHED")], "ended"),
        (1, [("a", "CANCELED")], "ended"),  # cancelled by its user: as Flink, the cluster goes
        (1, [("a", "FAILED")], "kept"),
        (0, [("a", "FINISHED"), ("b", "FAILED")], "kept"),
        (1, [], "kept"),  # the program failed before it submitted anything
        (0, [], "kept"),  # it never called execute()
        (1, [("a", "FINISHED")], "kept"),  # the program failed after its job
    ],
)
def test_the_cluster_goes_when_its_jobs_ended_well_and_stays_when_one_failed(
    code: int, jobs: list[tuple[str, str]], outcome: str
) -> None:
    runner = _Given(code, jobs).start()
    assert runner.ended.wait(30)
    assert runner.outcome == outcome
    assert runner.torn_down == (1 if outcome == "ended" else 0)


def test_a_program_that_cannot_be_run_keeps_the_cluster() -> None:
    class _Broken(_Given):
        def _run_program(self) -> int:
            raise OSError("no python")

    runner = _Broken(0, []).start()
    assert runner.ended.wait(30)
    assert (runner.outcome, runner.torn_down) == ("kept", 0)
