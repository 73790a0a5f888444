# fabricfit operator image: `fabricfit run` as a non-root user on a slim Python base.
# Build and push (see README, "Install"):
#   docker build -t REGISTRY/fabricfit:0.1.0 .
#   docker push REGISTRY/fabricfit:0.1.0

# Stage 1: install the package and its runtime dependencies (exact versions from
# hack/constraints.txt) into a virtual environment.
FROM python:3.11.14-slim-bookworm AS build
ENV PIP_DISABLE_PIP_VERSION_CHECK=1 \
    PIP_NO_CACHE_DIR=1
WORKDIR /src
RUN python -m venv /opt/fabricfit
COPY pyproject.toml README.md ./
COPY hack/constraints.txt hack/constraints.txt
COPY operator operator
RUN /opt/fabricfit/bin/pip install --no-compile -c hack/constraints.txt . \
    && /opt/fabricfit/bin/python -m compileall -q /opt/fabricfit/lib

# Stage 2: the runtime, with the virtual environment only (no build tools, no sources).
FROM python:3.11.14-slim-bookworm
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
