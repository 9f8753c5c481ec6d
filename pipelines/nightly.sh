#!/usr/bin/env bash
# Nightly job: train (or resume) tonight's run of pipelines/nightly.toml, score new
# cases with one of its models, write the report. Run from the repository root, e.g.
# by cron or a systemd timer (docs/reference/nightly.md, "Nightly job").
#   INCOMING   file of cases to score (CSV with a header, .npy or data set .h5);
#              default runs/incoming.csv, skipped when absent
#   MODEL      model file name inside the run's models/ directory
#   SCHEDULER  address of a running dask scheduler (default: the pipeline's [cluster])
set -euo pipefail
cd "$(dirname "$0")/.."
day=$(date +%Y%m%d)
run="runs/nightly-${day}"
incoming=${INCOMING:-runs/incoming.csv}
model=${MODEL:-diamonds__BSVR__p000.h5}
opts=(--no-progress)
if [[ -n "${SCHEDULER:-}" ]]; then opts+=(--scheduler "$SCHEDULER"); fi

bsvm-scale run pipelines/nightly.toml "${opts[@]}" --no-report
if [[ -f "$incoming" ]]; then
    bsvm-scale predict "${run}/models/${model}" "$incoming" --out "${run}/scores.h5" "${opts[@]}"
fi
bsvm-scale report "$run"
