"""Application mode on Kubernetes, as Flink's ``flink run-application --target
kubernetes-application``: a cluster of one job, whose program runs inside its master pod.

    weir run-application --target kubernetes-application -Dkubernetes.cluster-id=orders \\
        -Dkubernetes.container.image.ref=registry/weir-orders:1 local:///opt/app/orders.py ...
    weir run-application -t kubernetes-application -Dkubernetes.cluster-id=wc job.py ...

The client applies the cluster's objects (those of ``kubernetes-session``, with the program
and its arguments in the master's command) and returns once the master is ready. A program
given as ``local:///path`` is the image's own (Flink's convention); a file on the client's
machine is shipped in the cluster's ConfigMap. The master starts its services, then runs the
program against its own Dispatcher (``weir run`` in the pod, attached); when the program has
ended and every job it submitted with it, the cluster is torn down (the master deletes its
own Deployment, and with it every object of the cluster) if no job failed; when one failed
(or the program did), the cluster is kept, its job's last retained checkpoint with it, for
its user to look at (``weir list -a``, the dashboard, ``kubectl logs``) and to delete
(``kubectl delete deployment/<cluster-id>``).
"""

from __future__ import annotations

import json
import logging
import os
import ssl
import subprocess
import sys
import tempfile
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import TextIO

import yaml

from weir.client.kubernetes_manifests import LOCAL_SCHEME, Application
from weir.core import config as cfg
from weir.core.errors import ConfigurationError, WeirError

logger = logging.getLogger(__name__)

# Flink's execution target (flink run-application --target kubernetes-application).
TARGET = "kubernetes-application"
# Where a pod finds its service account's credentials and the API server.
_ACCOUNT = Path("/var/run/secrets/kubernetes.io/serviceaccount")
_API_TIMEOUT_S = 30
# How often the master looks at its jobs once the program has returned (a program may
# submit with execute_async and end before its jobs do).
_JOBS_POLL_S = 1.0


def _read_program(program: str) -> str:
    path = Path(program)
    if not path.is_file():
        msg = (
            f"no job file {program!r}; give the path of a Python program here (it is shipped "
            "to the master pod) or local:///path of one in the image"
        )
        raise WeirError(msg)
    try:
        return path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        msg = f"cannot ship job file {program!r}: {exc}"
        raise WeirError(msg) from None


def run_application(
    config: Mapping[str, str], program: str, args: Sequence[str], out: TextIO = sys.stdout
) -> int:
    """Start the application cluster of ``program`` and return once its master is ready
    (its program then runs in it). Raises WeirError (ConfigurationError on a bad value)."""
    from weir.client import kubernetes_session as session  # noqa: PLC0415

    if not program.startswith(LOCAL_SCHEME):
        from weir.client.cli import _check_job_file  # noqa: PLC0415

        _check_job_file(program)
    application = Application.of(program, args, _read_program)
    # Checked before anything is applied: a bad value fails here, not in the pod.
    session.render_manifests(config, application=application)
    cluster_id = cfg.get(config, cfg.KUBERNETES_CLUSTER_ID)
    namespace = cfg.get(config, cfg.KUBERNETES_NAMESPACE)
    if session.rest_service(config) is not None:
        msg = (
            f"a Weir cluster {cluster_id!r} exists in namespace {namespace!r} already; give "
            f"the application a -D{cfg.KUBERNETES_CLUSTER_ID.key} of its own, or delete that "
            f"one (kubectl -n {namespace} delete deployment/{cluster_id})"
        )
        raise WeirError(msg)
    session.create_cluster(config, application)
    out.write(
        f"Weir application cluster {cluster_id} created in namespace {namespace}; its master "
        f"runs {application.path}.\n"
    )
    out.flush()
    try:
        session.await_ready(config)
    except session.NotStarting as exc:
        session.stop_session(config, out)
        msg = f"the application cluster {cluster_id} cannot start, and was deleted: {exc}"
        raise WeirError(msg) from exc
    service = session.rest_service(config)
    out.write("Its master is ready and runs the program.\n")
    if service is not None:
        out.write(session.describe(config, service))
    out.write(
        "The cluster is deleted when its job has finished (or was cancelled); when it fails, "
        "the cluster stays, with its last checkpoint: see weir list -a --target "
        f"kubernetes-application -D{cfg.KUBERNETES_CLUSTER_ID.key}={cluster_id}, then kubectl -n "
        f"{namespace} delete deployment/{cluster_id}.\n"
    )
    out.flush()
    return 0


# --- in the master pod -----------------------------------------------------------------


def in_a_pod() -> bool:
    """Whether this process runs in a Kubernetes pod with its service account's token."""
    return bool(os.environ.get("KUBERNETES_SERVICE_HOST")) and (_ACCOUNT / "token").is_file()


