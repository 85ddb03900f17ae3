# syntax=docker/dockerfile:1
# Hermes Gateway image. Build: docker build -t hermes-gateway .
# Run:   docker run -d --name hermes --env-file hermes.env -v hermes-data:/data hermes-gateway
# Secrets come at run time (env file or /data/.env); none is baked into any layer.

FROM python:3.11-slim AS builder
ENV PIP_NO_CACHE_DIR=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1 \
    PYTHONDONTWRITEBYTECODE=1
RUN python -m venv /opt/hermes
WORKDIR /src
COPY pyproject.toml constraints.txt README.md ./
COPY gateway ./gateway
COPY adapters ./adapters
COPY agent_core ./agent_core
COPY storage ./storage
COPY deploy/systemd/hermes-gateway.service.tmpl deploy/launchd/ai.hermes.gateway.plist.tmpl ./gateway/service/templates/
RUN /opt/hermes/bin/pip install -c constraints.txt '.[all]'

FROM python:3.11-slim
ENV PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1 \
    PATH=/opt/hermes/bin:$PATH \
    HOME=/data \
    HERMES_HOME=/data \
    HERMES_LOCK_DIR=/data/locks
RUN groupadd --system --gid 10001 hermes \
    && useradd --system --uid 10001 --gid 10001 --home-dir /data --no-create-home \
       --shell /usr/sbin/nologin hermes \
    && mkdir -p /data \
    && chown 10001:10001 /data \
    && chmod 0700 /data
COPY --from=builder /opt/hermes /opt/hermes
COPY --chmod=0755 deploy/docker/entrypoint.sh /usr/local/bin/hermes-entrypoint
USER 10001:10001
WORKDIR /data
VOLUME ["/data"]
# Health server (gateway.health.port); the API adapter's port is whatever config.yaml says.
EXPOSE 8765
HEALTHCHECK --interval=30s --timeout=5s --start-period=60s --retries=3 \
    CMD ["python", "-c", "import sys, urllib.request; sys.exit(0 if urllib.request.urlopen('http://127.0.0.1:8765/healthz', timeout=4).status == 200 else 1)"]
STOPSIGNAL SIGTERM
ENTRYPOINT ["/usr/local/bin/hermes-entrypoint"]
CMD ["gateway", "run"]
