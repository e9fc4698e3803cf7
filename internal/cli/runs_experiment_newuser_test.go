package cli

import (
	"strings"
	"testing"
)

// An experiment id where a run id is expected (runs show, runs cancel,
// compare), and a run id given to report --experiment, are refused with
// exit 2 as unknown ids, and the message says what the id is and which
// command takes it, instead of only "not found": the ids look alike and
// the experiment's and its runs' ids are printed together.
func TestIDKindMixupsSayWhatTheIDIs(t *testing.T) {
	b := setup(t)
	srv := newVariantServer(t)
	suite := b.variantSuite(srv.URL, 0, []string{"a", "b"}, "")
	code, _, stderr := b.run("run", suite, "-q")
	if code != 0 {
		t.Fatalf("exit %d\n%s", code, stderr)
	}
	exp, runs := experimentIDs(t, stderr)
	runA := runs["a"]
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"runs", "show", exp}, exp + " is an experiment: evalrun runs list --experiment " + exp + " lists its runs"},
		{[]string{"runs", "cancel", exp}, exp + " is an experiment: evalrun runs list --experiment " + exp + " lists its runs"},
		{[]string{"compare", exp, runA}, exp + " is an experiment: evalrun runs list --experiment " + exp + " lists its runs"},
		{[]string{"report", "--experiment", runA}, runA + " is a run of experiment " + exp + ": evalrun report --experiment " + exp},
	} {
		code, _, stderr := b.run(tc.args...)
		if code != 2 || !strings.Contains(stderr, tc.want) {
			t.Errorf("%v: exit %d, want 2 saying %q\n%s", tc.args, code, tc.want, stderr)
		}
	}
	// Ids of neither kind keep the plain message.
	code, _, stderr = b.run("runs", "show", "exp-20990101T000000-00000000")
	if code != 2 || !strings.Contains(stderr, "run exp-20990101T000000-00000000 not found (evalrun runs list shows the runs)") {
		t.Errorf("unknown experiment id as a run: exit %d\n%s", code, stderr)
	}
}
