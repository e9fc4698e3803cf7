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
# The fake model's start and stop are shared with the other examples.
. "$root/examples/internal/fakemodel.sh"
start_fakemodel variants
VARIANTS_BASE_URL=$fakemodel_url
export VARIANTS_BASE_URL
echo "run.sh: fake model at $VARIANTS_BASE_URL" >&2

# The fake model needs no key: do not send a real one to it.
if [ "$#" -eq 0 ]; then
	set -- -o report.json -o report.md
fi
code=0
env -u OPENAI_API_KEY "$evalrun" run "$here/suite.yaml" "$@" || code=$?
exit "$code"
