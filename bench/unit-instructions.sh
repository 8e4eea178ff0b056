#!/usr/bin/env bash
# Instructions per null unit under callgrind, closed loop and paced at a rate no engine
# reaches: bench/callgrind.sh's null and paced paths (kept for the commands
# BENCHMARKS.md records).
#
# usage: bench/unit-instructions.sh [RUNS] [LONG] [SHORT]
exec "$(dirname "$0")/callgrind.sh" "${1:-3}" "${2:-1200000}" "${3:-200000}" null paced
