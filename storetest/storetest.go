// Package storetest is the conformance suite of [evalrun.Store]: every
// behaviour of a store is a test here, and every backend (inmem, sqlite,
// postgres) runs it with [Run].
package storetest

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/evalrun/evalrun"
)

// ItemRowCounter is implemented by stores that can count the item rows they
// keep for a dataset (one row per version of an item). The suite uses it to
// prove that a version stores only what changed; every backend of this
// module implements it.
type ItemRowCounter interface {
	// CountItemRows returns the number of item rows ever stored for the
	// named dataset, 0 when it does not exist.
	CountItemRows(ctx context.Context, dataset string) (int, error)
}

// Run runs the conformance suite. open must return a new, empty store for
// each call; the suite closes it. Stores must also implement
// [evalrun.ResponseCache], [evalrun.ReportStore], [ItemRowCounter] and
// [CacheClock] (whose clock also times run claims). Subtests run in parallel. In -short mode
// the large re-import uses 2,000 items instead of 100,000.
func Run(t *testing.T, open func(t *testing.T) evalrun.Store) {
	t.Helper()
	tests := []struct {
		name string
		fn   func(t *testing.T, s evalrun.Store)
	}{
		{"ImportNew", testImportNew},
		{"ImportUnchanged", testImportUnchanged},
		{"ImportChanged", testImportChanged},
		{"ImportReorderAndInsert", testImportReorderAndInsert},
		{"ImportEmptyAfterItems", testImportRemoveAll},
		{"ImportInvalid", testImportInvalid},
		{"ItemRoundTrip", testItemRoundTrip},
		{"ImportCopiesItems", testImportCopiesItems},
		{"ListDatasets", testListDatasets},
		{"ScanItemsStops", testScanItemsStops},
		{"ItemsPage", testItemsPage},
		{"ReimportLarge", testReimportLarge},
		{"ImportItemsSequenceError", testImportItemsSequenceError},
		{"ImportDuplicateIDs", testImportDuplicateIDs},
		{"ImportMovesInPlaceItem", testImportMovesInPlaceItem},
		{"NotFound", testNotFound},
		{"RunRoundTrip", testRunRoundTrip},
		{"CreateRunInvalid", testCreateRunInvalid},
		{"UpdateRun", testUpdateRun},
		{"ListRuns", testListRuns},
		{"CancelRun", testCancelRun},
		{"CancelRunEnded", testCancelRunEnded},
		{"CancelRunConcurrent", testCancelRunConcurrent},
		{"ClaimRun", testClaimRun},
		{"ClaimRunTakeover", testClaimRunTakeover},
		{"ClaimRunFinished", testClaimRunFinished},
		{"ReleaseRun", testReleaseRun},
		{"ClaimRunInvalid", testClaimRunInvalid},
		{"WriteAndScanResults", testWriteAndScanResults},
		{"ResultItemFromPinnedVersion", testResultItemPinned},
		{"WriteResultsReplaces", testWriteResultsReplaces},
		{"ResultQuery", testResultQuery},
		{"ScanResultKeys", testScanResultKeys},
		{"ResultFieldsRoundTrip", testResultFieldsRoundTrip},
		{"OutputsByteExact", testOutputsByteExact},
		{"ScanResultsStops", testScanResultsStops},
		{"ScanResultsScores", testScanResultsScores},
		{"ScanResultsLong", testScanResultsLong},
		{"ResultsOfRunsApart", testResultsOfRunsApart},
		{"WriteResultsConcurrent", testWriteResultsConcurrent},
		{"WriteResultsUnknownRun", testWriteResultsUnknownRun},
		{"RepeatsDistinct", testRepeatsDistinct},
		{"CacheHitRoundTrip", testCacheHitRoundTrip},
		{"RunConcurrency", testRunConcurrency},
		{"CacheHitMiss", testCacheHitMiss},
		{"CacheExpiry", testCacheExpiry},
		{"CacheLarge", testCacheLarge},
		{"CacheConcurrent", testCacheConcurrent},
		{"ReportRoundTrip", testReportRoundTrip},
		{"ReportReplace", testReportReplace},
		{"ReportMissing", testReportMissing},
		{"CloseTwice", testCloseTwice},
		{"ImportNULID", testImportNULID},
		{"NULTextRoundTrip", testNULTextRoundTrip},
		{"NULRunRecord", testNULRunRecord},
		{"ImportNULName", testImportNULName},
		{"ItemAgentRoundTrip", testItemAgentRoundTrip},
		{"ImportChangedMock", testImportChangedMock},
		{"ResultTrajectoryRoundTrip", testResultTrajectoryRoundTrip},
		{"TrajectoryInvalid", testTrajectoryInvalid},
		{"SkipAgentData", testSkipAgentData},
		{"ExperimentFieldsRoundTrip", testExperimentFieldsRoundTrip},
		{"ListRunsExperiment", testListRunsExperiment},
		{"GetExperiment", testGetExperiment},
		{"ResultPagesSorts", testResultPagesSorts},
		{"ResultPagesOrder", testResultPagesOrder},
		{"ResultPagesSearch", testResultPagesSearch},
		{"ResultPagesSearchEscaped", testResultPagesSearchEscaped},
		{"ResultPagesSearchBudget", testResultPagesSearchBudget},
		{"ResultPagesSearchBudgetChunks", testResultPagesSearchBudgetChunks},
		{"ResultPagesSearchRanges", testResultPagesSearchRanges},
		{"ResultPagesTieWalk", testResultPagesTieWalk},
		{"ResultPagesInvalid", testResultPagesInvalid},
		{"SkipPayloads", testSkipPayloads},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			s := open(t)
			t.Cleanup(func() { _ = s.Close() })
			tt.fn(t, s)
		})
	}
}

