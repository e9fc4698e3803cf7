# fakemodel.sh: sourced by an example's run.sh, with $root set to the
# repository's root. start_fakemodel EXAMPLE builds
# examples/EXAMPLE/cmd/fakemodel (and evalrun, unless EVALRUN names a
# binary) in a temporary directory, starts the fake model on a free port
# of 127.0.0.1 and waits until it listens. It sets fakemodel_url to the
# model's base URL and evalrun to the binary to run. The model is stopped
# and the directory removed when the script exits.

tmp=
pid=
cleanup() {
	if [ -n "$pid" ]; then
		kill "$pid" 2>/dev/null || true
		wait "$pid" 2>/dev/null || true
	fi
	if [ -n "$tmp" ]; then
		rm -rf "$tmp"
	fi
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

start_fakemodel() {
	tmp=$(mktemp -d "${TMPDIR:-/tmp}/evalrun-$1.XXXXXX")
	(cd "$root" && go build -o "$tmp/fakemodel" "./examples/$1/cmd/fakemodel")
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
	fakemodel_url=$(cat "$tmp/url")
}
