#!/usr/bin/env bash
# agent.sh [N] — the "Agents at scale" workload of docs/benchmarks.md: N
# agent items (default 10,000) through the CLI against the example's fake
# tool-calling model (examples/agent/fakemodel), 3 model turns and 2 or 3
# parallel get_weather calls then convert_currency per item, every call
# answered by the item's tool_mocks, SQLite; then the same questions as
# plain chat items (no tools). Prints wall time, peak RSS, CPU and store
# size of each run, and of `evalrun report RUN -o r.json` for each.
# REPS=3 repeats the runs; KEEP=DIR keeps the databases and suites there.
set -euo pipefail
cd "$(dirname "$0")/.."
n=${1:-10000}
case $n in
'' | *[!0-9]* | 0) echo "agent.sh: N must be a positive number of items, not \"$n\"" >&2; exit 2 ;;
esac
tmp=${KEEP:-$(mktemp -d)}
mkdir -p "$tmp"
pid=
cleanup() {
	if [ -n "$pid" ]; then kill "$pid" 2>/dev/null || true; wait "$pid" 2>/dev/null || true; fi
	if [ -z "${KEEP:-}" ]; then rm -rf "$tmp"; fi
}
trap cleanup EXIT
go build -o "$tmp/evalrun" ./cmd/evalrun
go build -o "$tmp/fakemodel" ./examples/agent/cmd/fakemodel

# The items: the fake model looks the weather up for every city named,
# then converts 50 USD into the currency of the colder one, then answers.
awk -v n="$n" -v dir="$tmp" 'BEGIN {
	split("Paris London Tokyo Berlin Madrid Rome Oslo Zurich", c, " ")
	split("18 11 21 14 26 24 3 12", t, " ")
	split("EUR GBP JPY EUR EUR EUR NOK CHF", cur, " ")
	srand(1)
	for (i = 0; i < n; i++) {
		k = 2 + (i % 2)  # 2 or 3 cities: 3 or 4 calls
		delete used; q = ""; mocks = ""; want = ""; cold = 0
		for (j = 1; j <= k; j++) {
			do { x = 1 + int(rand() * 8) } while (x in used)
			used[x] = 1
			q = q (j == 1 ? "" : (j == k ? " or " : ", ")) c[x]
			mocks = mocks sprintf("{\"name\":\"get_weather\",\"args\":{\"city\":\"%s\"},\"output\":{\"temp_c\":%s,\"conditions\":\"sunny\"}},", c[x], t[x])
			want = want sprintf("{\"name\":\"get_weather\",\"args\":{\"city\":\"%s\"}},", c[x])
			if (!cold || t[x] + 0 < t[cold] + 0) cold = x
		}
		mocks = mocks sprintf("{\"name\":\"convert_currency\",\"output\":{\"amount\":50,\"currency\":\"%s\"}}", cur[cold])
		want = want sprintf("{\"name\":\"convert_currency\",\"args\":{\"from\":\"USD\",\"to\":\"%s\"}}", cur[cold])
		q = "Which is warmer today, " q "? Then convert 50 USD into the currency of the colder one."
		printf "{\"id\":\"a%05d\",\"input\":\"%s\",\"expected_output\":\"%s\",\"tool_mocks\":[%s],\"expected_trajectory\":[%s]}\n", i, q, c[cold], mocks, want > (dir "/agent.jsonl")
		printf "{\"id\":\"a%05d\",\"input\":\"%s\",\"expected_output\":\"%s\"}\n", i, q, c[cold] > (dir "/plain.jsonl")
	}
}'

cat >"$tmp/agent.yaml" <<'YAML'
name: agent-scale
dataset: {name: agent-scale, file: agent.jsonl}
target:
  kind: openai
  name: fake-agent
  base_url: ${AGENT_BASE_URL}
  model: fake
  system: "You are a travel assistant."
  max_steps: 4
  tools:
    - name: get_weather
      description: Current weather for a city.
      parameters: {type: object, properties: {city: {type: string}}, required: [city]}
    - name: convert_currency
      description: Convert an amount between currencies.
      parameters:
        type: object
        properties: {amount: {type: number}, from: {type: string}, to: {type: string}}
        required: [amount, from, to]
scorers:
  - {kind: contains, name: answer, case_sensitive: false}
  - {kind: trajectory, name: trajectory, mode: in_order}
  - {kind: trajectory, name: f1, mode: f1}
  - {kind: tool_called, name: weather, tool: get_weather}
execution: {concurrency: 20}
YAML
cat >"$tmp/plain.yaml" <<'YAML'
name: plain-scale
dataset: {name: plain-scale, file: plain.jsonl}
target:
  kind: openai
  name: fake-agent
  base_url: ${AGENT_BASE_URL}
  model: fake
  system: "You are a travel assistant."
scorers:
  - {kind: contains, name: answer, case_sensitive: false}
execution: {concurrency: 20}
YAML

"$tmp/fakemodel" -url-file "$tmp/url" >/dev/null &
pid=$!
i=0
while [ ! -s "$tmp/url" ]; do
	i=$((i + 1))
	if [ "$i" -gt 100 ]; then echo "agent.sh: the fake model did not listen within 10 s" >&2; exit 1; fi
	sleep 0.1
done
export AGENT_BASE_URL
AGENT_BASE_URL=$(cat "$tmp/url")
unset OPENAI_API_KEY

for rep in $(seq "${REPS:-1}"); do
	for kind in agent plain; do
		db=$tmp/$kind-$rep.db
		rm -f "$db"*
		/usr/bin/time -f "%e %M %U %S" -o "$tmp/time" env EVALRUN_DB="sqlite:$db" "$tmp/evalrun" run "$tmp/$kind.yaml" ${RUN_FLAGS:-} >"$tmp/out" 2>&1 || {
			cat "$tmp/out" >&2
			exit 1
		}
		read -r wall rss user sys <"$tmp/time"
		run=$(awk '/^run /{print $2; exit}' "$tmp/out")
		printf '%s run %s: wall %ss, peak RSS %d MB, CPU %.2fs, store %d MB\n' "$kind" "$rep" "$wall" $((rss / 1024)) "$(awk -v u="$user" -v s="$sys" 'BEGIN{print u + s}')" $(($(stat -c %s "$db") / 1048576))
		/usr/bin/time -f "%e %M" -o "$tmp/time" env EVALRUN_DB="sqlite:$db" "$tmp/evalrun" report "$run" -o "$tmp/r.json" >/dev/null 2>&1
		read -r wall rss <"$tmp/time"
		printf '%s report -o r.json %s: wall %ss, peak RSS %d MB, %d MB of JSON\n' "$kind" "$rep" "$wall" $((rss / 1024)) $(($(stat -c %s "$tmp/r.json") / 1048576))
	done
done
