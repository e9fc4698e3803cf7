package storetest

import (
	"encoding/json"
	"errors"
	"testing"

	"github.com/evalrun/evalrun"
)

// nulText holds a NUL byte, as a program's stderr or a 500 body can.
const nulText = "before\x00after"

// testImportNULID: an item id, input, expected output and metadata holding
// NUL (\u0000 in the JSON) are taken and read back exactly, by every store.
func testImportNULID(t *testing.T, s evalrun.Store) {
	items := []*evalrun.Item{
		{ID: "id\x00nul", Input: json.RawMessage(`"in\u0000put"`), Expected: json.RawMessage(`{"a\u0000": "b\u0000"}`),
			Metadata: map[string]any{"k\x00": "v\x00", "tags": []any{"t\x00"}}},
		item("plain", "x", "y"),
	}
	mustImport(t, s, "nul", cloneItems(items))
	diffItems(t, scanAll(t, s, "nul", 0), items)
	// Unchanged content is recognised as unchanged.
	if _, created := mustImport(t, s, "nul", cloneItems(items)); created {
		t.Fatal("re-importing the same items with NUL created a version")
	}
	r := testRun("r-nul", "nul", 1, base)
	mustCreateRun(t, s, r)
	res := result("r-nul", 0, 0)
	res.ItemID = "id\x00nul"
	mustWrite(t, s, res)
	got := scanResults(t, s, "r-nul", evalrun.ResultQuery{})
	if len(got) != 1 || got[0].ItemID != "id\x00nul" || got[0].Item == nil || got[0].Item.ID != "id\x00nul" ||
		string(got[0].Item.Input) != `"in\u0000put"` {
		t.Fatalf("result of the NUL item: %+v", got)
	}
	// The viewer's id= filter finds the item by its id with the NUL (the
	// viewer links it so), in every store; tag= with a NUL is no error
	// (PostgreSQL does not index the tags of metadata holding \u0000, so
	// it may find nothing).
	page, err := pager(t, s).QueryResults(t.Context(), "r-nul", evalrun.ResultPageQuery{ItemID: "id\x00nul"})
	if err != nil {
		t.Errorf("id= of the NUL item: %v", err)
	} else if len(page.Results) != 1 || page.Results[0].ItemID != "id\x00nul" {
		t.Errorf("id= of the NUL item: %d results, want it", len(page.Results))
	}
	if _, err := pager(t, s).QueryResults(t.Context(), "r-nul", evalrun.ResultPageQuery{Tag: "t\x00", Count: true}); err != nil {
		t.Errorf("tag= with a NUL: %v", err)
	}
}

// testNULTextRoundTrip: error texts, reasons, trace ids and a run's error
// holding NUL are stored and read back exactly, by every store.
func testNULTextRoundTrip(t *testing.T, s evalrun.Store) {
	r := setupRun(t, s, 3)
	bad := failed("run-1", 0, 0)
	bad.Error = "exit status 1: " + nulText
	bad.TraceID = "trace" + nulText
	scored := result("run-1", 1, 0)
	scored.Output = json.RawMessage(`"out\u0000put"`)
	scored.Scores[1].Reason = "reason " + nulText
	scored.Scores[1].Error = "HTTP 500: " + nulText
	mustWrite(t, s, bad, scored)
	got := scanResults(t, s, "run-1", evalrun.ResultQuery{})
	if len(got) != 2 {
		t.Fatalf("got %d results, want 2", len(got))
	}
	checkResult(t, got[0], bad)
	checkResult(t, got[1], scored)
	if got[0].TraceID != bad.TraceID {
		t.Fatalf("trace id %q, want %q", got[0].TraceID, bad.TraceID)
	}
	failedOnly := scanResults(t, s, "run-1", evalrun.ResultQuery{FailedOnly: true})
	if len(failedOnly) != 1 || failedOnly[0].Index != 0 {
		t.Fatalf("FailedOnly gave %d results", len(failedOnly))
	}
	r.Status, r.Error = evalrun.RunFailed, "every item failed: "+nulText
	if err := s.UpdateRun(t.Context(), r); err != nil {
		t.Fatalf("UpdateRun with a NUL in its error: %v", err)
	}
	rec, err := s.GetRun(t.Context(), r.ID)
	if err != nil || rec.Error != r.Error {
		t.Fatalf("run error %q (%v), want %q", rec.Error, err, r.Error)
	}
}

// testNULRunRecord: a run whose name, target name and scorer names hold NUL
// (a suite's strings can) is created and read back exactly, by every store.
func testNULRunRecord(t *testing.T, s evalrun.Store) {
	r := testRun("r-nul", "qa", 1, base)
	r.Name = "suite " + nulText
	r.Target.Name = "sh -c " + nulText
	r.Scorers[1].Name = "judge" + nulText
	mustCreateRun(t, s, r)
	got, err := s.GetRun(t.Context(), r.ID)
	if err != nil {
		t.Fatal(err)
	}
	checkRun(t, got, r)
	if got.Scorers[1].Name != r.Scorers[1].Name {
		t.Fatalf("scorer name %q, want %q", got.Scorers[1].Name, r.Scorers[1].Name)
	}
}

// testImportNULName: a dataset name holding NUL is refused alike by every
// store (ErrInvalid), and nothing is stored.
func testImportNULName(t *testing.T, s evalrun.Store) {
	_, _, err := s.ImportDataset(t.Context(), "qa\x00x", makeItems(1))
	if !errors.Is(err, evalrun.ErrInvalid) {
		t.Fatalf("ImportDataset with a NUL in its name: %v, want ErrInvalid", err)
	}
	if ds, err := s.ListDatasets(t.Context()); err != nil || len(ds) != 0 {
		t.Fatalf("datasets after the refused import: %v %v", ds, err)
	}
}
