# fabricfit developer entry points. The README's two set-up commands are `make demo` and `make test`.
SHELL := /bin/bash
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
# The slowest tests are printed after every suite run, so CI output shows where the time goes.
DURATIONS := --durations=30

.PHONY: venv lint unit e2e test test-slow demo demo-down cluster-build cluster-up cluster-down bench bench-scale bench-kueue crd deploy tools clean

venv: $(STAMP)

$(STAMP): pyproject.toml hack/testlib/pyproject.toml hack/constraints.txt
	@test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	@$(BIN)/python -m pip install --quiet --disable-pip-version-check --upgrade "pip==25.3"
	@$(BIN)/python -m pip install --quiet --disable-pip-version-check -c hack/constraints.txt \
		-e '.[dev]' -e hack/testlib
	@touch $(STAMP)

# Tools the tests run for real: promtool (Debian package, pinned) and the Prometheus server
# (compiled: Debian's lacks Kubernetes service discovery).
tools:
	hack/tools.sh

lint: venv
	$(BIN)/ruff check operator tests benchmarks hack
	$(BIN)/ruff format --check operator tests benchmarks hack
	$(BIN)/mypy

# Pure Python: no Go toolchain, no helm, no promtool (those tests are marked `tools`).
unit: venv
	$(BIN)/pytest -m "not e2e and not slow and not tools" -q

cluster-build:
	hack/cluster build --with kueue,jobset,lws,trainer

# e2e tests start (and stop) their own control plane unless KUBECONFIG names a cluster.
e2e: venv cluster-build tools
	$(BIN)/pytest -m "e2e and not slow" -q $(DURATIONS)

# Everything but the long runs: lint, unit and e2e tests. The README's test command; CI runs it.
test: venv cluster-build tools
	$(BIN)/ruff check operator tests benchmarks hack
	$(BIN)/ruff format --check operator tests benchmarks hack
	$(BIN)/mypy
	$(BIN)/pytest -m "not slow" -q $(DURATIONS)

# The long runs (marked slow; make test runs a short variant of each, or keeps its path through
# another test): whole-process fuzzing of the CLI under a memory cap, the full spec fuzzing and
# 30-job burst on the real control plane, the kube-apiserver restart and the HA takeover after a
# SIGKILL.
test-slow: venv cluster-build
	$(BIN)/pytest -m slow -q $(DURATIONS)

demo: venv
	$(BIN)/python -m fabricfit_dev.demo

demo-down:
	hack/cluster down

cluster-up: venv
	hack/cluster up

cluster-down:
	hack/cluster down

# cost_accuracy.py exits 1 while a band misses its target (the table says which); the other
# benchmarks still run.
bench: venv
	$(BIN)/python benchmarks/cost_speed.py
	-$(BIN)/python benchmarks/cost_accuracy.py
	$(BIN)/python benchmarks/placement.py --quick
	$(BIN)/python benchmarks/simulate.py --quick
	$(BIN)/python benchmarks/peer_regimes.py

# The operator on 12,800 kwok nodes (102,400 GPUs) on its own tuned control plane: RSS, time to
# Planned/bound/Placed, a 200-job burst. Not part of `make test` (tens of minutes on two cores).
# Pass options with SCALE_ARGS, e.g. make bench-scale SCALE_ARGS="--nodes 3200".
bench-scale: venv cluster-build
	$(BIN)/python benchmarks/operator_scale.py $(SCALE_ARGS)

# Real Kueue TAS vs fabricfit on the same kwok clusters (four fabrics, six jobs; about 10 min on
# two cores). Options with KUEUE_ARGS, e.g. make bench-kueue KUEUE_ARGS="--fabrics dgx-h100".
bench-kueue: venv cluster-build
	$(BIN)/python benchmarks/kueue_side_by_side.py $(KUEUE_ARGS)

crd: venv
	$(BIN)/fabricfit crd --output crds/trainingtopologies.fabricfit.dev.yaml
	cp crds/trainingtopologies.fabricfit.dev.yaml charts/fabricfit/files/crds/

# Plain manifests for users without helm, rendered from the chart (a test checks they match).
deploy: cluster-build
	hack/render-deploy.sh

clean:
	rm -rf $(VENV) .mypy_cache .ruff_cache .pytest_cache .hypothesis
