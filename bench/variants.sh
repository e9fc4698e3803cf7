#!/usr/bin/env bash
# variants.sh [N] — the "Variants" workload of docs/benchmarks.md: an
# experiment of 3 variants × N items (default 1,000) against the mock
# OpenAI-compatible server (bench/mockserver) answering after 50 ms, at
# concurrency 20 per variant, next to a single run of the same N items
# (same mock, same concurrency): the variants overlap, so the experiment
# should take about as long as the single run. SQLite, a fresh database
# per run. Prints, per run, wall time, peak RSS, CPU, the mock's requests
# and peak in-flight, and the load average; then the medians.
#   REPS=3 (default) runs each REPS times, alternating single and experiment
#   LATENCY=50 the mock's latency in ms; CONC=20 the concurrency per variant
#   RUN_FLAGS="--distributed --db postgres://…" extra flags for both runs
#   KEEP=DIR keeps the databases, suites and outputs there
#   PROFILE=DIR writes evalrun's CPU and heap profiles there (bench/cmd/evalrunprof)
set -euo pipefail
cd "$(dirname "$0")/.."
n=${1:-1000}
case $n in
'' | *[!0-9]* | 0) echo "variants.sh: N must be a positive number of items, not \"$n\"" >&2; exit 2 ;;
esac
reps=${REPS:-3}
latency=${LATENCY:-50}
conc=${CONC:-20}
tmp=${KEEP:-$(mktemp -d)}
mkdir -p "$tmp"
pid=
cleanup() {
	if [ -n "$pid" ]; then kill "$pid" 2>/dev/null || true; wait "$pid" 2>/dev/null || true; fi
	if [ -z "${KEEP:-}" ]; then rm -rf "$tmp"; fi
}
trap cleanup EXIT
if [ -n "${PROFILE:-}" ]; then
	# evalrun with CPU and heap profiles (EVALRUN_CPUPROFILE, EVALRUN_HEAPPROFILE)
	CGO_ENABLED=0 go build -o "$tmp/evalrun" ./bench/cmd/evalrunprof
else
	CGO_ENABLED=0 go build -o "$tmp/evalrun" ./cmd/evalrun
fi
go build -o "$tmp/mockserver" ./bench/mockserver

# Every item's expected output is its input: the mock echoes the prompt.
awk -v n="$n" -v f="$tmp/data.jsonl" 'BEGIN {
	for (i = 0; i < n; i++) printf "{\"id\":\"i%06d\",\"input\":\"question %d\",\"expected_output\":\"question %d\"}\n", i, i, i > f
}'

"$tmp/mockserver" -port 0 -port-file "$tmp/port" -latency "$latency" 2>"$tmp/mock.log" &
pid=$!
i=0
while [ ! -s "$tmp/port" ]; do
	i=$((i + 1))
	if [ "$i" -gt 100 ]; then echo "variants.sh: the mock did not listen within 10 s" >&2; exit 1; fi
	sleep 0.1
done
base=http://127.0.0.1:$(cat "$tmp/port")

target="target:
  kind: openai
  base_url: $base/v1
  api_key_env: BENCH_MOCK_API_KEY
  model: mock-a
  prompt: \"{{ .Input }}\""
common="scorers:
  - exact_match
execution:
  concurrency: $conc"
printf 'name: bench-single\ndataset: {name: bench-variants, file: data.jsonl}\n%s\n%s\n' "$target" "$common" >"$tmp/single.yaml"
printf 'name: bench-variants\ndataset: {name: bench-variants, file: data.jsonl}\n%s\nvariants:\n  - name: a\n  - name: b\n    target: {model: mock-b}\n  - name: c\n    target: {model: mock-c}\n%s\n' "$target" "$common" >"$tmp/variants.yaml"

export BENCH_MOCK_API_KEY=sk-mock
run() { # run KIND REP: one measured run; appends "wall rss cpu" to $tmp/KIND.txt
	local kind=$1 rep=$2 db=$tmp/$1-$2.db
	rm -f "$db"*
	curl -fsS -X POST "$base/stats/reset" >/dev/null
	local load
	load=$(cut -d' ' -f1 /proc/loadavg)
	local prof=()
	if [ -n "${PROFILE:-}" ]; then
		mkdir -p "$PROFILE"
		prof=(EVALRUN_CPUPROFILE="$PROFILE/$kind-$rep.cpu.pprof" EVALRUN_HEAPPROFILE="$PROFILE/$kind-$rep.heap.pprof")
	fi
	# shellcheck disable=SC2086
	if ! (cd "$tmp" && /usr/bin/time -f "%e %M %U %S" -o "$tmp/time" env "${prof[@]}" EVALRUN_DB="sqlite:$db" \
		"$tmp/evalrun" run "$kind.yaml" -q -o "$kind-$rep.json" ${RUN_FLAGS:-} >"$tmp/$kind-$rep.out" 2>&1); then
		cat "$tmp/$kind-$rep.out" >&2
		echo "variants.sh: $kind run $rep failed" >&2
		exit 1
	fi
	local wall rss user sys stats
	read -r wall rss user sys <"$tmp/time"
	stats=$(curl -fsS "$base/stats")
	printf '%s run %s: wall %ss, peak RSS %.1f MB, CPU %.2fs, mock requests %s, peak in-flight %s, load1 %s\n' \
		"$kind" "$rep" "$wall" "$(awk -v r="$rss" 'BEGIN{print r / 1024}')" "$(awk -v u="$user" -v s="$sys" 'BEGIN{print u + s}')" \
		"$(jq .requests <<<"$stats")" "$(jq .peak_in_flight <<<"$stats")" "$load"
	echo "$wall $rss" >>"$tmp/$kind.txt"
}
rm -f "$tmp/single.txt" "$tmp/variants.txt"
for rep in $(seq "$reps"); do
	run single "$rep"
	run variants "$rep"
done

median() { sort -n | awk '{v[NR] = $1} END {print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2}'; }
sw=$(cut -d' ' -f1 "$tmp/single.txt" | median)
vw=$(cut -d' ' -f1 "$tmp/variants.txt" | median)
sr=$(cut -d' ' -f2 "$tmp/single.txt" | median)
vr=$(cut -d' ' -f2 "$tmp/variants.txt" | median)
awk -v n="$n" -v sw="$sw" -v vw="$vw" -v sr="$sr" -v vr="$vr" -v reps="$reps" 'BEGIN {
	printf "median of %d: single %d items %.3fs, %.1f MB; experiment 3 x %d items %.3fs, %.1f MB; wall ratio %.3f (goal <= 1.05), peak RSS %s (goal <= 80 MB)\n",
		reps, n, sw, sr / 1024, n, vw, vr / 1024, vw / sw, (vr / 1024 <= 80 ? "holds" : "missed")
}'
