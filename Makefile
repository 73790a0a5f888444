# fabricfit developer entry points. The README's two set-up commands are `make demo` and `make test`.
SHELL := /bin/bash
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
# The slowest tests are printed after every suite run, so CI output shows where the time goes.
DURATIONS := --durations=30

.PHONY: venv lint unit e2e test test-slow demo demo-down cluster-build cluster-up cluster-down bench bench-scale bench-kueue crd deploy docs docs-ref docs-serve tools image image-if-root clean

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

# The operator image, built from the Dockerfile without a Docker daemon (buildah; Debian's
# packages, pinned in hack/image.sh), as the OCI archive dist/fabricfit-<version>.oci.tar.
# Reused while its inputs are unchanged; tests/e2e/test_image.py runs it. Needs root (make test
# and make e2e build it only as root; the image's test skips otherwise).
image:
	hack/image.sh

image-if-root:
	hack/image.sh --skip-unless-root

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
e2e: venv cluster-build tools image-if-root
	$(BIN)/pytest -m "e2e and not slow" -q $(DURATIONS)

# Everything but the long runs: lint, the docs site (strict: links and anchors), unit and e2e
# tests. The README's test command; CI runs it.
test: venv cluster-build tools image-if-root
	$(BIN)/ruff check operator tests benchmarks hack
	$(BIN)/ruff format --check operator tests benchmarks hack
	$(BIN)/mypy
	$(MKDOCS) build --strict --quiet
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

# The files generated from the models and the registries (label schemes, workload kinds): the
# CRD, and the chart's copy of it, its workload-kind RBAC rules and its label-scheme enum.
crd: venv
	$(BIN)/fabricfit crd --output crds/trainingtopologies.fabricfit.dev.yaml
	$(BIN)/fabricfit crd --chart charts/fabricfit

# The documentation site (mkdocs.yml): strict, so a broken link or anchor fails; nothing is fetched.
MKDOCS := NO_MKDOCS_2_WARNING=1 $(BIN)/mkdocs
docs: venv
	$(MKDOCS) build --strict

docs-serve: venv
	$(MKDOCS) serve --strict --dev-addr 127.0.0.1:8000

# Regenerate docs/reference/ from the code (a unit test fails while a page is stale).
docs-ref: venv cluster-build
	$(BIN)/python -m fabricfit_dev.docsgen

# Plain manifests for users without helm, rendered from the chart (a test checks they match).
deploy: cluster-build
	hack/render-deploy.sh

clean:
	rm -rf $(VENV) .mypy_cache .ruff_cache .pytest_cache .hypothesis site
