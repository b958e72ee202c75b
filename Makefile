# Weir: `make run` runs the main example on the embedded mini cluster; `make test` runs the suite.
SHELL := /bin/bash
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed
CDS_STAMP := $(VENV)/.spark-cds
PROTOS := $(wildcard proto/*.proto)

.PHONY: setup run test test-long test-e2e-tls lint site layers typecheck proto bench clean java browser helm minio maven kubernetes

setup: java $(STAMP) $(CDS_STAMP)

$(STAMP): pyproject.toml
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -e '.[dev,kafka,s3]'
	touch $(STAMP)

# A class-data sharing archive of the Spark driver's classes: every Spark driver Weir
# starts afterwards (the embedded cluster's, the master's) starts seconds sooner.
$(CDS_STAMP): $(STAMP)
	$(PY) -m weir.resourcemanager.spark_driver_jvm
	touch $(CDS_STAMP)

# Spark needs a JVM, the cluster scripts pgrep/setsid, the multi-host tests `ip` (network
# namespaces), the high-availability tests a ZooKeeper server (Debian's package, run by
# the tests without systemd) and the Kafka tests Maven (it fetches the broker's jars,
# tests/kafka/pom.xml): install them on a fresh Debian machine if they are missing.
java:
	@command -v java >/dev/null 2>&1 && command -v pgrep >/dev/null 2>&1 \
	  && command -v ip >/dev/null 2>&1 && test -f /usr/share/java/zookeeper.jar \
	  && command -v mvn >/dev/null 2>&1 || { \
	  echo "installing a Java runtime, procps, iproute2, ZooKeeper and Maven"; \
	  (apt-get update -qq && DEBIAN_FRONTEND=noninteractive \
	    apt-get install -y -qq openjdk-17-jre-headless procps iproute2 zookeeper maven) >/dev/null; }

# The dashboard's browser test drives Debian's chromium headless through chromium-driver;
# install both on a fresh Debian machine if they are missing (nothing is downloaded by
# the test itself).
browser:
	@command -v chromium >/dev/null 2>&1 && command -v chromedriver >/dev/null 2>&1 || { \
	  echo "installing chromium and chromium-driver"; \
	  (apt-get update -qq && DEBIAN_FRONTEND=noninteractive \
	    apt-get install -y -qq chromium chromium-driver) >/dev/null; }

# The Kubernetes chart's tests lint and render it with helm, built once from Helm's Go
# module into a cache outside the repository (a few minutes). Without Go or the module
# proxy nothing is built, and those tests are skipped, saying why.
HELM_VERSION := v3.22.0
HELM_DIR := $(HOME)/.cache/weir/helm-$(HELM_VERSION)
HELM := $(HELM_DIR)/helm
helm:
	@test -x $(HELM) || { command -v go >/dev/null 2>&1 \
	  && echo "building helm $(HELM_VERSION) with go install into $(HELM_DIR)" \
	  && GOBIN=$(HELM_DIR) GOFLAGS=-buildvcs=false \
	    go install helm.sh/helm/v3/cmd/helm@$(HELM_VERSION) >/dev/null 2>&1; } \
	  || echo "helm $(HELM_VERSION) could not be built (no Go, or no Go module proxy):" \
	    "the chart's tests will be skipped"

# The real-cluster tests start a Kubernetes cluster of their own on this machine
# (tests/kubernetes_cluster.py): Kubernetes, etcd, crictl and CoreDNS built once from the Go
# module proxy (minutes the first time, more on a loaded machine), Debian's containerd,
# runc, CNI plugins and podman installed when missing, and the images made with podman,
# Weir's from deploy/kubernetes/Dockerfile whenever its inputs change (tests/kubernetes_build.py).
kubernetes: setup helm
	$(PY) tests/kubernetes_build.py

# The S3 tests run a real MinIO server (tests/minio_server.py), built once from its Go module
# into a cache outside the repository (a few minutes, a 150 MB binary). Without Go or the
# module proxy nothing is built here, and the tests try once more themselves, saying why
# they cannot.
MINIO_VERSION := v0.0.0-20260212201848-7aac2a2c5b7c
MINIO_DIR := $(HOME)/.cache/weir/minio-$(MINIO_VERSION)
MINIO := $(MINIO_DIR)/minio
minio:
	@test -x $(MINIO) || { command -v go >/dev/null 2>&1 \
	  && echo "building MinIO $(MINIO_VERSION) with go install into $(MINIO_DIR)" \
	  && mkdir -p $(MINIO_DIR) && GOBIN=$(MINIO_DIR)/build GOFLAGS=-buildvcs=false \
	    go install github.com/minio/minio@$(MINIO_VERSION) >/dev/null 2>&1 \
	  && mv $(MINIO_DIR)/build/minio $(MINIO) && rmdir $(MINIO_DIR)/build; } \
	  || echo "MinIO $(MINIO_VERSION) could not be built (no Go, or no Go module proxy)"

# The YARN and HDFS tests run Hadoop's own minicluster (tests/hadoop_cluster.py): Maven
# fetches it from Maven Central once, and javac compiles its launcher. Install both on a
# fresh Debian machine if they are missing.
maven:
	@command -v mvn >/dev/null 2>&1 && command -v javac >/dev/null 2>&1 || { \
	  echo "installing Maven and a JDK"; \
	  (apt-get update -qq && DEBIAN_FRONTEND=noninteractive \
	    apt-get install -y -qq maven openjdk-17-jdk-headless) >/dev/null; }

run: setup
	$(PY) examples/word_count.py

# The .proto files live in proto/ but their package is weir.proto: protoc sees proto/ as
# weir/proto (a virtual path), so generated imports read `from weir.proto import ...`.
# PROTO_OUT=dir writes the modules there instead (the up-to-date test compares them).
PROTO_OUT ?= proto
proto: $(STAMP)
	@rm -rf build/protoc && mkdir -p build/protoc
	$(PY) -m grpc_tools.protoc -Iweir/proto=proto --python_out=build/protoc \
	  --pyi_out=build/protoc --grpc_python_out=build/protoc $(PROTOS)
	cp build/protoc/weir/proto/*_pb2* $(PROTO_OUT)/
	@rm -rf build/protoc

lint: setup
	$(VENV)/bin/ruff check .
	$(VENV)/bin/ruff format --check .

# The service folders are mapped beneath `weir` only once installed, and neither mypy nor
# import-linter follows an editable install's mapping: both read the built wheel, unpacked
# in build/site. Their reports name the files as they are in the repository.
SITE := build/site
TO_REPO := sed -E 's,(^|[^[:alnum:]_/])(build/site/)?weir/(dispatcher|resourcemanager|jobmanager|taskmanager|proto)/,\1\3/,g'

site: setup
	@rm -rf $(SITE) build/wheel build/lib build/bdist.* && mkdir -p build/wheel
	@$(PY) -m pip wheel --quiet --no-deps --no-build-isolation -w build/wheel .
	@$(PY) -m zipfile -e build/wheel/weir-*.whl $(SITE)

layers: site
	set -o pipefail; cd $(SITE) && PYTHONPATH=. $(abspath $(VENV))/bin/lint-imports \
	  --no-cache $(abspath .importlinter) | $(TO_REPO)

typecheck: site
	set -o pipefail; cd $(SITE) && $(abspath $(VENV))/bin/mypy \
	  --config-file $(abspath pyproject.toml) --cache-dir $(abspath .mypy_cache) weir \
	  | $(TO_REPO)

# The tests beyond the unit tier wait as much as they compute (on JVMs, subprocesses,
# checkpoints): three workers, each with its own SparkContext and shared clusters, a test
# file per worker at a time (pytest-xdist), keep both cores busy. The unit tier computes.
UNIT_WORKERS ?= 2
TEST_WORKERS ?= 3

# Static checks first, then the unit tier (no sockets, no subprocesses: on both cores, stops
# at the first failure), then everything else with the slowest tests listed.
# helm, MinIO and the Kubernetes test cluster's parts, when they have to be built, build
# meanwhile (minutes the first time). Weir's image (whenever the code changed) builds after
# them without holding up the tests: the Kubernetes test waits for it (tests/kubernetes_build.py
# builds under a lock), the others do not need it.
test: setup browser maven
	@mkdir -p build; rm -f build/tools.done; \
	  ( $(MAKE) --no-print-directory helm minio > build/helm-build.log 2>&1; \
	    $(PY) tests/kubernetes_build.py --toolchain-only >> build/helm-build.log 2>&1; \
	    touch build/tools.done; \
	    $(PY) tests/kubernetes_build.py > build/image-build.log 2>&1 ) & \
	  $(MAKE) --no-print-directory lint layers typecheck \
	  && $(VENV)/bin/pytest -q -p no:cacheprovider -x -n $(UNIT_WORKERS) tests/unit; status=$$?; \
	  while [ ! -e build/tools.done ]; do sleep 1; done; cat build/helm-build.log; \
	  test $$status -eq 0 && WEIR_HELM=$(HELM) WEIR_MINIO=$(MINIO) $(VENV)/bin/pytest -q -p no:cacheprovider \
	    -n $(TEST_WORKERS) --dist loadfile --durations=15 --ignore=tests/unit; status=$$?; \
	  wait; cat build/image-build.log; exit $$status

# The soak and multi-host tests (none is in the unit tier, whose module names may repeat
# those of the other tiers: they are never collected together).
test-long: setup maven minio kubernetes
	WEIR_MINIO=$(MINIO) $(VENV)/bin/pytest -q -p no:cacheprovider -m long --durations=15 --ignore=tests/unit
	$(MAKE) --no-print-directory test-e2e-tls

# The whole end-to-end suite again, soak tests included, with mutual TLS and a token on
# every cluster it starts (tests/e2e/cluster_harness.py). `make test` runs one TLS
# cluster; the multi-host test is TLS throughout whatever the switch, and -m long runs it.
test-e2e-tls: setup
	WEIR_E2E_TLS=1 $(VENV)/bin/pytest -q -p no:cacheprovider --durations=10 -m "" \
	  --ignore=tests/e2e/test_multi_host.py tests/e2e

bench: setup
	$(PY) benchmarks/run_all.py
	$(PY) benchmarks/windows.py
	$(PY) benchmarks/checkpointing.py

clean:
	rm -rf $(VENV) build .pytest_cache .mypy_cache .ruff_cache .hypothesis
