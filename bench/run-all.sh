#!/usr/bin/env bash
# Builds the release binary and runs every recorded benchmark (see BENCHMARKS.md).
set -euo pipefail
cd "$(dirname "$0")/.."
cargo build --release
bench/harness.sh 7
bench/scaling.sh 9 3 2 workloads/mixed.lua
bench/specs.sh 7
bench/openloop.sh 7
cargo bench --bench sampler -- 1000 0.3
bench/sampler.sh 41 2
if command -v valgrind >/dev/null; then bench/sampler-instructions.sh 500000; fi
