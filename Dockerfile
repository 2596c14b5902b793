# matchlobby in a container: the wheel built from this checkout, installed in a virtual
# environment of a slim Python image, run as an unprivileged user, the database on /data.
#   docker build -t matchlobby .
#   docker run -d -p 8765:8765 -v matchlobby-data:/data matchlobby
# Details: docs/OPERATING.md, "Packages, containers and services".

FROM python:3.11-slim AS build
WORKDIR /src
COPY pyproject.toml README.md ./
COPY server server
COPY ratings_plugin ratings_plugin
COPY clients clients
RUN pip install --no-cache-dir "build>=1.0" && python -m build --wheel --outdir /dist

FROM python:3.11-slim
# The lobby's own user (no login, no home but the data folder) and the data folder it owns:
# a named volume mounted on /data starts with that owner.
RUN groupadd --system --gid 10001 matchlobby \
    && useradd --system --uid 10001 --gid matchlobby --home-dir /data --no-create-home \
       --shell /usr/sbin/nologin matchlobby \
    && mkdir -p /data /etc/matchlobby \
    && chown matchlobby:matchlobby /data
COPY --from=build /dist /tmp/dist
# [postgresql]: the same image serves a SQLite file or a PostgreSQL database.
RUN python -m venv /opt/matchlobby \
    && wheel="$(ls /tmp/dist/matchlobby-*.whl)" \
    && /opt/matchlobby/bin/pip install --no-cache-dir "${wheel}[postgresql]" \
    && rm -rf /tmp/dist
COPY deploy/container.toml /etc/matchlobby/matchlobby.toml
COPY deploy/healthcheck.py /usr/local/bin/matchlobby-healthcheck

ENV PATH=/opt/matchlobby/bin:$PATH \
    MATCHLOBBY_CONFIG=/etc/matchlobby/matchlobby.toml \
    PYTHONUNBUFFERED=1
USER 10001:10001
WORKDIR /data
VOLUME ["/data"]
EXPOSE 8765
# SIGTERM stops the lobby; give it `docker stop -t 40` (the compose files'
# stop_grace_period) before SIGKILL.
STOPSIGNAL SIGTERM
HEALTHCHECK --interval=15s --timeout=5s --start-period=60s --retries=3 \
    CMD ["matchlobby-healthcheck"]
ENTRYPOINT ["matchlobby"]
CMD ["serve", "--config", "/etc/matchlobby/matchlobby.toml", "--host", "0.0.0.0"]
