#!/bin/sh
# run.sh: runs the agent example offline. It builds and starts the fake
# model (examples/agent/fakemodel) on a free port of 127.0.0.1, runs
# `evalrun run examples/agent/suite.yaml` against it, stops it and exits
# with evalrun's exit code (0: the gate holds).
#
#   examples/agent/run.sh [evalrun run flags...]     e.g. -o agent.json -o agent.md
#
# Run it from anywhere: relative paths in the flags are taken from the
# directory you run it in, and so is evalrun's database (.evalrun/evalrun.db,
# or EVALRUN_DB). Set EVALRUN to an evalrun binary to use it instead of
# building one.
set -eu

here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
# The fake model's start and stop are shared with the other examples.
. "$root/examples/internal/fakemodel.sh"
start_fakemodel agent
AGENT_BASE_URL=$fakemodel_url
export AGENT_BASE_URL
echo "run.sh: fake model at $AGENT_BASE_URL" >&2

# The fake model needs no key: do not send a real one to it.
code=0
env -u OPENAI_API_KEY "$evalrun" run "$here/suite.yaml" "$@" || code=$?
exit "$code"
