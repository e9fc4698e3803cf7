//go:build unix

package cli

import (
	"fmt"
	"os"
	"os/exec"
	"strings"
	"testing"

	"golang.org/x/sys/unix"
)

// An exec target's items, clamped to a low open-file limit, all run: the
// clamp counts what an item holds at its peak (while the program starts),
// not once it runs. The run happens in a child process of the test binary,
// whose limit is lowered for good.
func TestExecConcurrencyFitsOpenFileLimit(t *testing.T) {
	if os.Getenv("EVALRUN_TEST_FDLIMIT_CHILD") == "" {
		cmd := exec.Command(os.Args[0], "-test.run=^TestExecConcurrencyFitsOpenFileLimit$", "-test.count=1", "-test.v")
		cmd.Env = append(os.Environ(), "EVALRUN_TEST_FDLIMIT_CHILD=1")
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("the run under a limit of 256 open files: %v\n%s", err, out)
		}
		return
	}
	const limit = 256
	if err := unix.Setrlimit(unix.RLIMIT_NOFILE, &unix.Rlimit{Cur: limit, Max: limit}); err != nil {
		t.Fatal(err)
	}
	b := setup(t)
	var data strings.Builder
	for i := range 400 {
		fmt.Fprintf(&data, `{"id": "i%d", "input": "x", "expected_output": "x"}`+"\n", i)
	}
	b.write("d.jsonl", data.String())
	b.write("bot.sh", "cat >/dev/null; echo x\n")
	suite := b.write("suite.yaml", `
dataset: {name: d, file: d.jsonl}
target: {kind: exec, command: [sh, bot.sh]}
scorers: [exact_match]
execution: {concurrency: 2000}
`)
	code, _, stderr := b.run("run", suite, "-q")
	if code != 0 || !strings.Contains(stderr, "needs more open files than the limit of 256") {
		t.Errorf("exit %d, want 0 with a warning:\n%s", code, stderr)
	}
}
