"""What the real-cluster tests need, built once and cached (``make kubernetes`` runs it):

* Debian's container runtime and tools (containerd, runc, the CNI plugins, iptables,
  conntrack, socat, debootstrap, podman), installed with apt when missing;
* Kubernetes 1.34's servers, kubelet, kube-proxy and kubectl, etcd and a pod sandbox
  process (``tests/kubernetes/go``), crictl and CoreDNS (``tests/kubernetes/coredns``),
  built from the Go module proxy at pinned versions into
  ``~/.cache/weir/kubernetes-<version>/bin``; helm is the Makefile's;
* images, made without any registry in podman's store: a Debian 12 base from
  debootstrap (tagged ``debian:bookworm-slim``, what Weir's Dockerfile starts from, with
  this machine's extra CA certificates so that pip inside a build trusts its TLS proxy),
  the sandbox image and CoreDNS's, and Weir's own from ``deploy/kubernetes/Dockerfile``,
  rebuilt only when one of its inputs changes (its tag is their digest).

Kubernetes 1.34 is the newest that runs on cgroup v1 without being told to and with
Debian 12's containerd 1.6 (1.35 refuses cgroup v1 by default and is the last with
containerd 1.x).

Each step takes a lock in the cache directory: concurrent test processes (and worktrees)
build once and share the result.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import json
import os
import shutil
import subprocess
import sys
import time
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path

KUBERNETES_VERSION = "1.34.4"
CRICTL_VERSION = "v1.34.0"
# The Makefile builds helm (its `helm` target) for the chart's tests; the same binary.
HELM_VERSION = "v3.22.0"
DEBIAN_SUITE = "bookworm"
DEBIAN_MIRROR = "http://deb.debian.org/debian"

REPO = Path(__file__).resolve().parent.parent
SOURCES = Path(__file__).resolve().parent / "kubernetes"
WEIR_CACHE = Path(os.environ.get("WEIR_CACHE", Path.home() / ".cache" / "weir"))
CACHE = WEIR_CACHE / f"kubernetes-{KUBERNETES_VERSION}"
BIN = CACHE / "bin"
HELM = Path(os.environ.get("WEIR_HELM") or WEIR_CACHE / f"helm-{HELM_VERSION}" / "helm")

APT_PACKAGES = (
    "containerd",
    "runc",
    "containernetworking-plugins",
    "iptables",
    "conntrack",
    "socat",
    "debootstrap",
    "podman",
)
KUBERNETES_COMMANDS = (
    "kube-apiserver",
    "kube-controller-manager",
    "kube-scheduler",
    "kubelet",
    "kube-proxy",
    "kubectl",
)
# Built in tests/kubernetes/go besides Kubernetes' own commands.
OWN_COMMANDS = ("etcd", "pause")

# Images in podman's store, and then in the cluster's containerd.
PAUSE_IMAGE = "localhost/pause:3.10"
COREDNS_IMAGE = "localhost/coredns:test"
BASE_IMAGES = (
    f"docker.io/library/debian:{DEBIAN_SUITE}-slim",
    f"docker.io/library/debian:{DEBIAN_SUITE}",
    f"localhost/debian:{DEBIAN_SUITE}",
)
WEIR_REPOSITORY = "localhost/weir"
DOCKERFILE = REPO / "deploy" / "kubernetes" / "Dockerfile"
# What the Dockerfile copies into the image (its build context's part that matters).
WEIR_IMAGE_INPUTS = (
    "deploy/kubernetes/Dockerfile",
    "deploy/kubernetes/constraints.txt",
    "deploy/kubernetes/docker-entrypoint.sh",
    "deploy/conf/weir-conf.yaml",
    "pyproject.toml",
    "README.md",
    "weir",
    "dispatcher",
    "resourcemanager",
    "jobmanager",
    "taskmanager",
    "proto",
)
# Older Weir images kept in podman's store (other worktrees may be testing theirs).
WEIR_IMAGES_KEPT = 4

# Cold builds take minutes on idle cores and much longer on a loaded machine.
GO_BUILD_TIMEOUT_S = 3600
APT_TIMEOUT_S = 900
IMAGE_BUILD_TIMEOUT_S = 1800


class BuildError(Exception):
    """A build step failed; the message says which and ends with its output's tail."""


def log(message: str) -> None:
    print(f"[kubernetes {time.strftime('%H:%M:%S')}] {message}", file=sys.stderr, flush=True)


