"""What the e2e tests ask a master that only a host of a HostNetwork can reach: run there,
prints JSON.

    python cluster_query.py ADDRESS taskmanagers
    python cluster_query.py ADDRESS job JOB_ID
"""

import json
import sys

from weir.client.cli import load_cli_config
from weir.client.dispatcher_client import DispatcherGateway
from weir.core.security import SecurityConfig

if __name__ == "__main__":
    address, what = sys.argv[1], sys.argv[2]
    with DispatcherGateway(
        address, security=SecurityConfig.from_config(load_cli_config())
    ) as gateway:
        if what == "taskmanagers":
            print(
                json.dumps(
                    [
                        {"resource_id": tm.resource_id, "data_host": tm.data_host, "pid": tm.pid}
                        for tm in gateway.list_task_managers()
                    ]
                )
            )
        else:
            details = gateway.job_details(sys.argv[3])
            tasks = [
                {
                    "state": t.state,
                    "resource_id": t.resource_id,
                    "attempt_number": t.attempt_number,
                    "name": t.task_name,
                }
                for t in details.tasks
            ]
            print(
                json.dumps(
                    {
                        "status": details.status,
                        "failure_cause": details.failure_cause,
                        "tasks": tasks,
                    }
                )
            )
