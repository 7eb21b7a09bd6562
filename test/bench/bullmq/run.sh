#!/usr/bin/env bash
# Runs the BullMQ benchmark: installs npm "bullmq" once into a cache dir
# (FLOWGATE_BULLMQ_DIR, default ~/.cache/flowgate-bullmq), then
#   run.sh <redis-url> <jobs> <concurrency> [mixed|prefilled]
# (prefilled: add every job first, then time the processing only).
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
dir="${FLOWGATE_BULLMQ_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/flowgate-bullmq}"
if [ ! -d "$dir/node_modules/bullmq" ]; then
  mkdir -p "$dir"
  (cd "$dir" && { [ -f package.json ] || echo '{"private":true,"type":"module"}' > package.json; } \
    && npm install --silent --no-audit --no-fund bullmq@5 >&2)
fi
cp "$here/bench.mjs" "$dir/bench.mjs"
cd "$dir" && exec node bench.mjs "$@"