@contextlib.contextmanager
def locked(path: Path) -> Iterator[None]:
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("a") as handle:
        fcntl.lockf(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.lockf(handle, fcntl.LOCK_UN)


def run(
    command: list[str],
    what: str,
    *,
    timeout: float,
    cwd: Path | None = None,
    env: dict[str, str] | None = None,
    stdin: bytes | None = None,
) -> str:
    """Run a build command; raise BuildError with the tail of its output if it fails."""
    try:
        done = subprocess.run(
            command,
            cwd=cwd,
            env=env,
            input=stdin,
            capture_output=True,
            timeout=timeout,
            check=False,
        )
    except subprocess.TimeoutExpired as exc:
        msg = f"{what}: no result within {timeout:.0f} s ({' '.join(command)})"
        raise BuildError(msg) from exc
    except FileNotFoundError as exc:
        msg = f"{what}: {command[0]} is not installed"
        raise BuildError(msg) from exc
    output = (done.stdout + done.stderr).decode(errors="replace")
    if done.returncode != 0:
        tail = "\n".join(output.strip().splitlines()[-25:])
        msg = f"{what} failed ({done.returncode}): {' '.join(command)}\n{tail}"
        raise BuildError(msg)
    return done.stdout.decode(errors="replace")


def digest_files(paths: Iterable[Path], root: Path, extra: str = "") -> str:
    """A digest of files' names (relative to ``root``) and contents; directories are walked,
    leaving out bytecode."""
    files: list[Path] = []
    for path in paths:
        if path.is_dir():
            files += [
                p
                for p in path.rglob("*")
                if p.is_file() and "__pycache__" not in p.parts and p.suffix != ".pyc"
            ]
        elif path.exists():
            files.append(path)
    digest = hashlib.sha256(extra.encode())
    for file in sorted(files):
        digest.update(str(file.relative_to(root)).encode() + b"\0")
        digest.update(file.read_bytes() + b"\0")
    return digest.hexdigest()[:16]


# --- Debian packages ---------------------------------------------------------------------
def missing_packages() -> list[str]:
    return [
        p
        for p in APT_PACKAGES
        if subprocess.run(["dpkg", "-s", p], capture_output=True, check=False).returncode != 0
    ]


def ensure_packages() -> None:
    missing = missing_packages()
    if not missing:
        return
    log(f"installing {' '.join(missing)} with apt-get")
    env = {**os.environ, "DEBIAN_FRONTEND": "noninteractive"}
    run(["apt-get", "update", "-qq"], "apt-get update", timeout=APT_TIMEOUT_S, env=env)
    run(
        ["apt-get", "install", "-y", "-qq", "--no-install-recommends", *missing],
        "apt-get install",
        timeout=APT_TIMEOUT_S,
        env=env,
    )


# --- Go builds ---------------------------------------------------------------------------
def go_binary() -> str:
    go = shutil.which("go") or (
        "/usr/local/go/bin/go" if Path("/usr/local/go/bin/go").exists() else None
    )
    if go is None:
        msg = (
            "Go is not installed: the Kubernetes test cluster is built from the Go module proxy "
            "(Go 1.24 or newer, https://go.dev/dl/, in /usr/local/go)"
        )
        raise BuildError(msg)
    return go


def go_env() -> dict[str, str]:
    return {
        **os.environ,
        "CGO_ENABLED": "0",
        "GOFLAGS": "-mod=mod -buildvcs=false",
        # Never fetch another Go toolchain: the installed one builds these modules.
        "GOTOOLCHAIN": "local",
    }


def _version_ldflags() -> str:
    """What `kubectl version` and the servers report (Kubernetes' own build sets these)."""
    minor = KUBERNETES_VERSION.split(".")[1]
    flags = ["-s", "-w"]
    for package in ("k8s.io/component-base/version", "k8s.io/client-go/pkg/version"):
        flags += [
            f"-X {package}.gitVersion=v{KUBERNETES_VERSION}",
            f"-X {package}.gitMajor=1",
            f"-X {package}.gitMinor={minor}",
            f"-X {package}.gitTreeState=clean",
        ]
    return " ".join(flags)


def _go_build(source: Path, name: str, targets: list[str], out: str) -> None:
    """Build ``targets`` of the module in ``source`` (copied into the cache, where go.sum is
    written) into ``out`` (a directory ending in / or a file)."""
    work = CACHE / "src" / name
    shutil.rmtree(work, ignore_errors=True)
    shutil.copytree(source, work)
    command = ["nice", "-n", "10", go_binary(), "build", "-trimpath"]
    if name == "kubernetes":
        command += ["-ldflags", _version_ldflags()]
    else:
        command += ["-ldflags", "-s -w"]
    run(
        [*command, "-o", out, *targets],
        f"building {name}",
        timeout=GO_BUILD_TIMEOUT_S,
        cwd=work,
        env=go_env(),
    )


def _stamped(stamp: Path, outputs: Iterable[Path]) -> bool:
    return stamp.exists() and all(p.exists() for p in outputs)


def _restamp(stamp: Path) -> None:
    for old in stamp.parent.glob(stamp.name.rsplit("-", 1)[0] + "-*"):
        old.unlink()
    stamp.touch()


def ensure_kubernetes() -> None:
    """kube-apiserver, -controller-manager, -scheduler, kubelet, kube-proxy, kubectl, etcd
    and pause, once per version of tests/kubernetes/go."""
    source = SOURCES / "go"
    stamp = BIN / f".kubernetes-{digest_files([source], source, _version_ldflags())}"
    outputs = [BIN / n for n in (*KUBERNETES_COMMANDS, *OWN_COMMANDS)]
    if _stamped(stamp, outputs):
        return
    log(
        f"building Kubernetes v{KUBERNETES_VERSION} and etcd from the Go module proxy "
        "(6 min on two idle cores, much longer on busy ones; once)"
    )
    started = time.monotonic()
    targets = [f"k8s.io/kubernetes/cmd/{c}" for c in KUBERNETES_COMMANDS]
    targets += [f"./cmd/{c}" for c in OWN_COMMANDS]
    BIN.mkdir(parents=True, exist_ok=True)
    _go_build(source, "kubernetes", targets, f"{BIN}/")
    _restamp(stamp)
    log(f"Kubernetes built in {time.monotonic() - started:.0f} s")


def ensure_crictl() -> None:
    stamp = BIN / f".crictl-{CRICTL_VERSION}"
    if _stamped(stamp, [BIN / "crictl"]):
        return
    log(f"building crictl {CRICTL_VERSION}")
    command = ["nice", "-n", "10", go_binary(), "install", "-trimpath", "-ldflags", "-s -w"]
    env = {**go_env(), "GOBIN": str(BIN)}
    run(
        [*command, f"sigs.k8s.io/cri-tools/cmd/crictl@{CRICTL_VERSION}"],
        "building crictl",
        timeout=GO_BUILD_TIMEOUT_S,
        env=env,
    )
    _restamp(stamp)


def ensure_coredns() -> Path:
    """CoreDNS's binary, in a directory that becomes its image."""
    source = SOURCES / "coredns"
    rootfs = CACHE / "rootfs" / "coredns"
    stamp = CACHE / "rootfs" / f".coredns-{digest_files([source], source)}"
    if _stamped(stamp, [rootfs / "coredns"]):
        return rootfs
    log("building CoreDNS")
    rootfs.mkdir(parents=True, exist_ok=True)
    _go_build(source, "coredns", ["."], str(rootfs / "coredns"))
    _restamp(stamp)
    return rootfs


def ensure_helm() -> Path:
    if HELM.exists():
        return HELM
    log(f"building helm {HELM_VERSION}")
    env = {**go_env(), "GOBIN": str(HELM.parent)}
    command = ["nice", "-n", "10", go_binary(), "install", "-trimpath", "-ldflags", "-s -w"]
    run(
        [*command, f"helm.sh/helm/v3/cmd/helm@{HELM_VERSION}"],
        "building helm",
        timeout=GO_BUILD_TIMEOUT_S,
        env=env,
    )
    return HELM


# --- images ------------------------------------------------------------------------------
def podman_has(ref: str) -> bool:
    return subprocess.run(["podman", "image", "exists", ref], check=False).returncode == 0


def _import_rootfs(rootfs: Path, refs: Iterable[str], changes: Iterable[str]) -> None:
    """A one-layer image of a directory, in podman's store under every name of ``refs``."""
    refs = list(refs)
    tar = subprocess.Popen(
        ["tar", "--numeric-owner", "-C", str(rootfs), "-cf", "-", "."], stdout=subprocess.PIPE
    )
    command = ["podman", "import"]
    for change in changes:
        command += ["--change", change]
    try:
        done = subprocess.run(
            [*command, "-", refs[0]],
            stdin=tar.stdout,
            capture_output=True,
            timeout=600,
            check=False,
        )
    finally:
        assert tar.stdout is not None
        tar.stdout.close()
        tar.wait()
    if done.returncode != 0 or tar.returncode != 0:
        msg = f"podman import of {rootfs} failed: {done.stderr.decode(errors='replace')[-2000:]}"
        raise BuildError(msg)
    for ref in refs[1:]:
        run(["podman", "tag", refs[0], ref], f"tagging {ref}", timeout=60)


def _host_ca_certificates() -> list[Path]:
    return sorted(Path("/usr/local/share/ca-certificates").glob("*.crt"))


def ensure_base_image() -> None:
    """``debian:bookworm-slim`` in podman's store: debootstrap's minimal Debian 12, with
    the official image's apt sources (so pinned versions of its updates resolve) and this
    machine's extra CA certificates (re-made when they change)."""
    rootfs = CACHE / "rootfs" / "debian"
    cas = _host_ca_certificates()
    stamp = CACHE / "rootfs" / f".debian-{digest_files(cas, Path('/'), DEBIAN_SUITE)}"
    if stamp.exists() and all(podman_has(ref) for ref in BASE_IMAGES):
        return
    if not (rootfs / "etc" / "debian_version").exists():
        log(f"making a Debian {DEBIAN_SUITE} root filesystem with debootstrap")
        shutil.rmtree(rootfs, ignore_errors=True)
        run(
            [
                "nice",
                "-n",
                "10",
                "debootstrap",
                "--variant=minbase",
                "--include=ca-certificates",
                DEBIAN_SUITE,
                str(rootfs),
                DEBIAN_MIRROR,
            ],
            "debootstrap",
            timeout=1800,
        )
        shutil.rmtree(rootfs / "var" / "cache" / "apt" / "archives", ignore_errors=True)
        (rootfs / "var" / "cache" / "apt" / "archives" / "partial").mkdir(parents=True)
        for lists in (rootfs / "var" / "lib" / "apt" / "lists").glob("*_*"):
            lists.unlink()
        (rootfs / "etc" / "apt" / "sources.list").unlink(missing_ok=True)
        (rootfs / "etc" / "apt" / "sources.list.d" / "debian.sources").write_text(
            f"Types: deb\nURIs: {DEBIAN_MIRROR}\nSuites: {DEBIAN_SUITE} {DEBIAN_SUITE}-updates\n"
            "Components: main\nSigned-By: /usr/share/keyrings/debian-archive-keyring.gpg\n\n"
            f"Types: deb\nURIs: http://deb.debian.org/debian-security\n"
            f"Suites: {DEBIAN_SUITE}-security\nComponents: main\n"
            "Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg\n"
        )
    log(f"image {BASE_IMAGES[0]} ({len(cas)} extra CA certificates of this machine)")
    extra = rootfs / "usr" / "local" / "share" / "ca-certificates"
    shutil.rmtree(extra, ignore_errors=True)
    extra.mkdir(parents=True)
    for ca in cas:
        shutil.copy(ca, extra / ca.name)
    run(
        ["chroot", str(rootfs), "update-ca-certificates", "--fresh"],
        "update-ca-certificates",
        timeout=120,
    )
    _import_rootfs(rootfs, BASE_IMAGES, ['CMD ["bash"]'])
    _restamp(stamp)


def ensure_system_images() -> None:
    """The pod sandbox's image and CoreDNS's, from the binaries built here."""
    pause_root = CACHE / "rootfs" / "pause"
    pause_root.mkdir(parents=True, exist_ok=True)
    shutil.copy(BIN / "pause", pause_root / "pause")
    coredns_root = ensure_coredns()
    for ref, root, entrypoint in (
        (PAUSE_IMAGE, pause_root, "/pause"),
        (COREDNS_IMAGE, coredns_root, "/coredns"),
    ):
        name = ref.split("/")[-1].split(":")[0]
        stamp = CACHE / "rootfs" / f".image-{name}-{digest_files([root], root)}"
        if stamp.exists() and podman_has(ref):
            continue
        log(f"image {ref}")
        _import_rootfs(root, [ref], [f'ENTRYPOINT ["{entrypoint}"]'])
        _restamp(stamp)


@dataclass(frozen=True)
class WeirImage:
    """Weir's image in podman's store: ``repository:tag``, its size and how long its last
    build took (None when it was built before this record existed)."""

    repository: str
    tag: str
    size_bytes: int
    build_seconds: float | None

    @property
    def ref(self) -> str:
        return f"{self.repository}:{self.tag}"


def weir_image_tag() -> str:
    """The digest of every input of Weir's image: the tag it is built under."""
    return digest_files([REPO / p for p in WEIR_IMAGE_INPUTS], REPO)


def _image_size(ref: str) -> int:
    out = run(
        ["podman", "image", "inspect", "--format", "{{.Size}}", ref], "podman inspect", timeout=60
    )
    return int(out.strip())


def ensure_weir_image() -> WeirImage:
    """Weir's image, built from deploy/kubernetes/Dockerfile unless an image of the same
    inputs exists already."""
    tag = weir_image_tag()
    ref = f"{WEIR_REPOSITORY}:{tag}"
    record = CACHE / "images" / f"weir-{tag}.json"
    with locked(CACHE / "images.lock"):
        if not podman_has(ref):
            ensure_base_image()
            log(f"building {ref} from {DOCKERFILE.relative_to(REPO)} with podman")
            started = time.monotonic()
            run(
                [
                    "nice",
                    "-n",
                    "5",
                    "podman",
                    "build",
                    # Docker's format keeps SHELL; the host's network reaches the package
                    # registries; the base image is the local one, never pulled.
                    "--format",
                    "docker",
                    "--network",
                    "host",
                    "--pull=never",
                    "-f",
                    str(DOCKERFILE),
                    "-t",
                    ref,
                    str(REPO),
                ],
                "building Weir's image",
                timeout=IMAGE_BUILD_TIMEOUT_S,
            )
            seconds = time.monotonic() - started
            record.parent.mkdir(parents=True, exist_ok=True)
            record.write_text(json.dumps({"build_seconds": round(seconds, 1)}))
            log(f"{ref} built in {seconds:.0f} s")
            _forget_old_weir_images(keep=ref)
        build_seconds = json.loads(record.read_text())["build_seconds"] if record.exists() else None
        return WeirImage(WEIR_REPOSITORY, tag, _image_size(ref), build_seconds)


S3_DOCKERFILE = REPO / "tests" / "kubernetes" / "weir-s3.Dockerfile"
WEIR_S3_REPOSITORY = "localhost/weir-s3"


def ensure_weir_s3_image(base: WeirImage) -> WeirImage:
    """Weir's image with s3fs (tests/kubernetes/weir-s3.Dockerfile, FROM ``base``), built
    unless one of the same base and recipe exists already."""
    tag = digest_files([S3_DOCKERFILE], REPO, extra=base.ref)
    ref = f"{WEIR_S3_REPOSITORY}:{tag}"
    with locked(CACHE / "images.lock"):
        if not podman_has(ref):
            log(f"building {ref} FROM {base.ref} with podman")
            started = time.monotonic()
            run(
                [
                    "nice",
                    "-n",
                    "5",
                    "podman",
                    "build",
                    "--format",
                    "docker",
                    "--network",
                    "host",
                    "--pull=never",
                    "--build-arg",
                    f"BASE={base.ref}",
                    "-f",
                    str(S3_DOCKERFILE),
                    "-t",
                    ref,
                    str(S3_DOCKERFILE.parent),
                ],
                "building Weir's image with s3fs",
                timeout=IMAGE_BUILD_TIMEOUT_S,
            )
            log(f"{ref} built in {time.monotonic() - started:.0f} s")
            _forget_old_weir_images(keep=ref, repository=WEIR_S3_REPOSITORY)
        return WeirImage(WEIR_S3_REPOSITORY, tag, _image_size(ref), None)


def _forget_old_weir_images(keep: str, repository: str = WEIR_REPOSITORY) -> None:
    out = run(
        [
            "podman",
            "images",
            "--format",
            "{{.Repository}}:{{.Tag}} {{.CreatedAt}}",
            repository,
        ],
        "podman images",
        timeout=60,
    )
    refs = [line.split(" ", 1)[0] for line in out.splitlines() if line.strip()]
    # Newest first, as podman lists them.
    for ref in [r for r in refs if r != keep][WEIR_IMAGES_KEPT - 1 :]:
        subprocess.run(["podman", "rmi", ref], capture_output=True, check=False)


# --- everything --------------------------------------------------------------------------
def ensure_toolchain() -> None:
    """Packages, binaries and the images the cluster itself needs (not Weir's)."""
    if os.geteuid() != 0:
        msg = "the Kubernetes test cluster needs root (mounts, iptables, cgroups)"
        raise BuildError(msg)
    with locked(CACHE / "build.lock"):
        ensure_packages()
        ensure_kubernetes()
        ensure_crictl()
        ensure_helm()
        ensure_system_images()
        ensure_base_image()


def toolchain_ready() -> bool:
    """Whether everything ``ensure_toolchain`` makes is there (no build, no apt)."""
    stamps = list(BIN.glob(".kubernetes-*")) and list(BIN.glob(".crictl-*"))
    return bool(stamps) and HELM.exists() and not missing_packages() and podman_has(PAUSE_IMAGE)


def main(argv: list[str]) -> int:
    started = time.monotonic()
    try:
        ensure_toolchain()
        if "--toolchain-only" not in argv:
            image = ensure_weir_image()
            log(f"Weir's image {image.ref}: {image.size_bytes / 1e9:.2f} GB")
    except BuildError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    log(f"ready in {time.monotonic() - started:.0f} s (cache: {CACHE})")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
