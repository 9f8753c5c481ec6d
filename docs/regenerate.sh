#!/usr/bin/env bash
# Regenerates docs/results.md, its figures (docs/figures/) and its summary tables
# (docs/results/*.csv) from the archive of the run exports and the peer-benchmark
# files below (benchmarks/peers.py --out). The archive is an artifact, not kept in
# git: `bsvm-scale export RUN... --archive FILE` writes it with FILE.sha256 beside
# it, and `bsvm-scale results --from FILE` checks that checksum before reading.
# The page's prose (scope statements, notes, titles) is repro/prose.md.
#
#   bash docs/regenerate.sh ARCHIVE             # the page from ARCHIVE (minutes)
#   bash docs/regenerate.sh --export NEW [OLD]  # first pack every runs/repro_* present
#                                               # (after `bsvm-scale run pipelines/<name>.toml`)
#                                               # into NEW, with the other runs of OLD
#
# ARCHIVE defaults to $BSVM_RUNS_ARCHIVE, else runs-export.tar.gz.
set -euo pipefail
cd "$(dirname "$0")/.."
bench=(docs/bench/bench_bsvr_infer.json docs/bench/bench_bsvr_map.json
       docs/bench/bench_btsvc.json docs/bench/bench_btsvc_large.json
       docs/bench/bench_gpr.json docs/bench/bench_svm.json)
if [[ "${1:-}" == "--export" ]]; then
  archive="${2:?usage: bash docs/regenerate.sh --export NEW.tar.gz [OLD.tar.gz]}"
  present=()
  for d in runs/repro_*/; do [[ -f "${d}run.h5" ]] && present+=("${d%/}"); done
  (( ${#present[@]} )) || { echo "no runs/repro_*/run.h5 to export" >&2; exit 2; }
  bsvm-scale export "${present[@]}" --archive "$archive" ${3:+--base "$3"}
else
  archive="${1:-${BSVM_RUNS_ARCHIVE:-runs-export.tar.gz}}"
fi
bsvm-scale results --from "$archive" --bench "${bench[@]}" --out docs
