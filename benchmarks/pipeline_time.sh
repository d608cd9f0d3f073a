#!/usr/bin/env bash
# Time the README's main job from a clean clone: install, fetch the pinned data, `dvc repro` with the
# default params; then a no-op `dvc repro` and a one-model parameter change (only that model re-runs).
#
#   bash benchmarks/pipeline_time.sh [--quick] [DATA_SOURCE]
#
# --quick: the same clean clone, this repository's .venv and the data linked instead of fetched, then only the
#          first stage (`dvc repro plan`) is timed; figures printed, targets not judged.
# DATA_SOURCE: a copy of the raw data (default: ../shared/data beside this repository).
# WORK_DIR:    where the clone goes (default: a new temporary directory; removed unless KEEP=1).
# SKIP_INSTALL=1 reuses this repository's .venv instead of installing into the clone (measures the rest).
# VENV:        the virtual environment SKIP_INSTALL=1 and --quick reuse (default: this repository's .venv).
# Targets: main job < 900 s on a 2-core CPU machine, no-op re-run < 10 s. Results: $WORK_DIR/pipeline_time.json
set -euo pipefail
QUICK=0
if [ "${1:-}" = --quick ]; then QUICK=1; shift; fi
REPO=$(cd "$(dirname "$0")/.." && pwd)
DATA_SOURCE=$(cd "${1:-$REPO/../shared/data}" && pwd)
WORK_DIR=${WORK_DIR:-$(mktemp -d)}
VENV=${VENV:-$REPO/.venv}
export DVC_NO_ANALYTICS=1 MLFLOW_DISABLE_TELEMETRY=true HF_HUB_OFFLINE=1 TOKENIZERS_PARALLELISM=false
now() { date +%s.%N; }
secs() { python3 -c "print(round($2 - $1, 1))"; }

git clone -q "$REPO" "$WORK_DIR/probmed"
cd "$WORK_DIR/probmed"
echo "clean clone of $(git rev-parse --short HEAD) in $WORK_DIR/probmed"

if [ "$QUICK" = 1 ]; then
  ln -s "$VENV" .venv
  ln -s "$DATA_SOURCE" data  # what `probmed plan` checks is there; nothing is read from it
  # shellcheck disable=SC1091
  . .venv/bin/activate
  t0=$(now); dvc repro -q plan; t1=$(now)
  echo "{\"commit\": \"$(git rev-parse HEAD)\", \"cpus\": $(nproc), \"quick\": 1, \"plan_stage_s\": $(secs "$t0" "$t1")}" \
    | tee "$WORK_DIR/pipeline_time.json"
  echo "quick run: the targets (main job < 900 s, no-op < 10 s) are judged in full mode"
  [ "${KEEP:-0}" = 1 ] || { cd /; rm -rf "$WORK_DIR/probmed"; }
  exit 0
fi

t0=$(now)
if [ "${SKIP_INSTALL:-0}" = 1 ]; then
  ln -s "$VENV" .venv
else
  bash .ci/install
fi
t1=$(now)
# shellcheck disable=SC1091
. .venv/bin/activate
probmed fetch-data --source "$DATA_SOURCE"
t2=$(now)
dvc repro
t3=$(now)
dvc repro
t4=$(now)

# One model's parameter: only that model's predict stages (which score; plus plan/track/report) re-run.
cp models.yaml models.yaml.orig  # the model registry
sed -i 's/^  always-yes: {backend: always-yes}$/  always-yes: {backend: always-yes, description: benchmark}/' models.yaml
changed=$(dvc status --json | python3 -c "import json,sys; print(' '.join(sorted(json.load(sys.stdin))))")
mv models.yaml.orig models.yaml

install=$(secs "$t0" "$t1"); fetch=$(secs "$t1" "$t2"); repro=$(secs "$t2" "$t3"); noop=$(secs "$t3" "$t4")
main_job=$(secs "$t0" "$t3")
cat > "$WORK_DIR/pipeline_time.json" <<JSON
{"commit": "$(git rev-parse HEAD)", "cpus": $(nproc), "skip_install": ${SKIP_INSTALL:-0},
 "install_s": $install, "fetch_s": $fetch, "repro_s": $repro, "main_job_s": $main_job, "noop_repro_s": $noop,
 "stages_after_one_model_change": "$changed"}
JSON
cat "$WORK_DIR/pipeline_time.json"
ok=$(python3 -c "print(int($main_job < 900 and $noop < 10))")
[ "${KEEP:-0}" = 1 ] || { cd /; rm -rf "$WORK_DIR/probmed"; }
[ "$ok" = 1 ] || { echo "target missed: main job < 900 s, no-op < 10 s" >&2; exit 1; }
