package web

import (
	"context"
	"net/http"
	"path/filepath"
	"testing"

	"github.com/evalrun/evalrun/sqlite"
)

// TestSQLiteExperiment serves the small experiment from a SQLite store:
// the list, the matrix and the filters read the same as from memory.
func TestSQLiteExperiment(t *testing.T) {
	st, err := sqlite.Open(context.Background(), filepath.Join(t.TempDir(), "evalrun.db"))
	if err != nil {
		t.Fatal(err)
	}
	seed(t, st)
	seedSmallExperiment(t, st)
	b := setupStore(t, st, Options{})

	list := decode[ExperimentsJSON](t, b.mustGet(t, "/api/experiments", http.StatusOK))
	if len(list.Experiments) != 1 || list.Experiments[0].ID != expID || len(list.Experiments[0].Variants) != 3 ||
		list.Experiments[0].Variants[0].Name != "mini" || list.Experiments[0].Variants[2].Name != "terse" {
		t.Fatalf("experiments: %+v", list)
	}
	contains(t, "runs list", b.mustGet(t, "/", http.StatusOK).body, `variant <strong>big</strong> of <a class="experiment-link"`)
	body := b.mustGet(t, "/experiments/"+expID, http.StatusOK).body
	contains(t, "experiment page", between(t, body, `id="matrix"`, "</table>"), "60.0%", "83.3%")
	for query, want := range map[string]string{"show=disagree": "q2,q3,q4", "show=regressed&variant=big": "q2,q4", "tag=billing": "q1,q3"} {
		if got := itemRowIDs(b.mustGet(t, "/experiments/"+expID+"?"+query, http.StatusOK).body); got != want {
			t.Errorf("%s: rows %q, want %q", query, got, want)
		}
	}
	b.mustGet(t, "/experiments/exp-20990101T000000-nope0000", http.StatusNotFound)
}
