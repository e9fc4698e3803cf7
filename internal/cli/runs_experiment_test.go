package cli

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/evalrun/evalrun"
	"github.com/evalrun/evalrun/sqlite"
)

// storeRuns creates runs in the bundle's SQLite database, as an experiment
// (or a run on its own) leaves them.
func (b *bundle) storeRuns(runs ...*evalrun.Run) {
	b.t.Helper()
	st, err := sqlite.Open(b.t.Context(), strings.TrimPrefix(b.db, "sqlite:"))
	if err != nil {
		b.t.Fatal(err)
	}
	defer st.Close()
	for _, r := range runs {
		if err := st.CreateRun(b.t.Context(), r); err != nil {
			b.t.Fatal(err)
		}
	}
}

var expBase = time.Date(2026, 11, 22, 10, 15, 0, 0, time.UTC)

func expRun(id, exp, variant string, index, second int) *evalrun.Run {
	return &evalrun.Run{ID: id, Name: "support", Dataset: "d", DatasetVersion: 1, Status: evalrun.RunCompleted,
		Total: 3, Succeeded: 3, Experiment: exp, Variant: variant, VariantIndex: index,
		Target: evalrun.TargetInfo{Kind: "openai", Name: "m"}, CreatedAt: expBase.Add(time.Duration(second) * time.Second)}
}

// tableRows splits a table's output into rows of whitespace-separated
// fields, the header first.
func tableRows(out string) [][]string {
	var rows [][]string
	for _, line := range strings.Split(strings.TrimRight(out, "\n"), "\n") {
		rows = append(rows, strings.Fields(line))
	}
	return rows
}

// A list without a run of an experiment keeps the table it always had; one
// with such runs gains EXPERIMENT and VARIANT columns, "—" for runs on their
// own.
func TestRunsListExperimentColumns(t *testing.T) {
	b := setup(t)
	b.storeRuns(&evalrun.Run{ID: "solo", Name: "support", Dataset: "d", DatasetVersion: 1, Status: evalrun.RunCompleted,
		Total: 3, CreatedAt: expBase})
	code, out, errs := b.run("runs", "list")
	if code != 0 {
		t.Fatalf("runs list: exit %d: %s", code, errs)
	}
	rows := tableRows(out)
	if strings.Join(rows[0], " ") != "ID NAME STATUS DATASET ITEMS OK FAILED SKIPPED CREATED" || strings.Contains(out, "—\t") {
		t.Fatalf("runs list without experiments has the header %q, want the one without experiment columns:\n%s", rows[0], out)
	}

	b.storeRuns(expRun("r-base", "exp-1", "baseline", 0, 1), expRun("r-big", "exp-1", "big", 1, 2))
	code, out, errs = b.run("runs", "list")
	if code != 0 {
		t.Fatalf("runs list: exit %d: %s", code, errs)
	}
	rows = tableRows(out)
	if got := strings.Join(rows[0], " "); got != "ID NAME EXPERIMENT VARIANT STATUS DATASET ITEMS OK FAILED SKIPPED CREATED" {
		t.Fatalf("header %q\n%s", got, out)
	}
	want := [][3]string{{"r-big", "exp-1", "big"}, {"r-base", "exp-1", "baseline"}, {"solo", "—", "—"}}
	if len(rows) != 1+len(want) {
		t.Fatalf("%d rows, want %d:\n%s", len(rows)-1, len(want), out)
	}
	for i, w := range want {
		if r := rows[i+1]; r[0] != w[0] || r[2] != w[1] || r[3] != w[2] {
			t.Errorf("row %d = %q, want id %s, experiment %s, variant %s", i, r, w[0], w[1], w[2])
		}
	}
}

// --experiment keeps one experiment's runs (not those of an experiment
// whose id it prefixes), combines with --dataset and --limit, and an
// unknown id lists nothing.
func TestRunsListExperimentFilter(t *testing.T) {
	b := setup(t)
	other := expRun("x-1", "exp-12", "big", 1, 5)
	other.Dataset = "e"
	b.storeRuns(expRun("r-base", "exp-1", "baseline", 0, 1), expRun("r-big", "exp-1", "big", 1, 2),
		expRun("x-0", "exp-12", "baseline", 0, 3), other, expRun("solo", "", "", 0, 6))
	ids := func(args ...string) string {
		t.Helper()
		code, out, errs := b.run(append([]string{"runs", "list", "--json"}, args...)...)
		if code != 0 {
			t.Fatalf("runs list %q: exit %d: %s", args, code, errs)
		}
		var runs []evalrun.Run
		if err := json.Unmarshal([]byte(out), &runs); err != nil {
			t.Fatalf("runs list %q: %v\n%s", args, err, out)
		}
		var got []string
		for _, r := range runs {
			got = append(got, r.ID)
		}
		return strings.Join(got, " ")
	}
	for _, c := range []struct {
		args []string
		want string
	}{
		{nil, "solo x-1 x-0 r-big r-base"},
		{[]string{"--experiment", "exp-1"}, "r-big r-base"},
		{[]string{"--experiment", "exp-12"}, "x-1 x-0"},
		{[]string{"--experiment", "exp-12", "--dataset", "d"}, "x-0"},
		{[]string{"--experiment", "exp-1", "--limit", "1"}, "r-big"},
		{[]string{"--experiment", "exp-nope"}, ""},
	} {
		if got := ids(c.args...); got != c.want {
			t.Errorf("runs list %q = %q, want %q", c.args, got, c.want)
		}
	}
	// The table of an unknown experiment is just its header.
	if code, out, _ := b.run("runs", "list", "--experiment", "exp-nope"); code != 0 || len(tableRows(out)) != 1 {
		t.Errorf("runs list --experiment exp-nope: exit %d\n%s", code, out)
	}
}

