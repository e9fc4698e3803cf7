#!/bin/sh
# run.sh: runs the variants example offline. It builds and starts the fake
# model (examples/variants/fakemodel) on a free port of 127.0.0.1, runs
# `evalrun run examples/variants/suite.yaml` against it (an experiment of
# three variants), stops it and exits with evalrun's exit code (0: the
# gate holds for every variant).
#
#   examples/variants/run.sh                     # writes report.json and report.md here
#   examples/variants/run.sh [evalrun run flags...]   e.g. --variant large -o large.md
#
# With no flags it writes the experiment report to report.json and
# report.md; with flags, only what they ask for.
# Run it from anywhere: relative paths in the flags are taken from the
# directory you run it in, and so is evalrun's database (.evalrun/evalrun.db,
# or EVALRUN_DB). Set EVALRUN to an evalrun binary to use it instead of
# building one.
set -eu

here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
tmp=$(mktemp -d "${TMPDIR:-/tmp}/evalrun-variants.XXXXXX")
pid=
cleanup() {
	if [ -n "$pid" ]; then
		kill "$pid" 2>/dev/null || true
		wait "$pid" 2>/dev/null || true
	fi
	rm -rf "$tmp"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

(cd "$root" && go build -o "$tmp/fakemodel" ./examples/variants/cmd/fakemodel)
evalrun=${EVALRUN:-}
if [ -z "$evalrun" ]; then
	(cd "$root" && go build -o "$tmp/evalrun" ./cmd/evalrun)
	evalrun=$tmp/evalrun
fi

"$tmp/fakemodel" -url-file "$tmp/url" >/dev/null &
pid=$!
# Wait for the server to write its URL (it does once it listens).
i=0
while [ ! -s "$tmp/url" ]; do
	if ! kill -0 "$pid" 2>/dev/null; then
		echo "run.sh: the fake model did not start" >&2
		exit 1
	fi
	i=$((i + 1))
	if [ "$i" -gt 100 ]; then
		echo "run.sh: the fake model did not listen within 10 s" >&2
		exit 1
	fi
	sleep 0.1
done
VARIANTS_BASE_URL=$(cat "$tmp/url")
export VARIANTS_BASE_URL
echo "run.sh: fake model at $VARIANTS_BASE_URL" >&2

# The fake model needs no key: do not send a real one to it.
if [ "$#" -eq 0 ]; then
	set -- -o report.json -o report.md
fi
code=0
env -u OPENAI_API_KEY "$evalrun" run "$here/suite.yaml" "$@" || code=$?
exit "$code"
