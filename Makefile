# Weir: `make run` runs the main example on the embedded mini cluster; `make test` runs the suite.
SHELL := /bin/bash
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed
PROTOS := $(wildcard proto/*.proto)

.PHONY: setup run test test-long lint typecheck proto proto-check bench clean java

setup: $(STAMP) java

$(STAMP): pyproject.toml
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -e '.[dev,ha]'
	touch $(STAMP)

# Spark needs a JVM, and the cluster scripts pgrep/setsid: install them on a fresh Debian
# machine if they are missing.
java:
	@command -v java >/dev/null 2>&1 && command -v pgrep >/dev/null 2>&1 || { \
	  echo "installing a Java runtime and procps"; \
	  (apt-get update -qq && DEBIAN_FRONTEND=noninteractive \
	    apt-get install -y -qq openjdk-17-jre-headless procps) >/dev/null; }

run: setup
	$(PY) examples/word_count.py

proto: $(STAMP)
	$(PY) -m grpc_tools.protoc -I. --python_out=. --pyi_out=. --grpc_python_out=. $(PROTOS)

lint: setup
	$(VENV)/bin/ruff check .
	$(VENV)/bin/ruff format --check .

typecheck: setup
	$(VENV)/bin/mypy weir dispatcher resourcemanager jobmanager taskmanager

test: setup
	$(VENV)/bin/ruff check .
	$(VENV)/bin/mypy weir dispatcher resourcemanager jobmanager taskmanager
	$(VENV)/bin/pytest -q -p no:cacheprovider

test-long: setup
	$(VENV)/bin/pytest -q -p no:cacheprovider -m long

bench: setup
	$(PY) benchmarks/run_all.py
	$(PY) benchmarks/windows.py
	$(PY) benchmarks/checkpointing.py

clean:
	rm -rf $(VENV) .pytest_cache .mypy_cache .ruff_cache