def delete_own_deployment(config: Mapping[str, str]) -> None:
    """Delete the Deployment of this cluster through the API server, with the pod's service
    account: Kubernetes then stops this pod (SIGTERM) and deletes the rest of the cluster.
    Raises WeirError when the API server refuses."""
    cluster_id = cfg.get(config, cfg.KUBERNETES_CLUSTER_ID)
    namespace = cfg.get(config, cfg.KUBERNETES_NAMESPACE)
    host = os.environ["KUBERNETES_SERVICE_HOST"]
    port = os.environ.get("KUBERNETES_SERVICE_PORT", "443")
    if ":" in host:
        host = f"[{host}]"
    url = f"https://{host}:{port}/apis/apps/v1/namespaces/{namespace}/deployments/{cluster_id}"
    body = json.dumps(
        {"apiVersion": "v1", "kind": "DeleteOptions", "propagationPolicy": "Background"}
    ).encode()
    token = (_ACCOUNT / "token").read_text().strip()
    request = urllib.request.Request(
        url,
        data=body,
        method="DELETE",
        headers={"Authorization": f"Bearer {token}", "Content-Type": "application/json"},
    )
    context = ssl.create_default_context(cafile=str(_ACCOUNT / "ca.crt"))
    try:
        with urllib.request.urlopen(request, timeout=_API_TIMEOUT_S, context=context):  # noqa: S310
            pass
    except urllib.error.HTTPError as exc:
        detail = exc.read().decode(errors="replace")[:500]
        msg = f"the API server refused to delete deployment/{cluster_id}: {exc.code} {detail}"
        raise WeirError(msg) from None
    except (urllib.error.URLError, OSError) as exc:
        msg = f"cannot reach the API server to delete deployment/{cluster_id}: {exc}"
        raise WeirError(msg) from None


class ApplicationRunner:
    """Runs the program of an application cluster against the master's own Dispatcher
    (``weir run``, attached, in a process of its own), waits until every job of the cluster
    has ended, and then calls ``tear_down`` unless a job failed (or the program did)."""

    def __init__(
        self,
        config: Mapping[str, str],
        application: Application,
        dispatcher_address: str,
        tear_down: Callable[[], None],
    ) -> None:
        self._config = dict(config)
        self._application = application
        self._address = dispatcher_address
        self._tear_down = tear_down
        self._thread = threading.Thread(target=self._run, name="weir-application", daemon=True)
        self.outcome: str | None = None
        self.ended = threading.Event()

    def start(self) -> ApplicationRunner:
        self._thread.start()
        return self

    def _run_program(self) -> int:
        with tempfile.TemporaryDirectory(prefix="weir-application-") as conf_dir:
            conf = Path(conf_dir) / "weir-conf.yaml"
            conf.touch(mode=0o600)  # it may hold the cluster's token
            conf.write_text(yaml.safe_dump(self._config, sort_keys=True))
            command = [
                sys.executable,
                "-m",
                "weir.client.cli",
                "run",
                "-m",
                self._address,
                self._application.path,
                *self._application.args,
            ]
            logger.info("running the application: %s", " ".join(command[3:]))
            env = {**os.environ, "WEIR_CONF_DIR": conf_dir}
            return subprocess.run(command, env=env, check=False).returncode

    def _jobs(self) -> list[tuple[str, str]]:
        from weir.client.dispatcher_client import DispatcherGateway  # noqa: PLC0415
        from weir.core.job_status import JobStatus  # noqa: PLC0415
        from weir.core.security import SecurityConfig  # noqa: PLC0415

        security = SecurityConfig.from_config(self._config)
        with DispatcherGateway(self._address, security=security) as gateway:
            while True:
                jobs = gateway.list_jobs(include_terminated=True)
                if all(JobStatus[j.status].is_globally_terminal_state() for j in jobs):
                    return [(j.job_id, j.status) for j in jobs]
                time.sleep(_JOBS_POLL_S)  # polling the Dispatcher; the jobs' states decide

    def _run(self) -> None:
        try:
            code = self._run_program()
            jobs = self._jobs()
        except Exception:  # a thread that ended here would leave the cluster in limbo
            logger.exception("the application could not be run")
            self._keep("the application could not be run")
            return
        failed = [job for job, status in jobs if status == "FAILED"]
        statuses = ", ".join(f"{job} {status}" for job, status in jobs) or "no job"
        if failed or not jobs or (code != 0 and any(s == "FINISHED" for _, s in jobs)):
            self._keep(f"the program exited with {code}; its jobs: {statuses}")
            return
        logger.info("the application has ended (%s): tearing the cluster down", statuses)
        self.outcome = "ended"
        try:
            self._tear_down()
        except WeirError as exc:
            logger.error("the cluster could not be torn down: %s", exc)
        self.ended.set()

    def _keep(self, why: str) -> None:
        cluster_id = cfg.get(self._config, cfg.KUBERNETES_CLUSTER_ID)
        namespace = cfg.get(self._config, cfg.KUBERNETES_NAMESPACE)
        logger.error(
            "%s: the application cluster is kept, with its jobs' retained checkpoints, to be "
            "looked at (weir list -a, the dashboard, these logs); delete it with kubectl -n %s "
            "delete deployment/%s",
            why,
            namespace,
            cluster_id,
        )
        self.outcome = "kept"
        self.ended.set()


def application_of(words: Sequence[str]) -> Application:
    """The master's ``--application PROGRAM [ARG ...]``."""
    if not words:
        msg = "--application needs the program to run (and its arguments)"
        raise ConfigurationError(msg)
    return Application(words[0], tuple(words[1:]))