// runs list --json and runs show --json give experiment, variant and
// variant_index for a run of an experiment, the baseline's index 0 too,
// and none of them for a run on its own.
func TestRunsExperimentJSON(t *testing.T) {
	b := setup(t)
	b.storeRuns(expRun("r-base", "exp-1", "baseline", 0, 1), expRun("r-big", "exp-1", "big", 1, 2), expRun("solo", "", "", 0, 3))
	_, out, _ := b.run("runs", "list", "--json")
	var runs []map[string]any
	if err := json.Unmarshal([]byte(out), &runs); err != nil || len(runs) != 3 {
		t.Fatalf("runs list --json: %v\n%s", err, out)
	}
	check := func(what string, r map[string]any, exp, variant string, index float64) {
		t.Helper()
		if exp == "" {
			for _, k := range []string{"experiment", "variant", "variant_index"} {
				if v, ok := r[k]; ok {
					t.Errorf("%s: a run on its own has %s = %v", what, k, v)
				}
			}
			return
		}
		if r["experiment"] != exp || r["variant"] != variant || r["variant_index"] != index {
			t.Errorf("%s: experiment %v, variant %v, variant_index %v; want %s, %s, %v", what,
				r["experiment"], r["variant"], r["variant_index"], exp, variant, index)
		}
	}
	check("list solo", runs[0], "", "", 0)
	check("list r-big", runs[1], "exp-1", "big", 1)
	check("list r-base", runs[2], "exp-1", "baseline", 0)
	for _, c := range []struct {
		id, exp, variant string
		index            float64
	}{{"r-base", "exp-1", "baseline", 0}, {"r-big", "exp-1", "big", 1}, {"solo", "", "", 0}} {
		code, out, errs := b.run("runs", "show", c.id, "--json")
		var r map[string]any
		if err := json.Unmarshal([]byte(out), &r); code != 0 || err != nil {
			t.Fatalf("runs show %s --json: exit %d, %v: %s", c.id, code, err, errs)
		}
		check("show "+c.id, r, c.exp, c.variant, c.index)
		if r["id"] != c.id || r["status"] != "completed" {
			t.Errorf("runs show %s --json = %v", c.id, r)
		}
	}
}

// runs show prints the experiment and the variant of a run of an
// experiment, and neither for a run on its own; a hostile variant name
// reaches the terminal without its control characters.
func TestRunsShowExperiment(t *testing.T) {
	b := setup(t)
	b.storeRuns(expRun("r-base", "exp-1", "baseline", 0, 1), expRun("r-evil", "exp-1", "evil\x1b[2J\x1b]0;pwned\a", 2, 2),
		expRun("solo", "", "", 0, 3))
	lines := func(id string) map[string]string {
		t.Helper()
		code, out, errs := b.run("runs", "show", id)
		if code != 0 {
			t.Fatalf("runs show %s: exit %d: %s", id, code, errs)
		}
		m := map[string]string{}
		for _, l := range strings.Split(out, "\n") {
			k, v, _ := strings.Cut(l, "  ")
			m[strings.TrimSpace(k)] = strings.TrimSpace(v)
		}
		if strings.ContainsAny(out, "\x1b\a") {
			t.Errorf("runs show %s prints control characters:\n%q", id, out)
		}
		return m
	}
	m := lines("r-base")
	if m["experiment"] != "exp-1 (evalrun report --experiment exp-1)" || m["variant"] != "baseline (index 0, the baseline)" {
		t.Errorf("runs show r-base: experiment %q, variant %q", m["experiment"], m["variant"])
	}
	m = lines("r-evil")
	if m["variant"] != "evil\uFFFD[2J\uFFFD]0;pwned\uFFFD (index 2)" {
		t.Errorf("runs show r-evil: variant %q", m["variant"])
	}
	m = lines("solo")
	if _, ok := m["experiment"]; ok {
		t.Errorf("runs show of a run on its own prints an experiment: %q", m["experiment"])
	}
	if _, ok := m["variant"]; ok {
		t.Errorf("runs show of a run on its own prints a variant: %q", m["variant"])
	}
	// The list escapes the same way.
	if _, out, _ := b.run("runs", "list"); strings.ContainsAny(out, "\x1b\a") || !strings.Contains(out, "evil\uFFFD[2J") {
		t.Errorf("runs list shows the hostile variant name as %q", out)
	}
}
