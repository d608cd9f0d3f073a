#!/usr/bin/env bash
# Time the README's main job from a clean clone: install, fetch the pinned data, `dvc repro` with the
# default params; then a no-op `dvc repro` and a one-model parameter change (only that model re-runs).
#
#   bash benchmarks/pipeline_time.sh [DATA_SOURCE]
#
# DATA_SOURCE: a copy of the raw data (default: ../shared/data beside this repository).
# WORK_DIR:    where the clone goes (default: a new temporary directory; removed unless KEEP=1).
# SKIP_INSTALL=1 reuses this repository's .venv instead of installing into the clone (measures the rest).
# Targets: main job < 900 s on a 2-core CPU machine, no-op re-run < 10 s. Results: $WORK_DIR/pipeline_time.json
set -euo pipefail
REPO=$(cd "$(dirname "$0")/.." && pwd)
DATA_SOURCE=$(cd "${1:-$REPO/../shared/data}" && pwd)
WORK_DIR=${WORK_DIR:-$(mktemp -d)}
export DVC_NO_ANALYTICS=1 MLFLOW_DISABLE_TELEMETRY=true HF_HUB_OFFLINE=1 TOKENIZERS_PARALLELISM=false
now() { date +%s.%N; }
secs() { python3 -c "print(round($2 - $1, 1))"; }

git clone -q "$REPO" "$WORK_DIR/probmed"
cd "$WORK_DIR/probmed"
echo "clean clone of $(git rev-parse --short HEAD) in $WORK_DIR/probmed"

t0=$(now)
if [ "${SKIP_INSTALL:-0}" = 1 ]; then
  ln -s "$REPO/.venv" .venv
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

# One model's parameter: only that model's predict/score stages (plus plan/track/report) re-run.
cp params.yaml params.yaml.orig
sed -i 's/^  always-yes: {backend: always-yes}$/  always-yes: {backend: always-yes, description: benchmark}/' params.yaml
changed=$(dvc status --json | python3 -c "import json,sys; print(' '.join(sorted(json.load(sys.stdin))))")
mv params.yaml.orig params.yaml

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
