# probmed: the pinned project in a container.
# GPU (default):  docker build -t probmed .
# CPU only:       docker build -t probmed:cpu --build-arg BASE_IMAGE=ubuntu:22.04 \
#                   --build-arg TORCH_INDEX_URL=https://download.pytorch.org/whl/cpu .
# Run the main job with the raw data mounted where data.dvc expects it (../shared/data):
#   docker run --gpus all -v "$PWD/data-source:/opt/shared/data:ro" probmed \
#     sh -c "probmed fetch-data && dvc repro"
ARG BASE_IMAGE=nvidia/cuda:12.8.1-cudnn-runtime-ubuntu22.04
FROM ${BASE_IMAGE}

# Where torch comes from: the CUDA wheels by default, the CPU wheels for the CPU build.
ARG TORCH_INDEX_URL=https://download.pytorch.org/whl/cu128

ENV DEBIAN_FRONTEND=noninteractive \
    PIP_NO_CACHE_DIR=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1 \
    PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1 \
    VIRTUAL_ENV=/opt/venv \
    PATH=/opt/venv/bin:$PATH \
    DVC_NO_ANALYTICS=1 \
    MLFLOW_DISABLE_TELEMETRY=true \
    HF_HUB_OFFLINE=1

# Ubuntu 22.04 ships Python 3.11 (the version pyproject.toml requires); git for DVC and the run tags.
# hadolint ignore=DL3008
RUN apt-get update \
    && apt-get install -y --no-install-recommends python3.11 python3.11-venv git ca-certificates \
    && rm -rf /var/lib/apt/lists/* \
    && python3.11 -m venv "$VIRTUAL_ENV" \
    && useradd --create-home --uid 1000 probmed \
    && mkdir -p /opt/probmed /opt/shared/data \
    && chown probmed:probmed /opt/probmed

WORKDIR /opt/probmed

# Dependencies first (cached layer): exact pins from constraints.txt, torch and mlflow named in the
# same command as the rest so pip never mixes builds.
COPY --chown=probmed:probmed pyproject.toml constraints.txt README.md ./
COPY --chown=probmed:probmed src ./src
RUN pip install --no-cache-dir --extra-index-url "$TORCH_INDEX_URL" -c constraints.txt \
        "torch==2.13.0" "mlflow==3.17.2" ".[dev]" \
    && probmed --help > /dev/null

# The pipeline definition and the rest of the project.
COPY --chown=probmed:probmed . .

USER 1000:1000
RUN git config --global --add safe.directory /opt/probmed
CMD ["probmed", "--help"]
