# The two README commands: `make demo` and `make test`. Each does its own set-up,
# idempotently: a venv with the pinned stack, Java and Maven if missing, Delta's JARs
# fetched once into .cache/jars. A second run skips what is already there.

PYTHON ?= python3.11
VENV   := .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed-stamp
# uv installs the stack: downloads and bytecode in parallel, where pip does one at a time. Bytecode
# at install, as pip does: with PYTHONDONTWRITEBYTECODE set (these machines set it) Python would compile
# every module it imports again in every process. uv trusts the system's certificates, as pip is told
# to here (PIP_CERT); should it fail, pip installs the same.
UV_VERSION := 0.13.9
UV     := $(BIN)/uv
UV_PIP := UV_SYSTEM_CERTS=1 $(UV) pip install -q --compile-bytecode
# $(call pip_install,<a venv's python>,<what>): uv, else that venv's own pip
pip_install = $(UV_PIP) --python $(1) $(2) || $(dir $(1))pip install -q --disable-pip-version-check $(2)
REFERENCE ?= ../shared/reference
PYTEST_ARGS ?=
# The suite runs on two pytest-xdist workers, one per core: most of a test's time is one busy thread
# (the Spark driver, dbt's parser, a child process starting), so two at once use both cores.
# A group (a module's tests, or the shared gold lake's modules) runs whole on one worker (tests/conftest.py).
# PYTEST_WORKERS=0 runs in one process.
PYTEST_WORKERS ?= 2
# The analysts' pseudonym key (analyst.pseudonym_key_env): yours from the environment, else one made
# once for this checkout (data/pseudonym.key: git-ignored, owner-only), so `make demo` and `make test`
# run on a fresh clone. Use it for later commands: export AUDITLAKE_PSEUDONYM_KEY=$$(cat data/pseudonym.key)
DEMO_KEY := data/pseudonym.key
export AUDITLAKE_PSEUDONYM_KEY ?= $(shell mkdir -p data && { test -s $(DEMO_KEY) || (umask 077; od -An -tx1 -N32 /dev/urandom | tr -d ' \n' > $(DEMO_KEY)); } && cat $(DEMO_KEY))
# The digests' signing key (integrity.signing_key_env), the same way: yours, else one made once for this
# checkout (data/signing-key.pem, an Ed25519 key as openssl writes it; its public half beside it for
# `auditlake verify --public-key data/signing-key.pub.pem`). The variable holds the PEM text.
SIGNING_KEY := data/signing-key.pem
export AUDITLAKE_SIGNING_KEY ?= $(shell mkdir -p data && { test -s $(SIGNING_KEY) || (umask 077; openssl genpkey -algorithm ed25519 -out $(SIGNING_KEY) && openssl pkey -in $(SIGNING_KEY) -pubout -out data/signing-key.pub.pem && chmod 644 data/signing-key.pub.pem); } && cat $(SIGNING_KEY))

.PHONY: demo test test-e2e s3-jars test-fast setup jars system-deps pg-deps ldap-deps clients registry lint format lint-sql bench clean distclean

demo: setup
	@$(BIN)/auditlake --env demo demo

# The class archive's recording and the SQL lint each start a JVM and keep about one core busy for a
# minute or more: on a fresh clone they run at once (their output each in one piece), and the S3 test's
# JARs download beside them (a download, not CPU); the suite after all three.
# Every test, the end-to-end chains of processes included (marker e2e: the kill-and-rerun chains of a
# refresh and an erasure, the refresh with the lake in S3, the refresh on a standalone cluster, a refresh
# beside the Thrift server on a PostgreSQL metastore): each promise of the product is kept in CI.
test: jars pg-deps ldap-deps clients lint
	@$(MAKE) --no-print-directory -j3 --output-sync=target setup lint-sql s3-jars
	@PYTHONUNBUFFERED=1 $(BIN)/python -m pytest -n $(PYTEST_WORKERS) $(PYTEST_ARGS)

# The end-to-end chains alone, for a change to the refresh, erase, S3, cluster or metastore code.
test-e2e: setup pg-deps ldap-deps clients s3-jars
	@PYTHONUNBUFFERED=1 $(BIN)/python -m pytest -n $(PYTEST_WORKERS) -m e2e $(PYTEST_ARGS)

# The S3A client's JARs (hadoop-aws, the AWS SDK bundle) the S3 test refreshes with, fetched once into
# .cache/jars; fetching needs no credentials (AWS's provider chain: none is read).
s3-jars: jars
	@AUDITLAKE__S3__CREDENTIALS=provider_chain $(BIN)/auditlake --env s3 setup --jars-only

