#!/usr/bin/env bash
# run.sh [W1 W2 W3 W4] — runs evalrun end to end on the standard workloads
# (see docs/benchmarks.md) and prints one line per workload.
# REPS=3 repeats each workload and reports medians. Extra flags for the Go
# program go in WORKLOAD_FLAGS (e.g. "-keep -cpuprofile /tmp/prof").
set -euo pipefail
cd "$(dirname "$0")/.."
tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT
go build -o "$tmp/workload" ./bench/cmd/workload
# shellcheck disable=SC2086
"$tmp/workload" -reps "${REPS:-1}" ${WORKLOAD_FLAGS:-} "$@"