// item returns an item with a string input and expected output.
func item(id, input, expected string) *evalrun.Item {
	it := &evalrun.Item{ID: id, Input: evalrun.String(input)}
	if expected != "" {
		it.Expected = evalrun.String(expected)
	}
	return it
}

// makeItems returns n items with ids "item-0000"...
func makeItems(n int) []*evalrun.Item {
	out := make([]*evalrun.Item, n)
	for i := range out {
		out[i] = item(fmt.Sprintf("item-%04d", i), fmt.Sprintf("question %d", i), fmt.Sprintf("answer %d", i))
	}
	return out
}

// cloneItems copies items so that the suite never hands a store the same
// pointers twice.
func cloneItems(items []*evalrun.Item) []*evalrun.Item {
	out := make([]*evalrun.Item, len(items))
	for i, it := range items {
		c := *it
		out[i] = &c
	}
	return out
}

func scanAll(t *testing.T, s evalrun.Store, name string, version int) []*evalrun.Item {
	t.Helper()
	var out []*evalrun.Item
	if err := s.ScanItems(t.Context(), name, version, func(it *evalrun.Item) error {
		out = append(out, it)
		return nil
	}); err != nil {
		t.Fatalf("ScanItems(%q, %d): %v", name, version, err)
	}
	return out
}

func mustImport(t *testing.T, s evalrun.Store, name string, items []*evalrun.Item) (evalrun.DatasetVersion, bool) {
	t.Helper()
	v, created, err := s.ImportDataset(t.Context(), name, items)
	if err != nil {
		t.Fatalf("ImportDataset(%q, %d items): %v", name, len(items), err)
	}
	return v, created
}

func countRows(t *testing.T, s evalrun.Store, name string) int {
	t.Helper()
	c, ok := s.(ItemRowCounter)
	if !ok {
		t.Fatalf("%T does not implement storetest.ItemRowCounter", s)
	}
	n, err := c.CountItemRows(t.Context(), name)
	if err != nil {
		t.Fatalf("CountItemRows(%q): %v", name, err)
	}
	return n
}

// equalJSON compares raw JSON byte-exactly, keeping nil apart from empty.
func equalRaw(a, b json.RawMessage) bool {
	if (a == nil) != (b == nil) {
		return false
	}
	return string(a) == string(b)
}

func diffItems(t *testing.T, got, want []*evalrun.Item) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("got %d items, want %d", len(got), len(want))
	}
	for i := range want {
		g, w := got[i], want[i]
		if g.ID != w.ID || !equalRaw(g.Input, w.Input) || !equalRaw(g.Expected, w.Expected) || !equalMeta(g.Metadata, w.Metadata) {
			t.Fatalf("item %d:\n got  %s\n want %s", i, show(g), show(w))
		}
		if !equalAgentKeys(g, w) {
			t.Fatalf("item %d (%q):\n got  %s\n want %s", i, w.ID, showAgentKeys(g), showAgentKeys(w))
		}
	}
}

func equalMeta(a, b map[string]any) bool {
	ja, _ := json.Marshal(a)
	jb, _ := json.Marshal(b)
	if len(a) == 0 && len(b) == 0 {
		return true
	}
	return string(ja) == string(jb)
}

func show(it *evalrun.Item) string {
	return fmt.Sprintf("id=%q input=%q expected=%q (nil=%v) metadata=%v", it.ID, it.Input, it.Expected, it.Expected == nil, it.Metadata)
}

func wantErr(t *testing.T, what string, err, target error) {
	t.Helper()
	if !errors.Is(err, target) {
		t.Fatalf("%s: err = %v, want %v", what, err, target)
	}
}

// near reports whether a store gave back t (UTC, within a millisecond).
func checkTime(t *testing.T, what string, got, want time.Time) {
	t.Helper()
	if want.IsZero() {
		if !got.IsZero() {
			t.Fatalf("%s = %v, want the zero time", what, got)
		}
		return
	}
	if got.Location() != time.UTC {
		t.Fatalf("%s = %v, want UTC", what, got)
	}
	if d := got.Sub(want); d >= time.Millisecond || d <= -time.Millisecond {
		t.Fatalf("%s = %v, want %v (off by %v)", what, got, want, d)
	}
}
