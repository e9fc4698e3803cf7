package storetest

import (
	"bytes"
	"errors"
	"strings"
	"testing"

	"github.com/evalrun/evalrun"
)

func reportStore(t *testing.T, s evalrun.Store) evalrun.ReportStore {
	t.Helper()
	rs, ok := s.(evalrun.ReportStore)
	if !ok {
		t.Fatalf("%T does not implement evalrun.ReportStore", s)
	}
	return rs
}

func mustPutReport(t *testing.T, rs evalrun.ReportStore, runID string, report []byte) {
	t.Helper()
	if err := rs.PutReportJSON(t.Context(), runID, report); err != nil {
		t.Fatalf("PutReportJSON(%q, %d bytes): %v", runID, len(report), err)
	}
}

func wantReport(t *testing.T, rs evalrun.ReportStore, runID string, want []byte) {
	t.Helper()
	got, err := rs.GetReportJSON(t.Context(), runID)
	if err != nil {
		t.Fatalf("GetReportJSON(%q): %v", runID, err)
	}
	if !bytes.Equal(got, want) {
		t.Fatalf("GetReportJSON(%q) = %.80q (%d bytes), want %.80q (%d bytes)", runID, got, len(got), want, len(want))
	}
}

// testReportRoundTrip: a stored report comes back byte for byte, per run;
// neither the caller's later changes to the bytes it put nor changes to the
// bytes it got reach the store.
func testReportRoundTrip(t *testing.T, s evalrun.Store) {
	rs := reportStore(t, s)
	mustCreateRun(t, s, testRun("run-a", "qa", 1, base))
	mustCreateRun(t, s, testRun("run-b", "qa", 1, base))
	a := []byte("{\n  \"run\": {\"id\": \"run-a\"},\n  \"items\": null, \"note\": \"é \\u00e9\"\n}\n")
	b := []byte(`{"run":{"id":"run-b"}}`)
	put := bytes.Clone(a)
	mustPutReport(t, rs, "run-a", put)
	mustPutReport(t, rs, "run-b", b)
	put[0] = 'X'
	wantReport(t, rs, "run-a", a)
	wantReport(t, rs, "run-b", b)
	got, _ := rs.GetReportJSON(t.Context(), "run-a")
	got[0] = 'Y'
	wantReport(t, rs, "run-a", a)

	// A report with item rows may be megabytes.
	large := []byte(`{"items":["` + strings.Repeat("0123456789abcdef", 1<<17) + `"]}`)
	mustPutReport(t, rs, "run-b", large)
	wantReport(t, rs, "run-b", large)
	wantReport(t, rs, "run-a", a)
}

// testReportReplace: a second put replaces the first (also with a shorter
// value), and the run's other data is untouched.
func testReportReplace(t *testing.T, s evalrun.Store) {
	rs := reportStore(t, s)
	run := setupRun(t, s, 3)
	mustWrite(t, s, result(run.ID, 0, 0), result(run.ID, 1, 0))
	mustPutReport(t, rs, run.ID, []byte(`{"run":{"id":"run-1","status":"running","succeeded":1}}`))
	mustPutReport(t, rs, run.ID, []byte(`{"v":2}`))
	wantReport(t, rs, run.ID, []byte(`{"v":2}`))
	mustPutReport(t, rs, run.ID, []byte(`{"v":3}`))
	wantReport(t, rs, run.ID, []byte(`{"v":3}`))
	if got := scanResults(t, s, run.ID, evalrun.ResultQuery{}); len(got) != 2 {
		t.Fatalf("after PutReportJSON, ScanResults gave %d results (%s), want 2", len(got), keysOf(got))
	}
	if got, err := s.GetRun(t.Context(), run.ID); err != nil || got.Status != run.Status {
		t.Fatalf("after PutReportJSON, GetRun = %+v, %v", got, err)
	}
}

// testReportMissing: a run without a stored report, and an unknown run,
// read as ErrNotFound; putting the report of an unknown run fails with
// ErrNotFound and stores nothing, also once a run of that id is created.
func testReportMissing(t *testing.T, s evalrun.Store) {
	rs := reportStore(t, s)
	mustCreateRun(t, s, testRun("run-a", "qa", 1, base))
	if got, err := rs.GetReportJSON(t.Context(), "run-a"); !errors.Is(err, evalrun.ErrNotFound) {
		t.Fatalf("GetReportJSON of a run without a report = %q, %v; want ErrNotFound", got, err)
	}
	if got, err := rs.GetReportJSON(t.Context(), "nope"); !errors.Is(err, evalrun.ErrNotFound) {
		t.Fatalf("GetReportJSON of an unknown run = %q, %v; want ErrNotFound", got, err)
	}
	err := rs.PutReportJSON(t.Context(), "later", []byte(`{"orphan":true}`))
	wantErr(t, "PutReportJSON of an unknown run", err, evalrun.ErrNotFound)
	mustCreateRun(t, s, testRun("later", "qa", 1, base))
	if got, err := rs.GetReportJSON(t.Context(), "later"); !errors.Is(err, evalrun.ErrNotFound) {
		t.Fatalf("GetReportJSON after a failed put = %q, %v; want ErrNotFound", got, err)
	}
	mustPutReport(t, rs, "later", []byte(`{}`))
	wantReport(t, rs, "later", []byte(`{}`))
	if _, err := rs.GetReportJSON(t.Context(), "run-a"); !errors.Is(err, evalrun.ErrNotFound) {
		t.Fatalf("GetReportJSON of run-a after putting another run's report: %v; want ErrNotFound", err)
	}
}
