# fabricfit operator image: `fabricfit run` as the non-root user 10001 on a slim Python 3.11 base,
# for a read-only root filesystem (no byte-code writes; /tmp is the chart's emptyDir).
# Build it with `make image` (hack/image.sh: no Docker daemon, writes an OCI archive under dist/)
# or with Docker; docs/operations/image.md says how to load, push and install it:
#   docker build -t REGISTRY/fabricfit:0.1.0 .
# PYTHON_IMAGE is any Debian-based Python 3.11 image with python3 -m venv, groupadd and useradd;
# where the default cannot be pulled, hack/image.sh bootstraps one from Debian's packages.
ARG PYTHON_IMAGE=python:3.11.14-slim-bookworm

# Stage 1: the package and its runtime dependencies (exact versions from hack/constraints.txt,
# which also pins the build backend) in a virtual environment.
FROM ${PYTHON_IMAGE} AS build
# The builder's pip settings (a private index, a proxy's CA) arrive as the build secrets
# pip.conf and pip-ca.pem (hack/image.sh passes them when pip is configured); without them
# pip uses PyPI. Secrets stay out of every layer.
ENV PIP_DISABLE_PIP_VERSION_CHECK=1 \
    PIP_NO_CACHE_DIR=1 \
    PIP_CONSTRAINT=/src/hack/constraints.txt \
    PIP_CONFIG_FILE=/run/secrets/pip.conf
WORKDIR /src
RUN python3 -m venv /opt/fabricfit
COPY pyproject.toml ./
COPY hack/constraints.txt hack/constraints.txt
# The dependencies first, read from pyproject.toml: a builder that caches layers (docker build)
# reuses theirs until pyproject.toml or the constraints change.
RUN --mount=type=secret,id=pip.conf --mount=type=secret,id=pip-ca.pem \
    python3 -c 'import tomllib; print(*tomllib.load(open("pyproject.toml", "rb"))["project"]["dependencies"], sep="\n")' > /tmp/requirements.txt \
    && /opt/fabricfit/bin/pip install --no-compile -r /tmp/requirements.txt
COPY README.md setup.py ./
COPY operator operator
# The commit the image is built from, for `fabricfit version` (setup.py writes it into the
# package; hack/image.sh passes it, a build without it records none).
ARG FABRICFIT_COMMIT=""
# Byte code compiled here and never checked against the sources (unchecked-hash): a read-only
# root cannot rewrite stale .pyc, and no copy can make them stale. pip and setuptools are
# removed: nothing is installed at run time.
RUN --mount=type=secret,id=pip.conf --mount=type=secret,id=pip-ca.pem \
    FABRICFIT_COMMIT="${FABRICFIT_COMMIT}" /opt/fabricfit/bin/pip install --no-compile --no-deps . \
    && /opt/fabricfit/bin/pip uninstall --quiet --yes pip setuptools \
    && /opt/fabricfit/bin/python -m compileall -q --invalidation-mode unchecked-hash /opt/fabricfit/lib

# Stage 2: the runtime, with the virtual environment only (no build tools, no sources).
FROM ${PYTHON_IMAGE}
ARG PYTHON_IMAGE
ARG VERSION=0.1.0
ARG FABRICFIT_COMMIT=""
LABEL org.opencontainers.image.title="fabricfit" \
      org.opencontainers.image.revision="${FABRICFIT_COMMIT}" \
      org.opencontainers.image.description="Topology-aware placement of distributed GPU training on Kubernetes (the operator: fabricfit run)" \
      org.opencontainers.image.version="${VERSION}" \
      org.opencontainers.image.licenses="Apache-2.0" \
      org.opencontainers.image.authors="fabricfit authors" \
      org.opencontainers.image.base.name="${PYTHON_IMAGE}"
RUN groupadd --system --gid 10001 fabricfit \
    && useradd --system --uid 10001 --gid 10001 --no-create-home \
       --home-dir /nonexistent --shell /usr/sbin/nologin fabricfit
COPY --from=build /opt/fabricfit /opt/fabricfit
ENV PATH=/opt/fabricfit/bin:$PATH \
    PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1
USER 10001:10001
# 8080: kopf liveness (/healthz); 9090: Prometheus metrics (/metrics).
EXPOSE 8080 9090
ENTRYPOINT ["fabricfit", "run"]
