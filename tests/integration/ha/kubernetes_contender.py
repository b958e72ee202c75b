"""A contender of Kubernetes high availability in a process of its own, for the fencing
tests: it leads or waits as a standby, publishes a Dispatcher address while leading, and
every 50 ms tries a fenced write of a counter with the token it was last granted, whether
or not it still leads (as a component that has not heard of its deposition would), and
says on stdout, one line per attempt, when (``time.monotonic()``, the machine's monotonic
clock, which the test's process shares) it asked whether it leads, the answer, and what
the write did.

The first time it leads it stores what a JobMaster would: job ``JOB``'s graph (a file in
``high-availability.storageDir`` and its pointer), its checkpoint id counter and a
completed checkpoint's pointer. Once the file ``DELETE_FLAG`` exists, each attempt also
tries to remove all three, as a job that ended would (one ``delete`` line each).

    python kubernetes_contender.py CONFIG_JSON IDENTIFIER DELETE_FLAG
"""

from __future__ import annotations

import json
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path

from weir.core.errors import LeaderLostError
from weir.core.highavailability import CompletedCheckpointPointer, LeaderContender
from weir.core.highavailability.kubernetes import KubernetesHaServices
from weir.core.ids import JobId
from weir.core.job_status import JobStatus

COUNTER_KEY = "contender-writes"
JOB = JobId("c0" * 16)
GRAPH = b"the job graph the first leader stored"


class Contender(LeaderContender):
    def __init__(self, address: str) -> None:
        self._address = address
        self.token: str | None = None
        self.lock = threading.Lock()

    @property
    def address(self) -> str:
        return self._address

    def grant_leadership(self, fencing_token: str) -> None:
        with self.lock:
            self.token = fencing_token
        print(f"granted {fencing_token}", flush=True)

    def revoke_leadership(self) -> None:
        print("revoked", flush=True)


def increment(data: dict[str, str]) -> dict[str, str]:
    data[COUNTER_KEY] = str(int(data.get(COUNTER_KEY, "0")) + 1)
    return data


def main() -> None:
    config, identifier, delete_flag = json.loads(sys.argv[1]), sys.argv[2], Path(sys.argv[3])
    services = KubernetesHaServices(config, identifier)
    contender = Contender(f"127.0.0.1:{identifier}")
    election = services.get_dispatcher_leader_election()
    election.start(contender)
    services.start_contending()
    print("started", flush=True)
    deletes: list[tuple[str, Callable[[], None]]] = []
    while True:
        with contender.lock:
            token = contender.token
        if token is not None and not deletes:
            graphs = services.get_job_graph_store()
            graphs.put_job_graph(JOB, GRAPH)
            counter = services.create_checkpoint_id_counter(JOB)
            counter.set_count(5)
            store = services.create_completed_checkpoint_store(JOB, 1)
            store.add_checkpoint(CompletedCheckpointPointer(JOB, 4, "file:///c/chk-4", 4))
            deletes = [
                ("graph", lambda: graphs.remove_job_graph(JOB)),
                ("checkpoints", lambda: store.shutdown(JobStatus.FINISHED)),
                ("counter", lambda: counter.shutdown(JobStatus.FINISHED)),
            ]
            print("stored", flush=True)
        if token is not None:
            asked = time.monotonic()
            leading = election.has_leadership(token)
            try:
                data = services.latch.guarded_update(token, increment)
                outcome = f"wrote {data[COUNTER_KEY]}"
            except LeaderLostError as exc:
                outcome = f"refused: {exc}"
            print(f"session {token[:8]} asked={asked:.6f} leading={leading} {outcome}", flush=True)
            if delete_flag.exists():
                for what, delete in deletes:
                    asked = time.monotonic()
                    try:
                        delete()
                        outcome = "deleted"
                    except LeaderLostError as exc:
                        outcome = f"refused: {exc}"
                    print(f"delete {what} asked={asked:.6f} {outcome}", flush=True)
        time.sleep(0.05)  # the pace of attempts, nothing waits on it


if __name__ == "__main__":
    main()