# The slice that needs no Spark, dbt, PostgreSQL or child process: seconds, not minutes.
test-fast: $(STAMP)
	@$(BIN)/python -m pytest -m "not spark and not dbt and not postgres and not subprocess" $(PYTEST_ARGS)

setup: system-deps $(STAMP)
	@$(BIN)/auditlake setup

# Delta's JARs alone: what a Spark session needs (the class archive only makes it start faster)
jars: system-deps $(STAMP)
	@$(BIN)/auditlake setup --jars-only

# Java 17+ runs Spark; its compiler builds the analysts' server's read-only check once
# (pipelines/analyst/guard.py); Maven fetches the Delta JARs once. Installed only when missing.
system-deps:
	@command -v java >/dev/null 2>&1 && command -v javac >/dev/null 2>&1 && command -v mvn >/dev/null 2>&1 || { \
	  echo "installing Java 17 and Maven (apt-get)"; \
	  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq openjdk-17-jdk-headless maven >/dev/null; }

# PostgreSQL server binaries: the Write-Back tests start a throwaway server (initdb + pg_ctl on
# loopback). Debian keeps them off PATH, in /usr/lib/postgresql/<major>/bin. Tests only, not demo.
pg-deps:
	@ls /usr/lib/postgresql/*/bin/initdb >/dev/null 2>&1 || command -v initdb >/dev/null 2>&1 || { \
	  echo "installing the PostgreSQL server (apt-get)"; \
	  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq postgresql >/dev/null; }

# OpenLDAP's server and tools: the sign-in tests of `auditlake serve` start a throwaway slapd on
# loopback (auditlake_devtools/ldap_server.py). Tests only, not demo. Debian keeps slapd in /usr/sbin.
ldap-deps:
	@{ command -v slapd || test -x /usr/sbin/slapd; } >/dev/null 2>&1 && command -v ldapsearch >/dev/null 2>&1 || { \
	  echo "installing the OpenLDAP server and tools (apt-get)"; \
	  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq slapd ldap-utils >/dev/null; }

# Network clients the tests drive, in a venv of their own (impyla's thrift is newer than the one
# dbt-spark's PyHive extra pins): impyla makes the metadata calls an ODBC driver makes.
CLIENTS := .cache/clients
clients: $(CLIENTS)/.installed-stamp
$(CLIENTS)/.installed-stamp: | $(UV)
	@test -x $(CLIENTS)/bin/python || $(PYTHON) -m venv $(CLIENTS)
	@echo "installing the test clients into $(CLIENTS) (first run only)"
	@$(call pip_install,$(CLIENTS)/bin/python,"impyla==0.24.0")
	@touch $@

$(UV):
	@command -v $(PYTHON) >/dev/null 2>&1 || { echo "need $(PYTHON) (Python 3.11)"; exit 1; }
	@test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	@$(BIN)/pip install -q --disable-pip-version-check "uv==$(UV_VERSION)" || echo "no uv: pip installs instead"

$(STAMP): pyproject.toml | $(UV)
	@echo "installing the pinned stack into $(VENV) (first run only)"
	@$(call pip_install,$(BIN)/python,-e ".[dev]")
	@touch $(STAMP)

# Rebuild the committed event registry from the Tableau references.
registry: $(STAMP)
	@$(BIN)/python -m pipelines.activity_log.registry.build --reference $(REFERENCE)

# ruff's linter, and its formatter as a check (`make format` rewrites the files); seconds.
lint: $(STAMP)
	@$(BIN)/ruff check pipelines auditlake_devtools tests
	@$(BIN)/ruff format --check pipelines auditlake_devtools tests || { echo "run: make format"; exit 1; }

format: $(STAMP)
	@$(BIN)/ruff format pipelines auditlake_devtools tests

# sqlfluff with the dbt templater compiles the project (target `local`: its own Spark session
# on the embedded metastore under data/, so not while a refresh runs).
lint-sql: jars
	@echo "sqlfluff lint dbt_project/ (dialect sparksql, templater dbt)"
	@cd dbt_project && ../$(BIN)/sqlfluff lint --disable-progress-bar models

# Benchmarks (not tests): figures go to docs/performance.md. `make bench BENCH="--layer all --batches 10"`
BENCH ?= --layer ingest --events 1000000
bench: setup
	@$(call pip_install,$(BIN)/python,-e ".[bench]")
	@$(BIN)/auditlake bench $(BENCH)

clean:
	rm -rf data spark-warehouse metastore_db derby.log .pytest_cache

distclean: clean
	rm -rf $(VENV) .cache
