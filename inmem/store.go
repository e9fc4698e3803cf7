// Package inmem is an in-memory [evalrun.Store]: datasets with versions and
// item history, runs, results and scores, kept in maps behind one mutex. It
// is what tests and library users without persistence use, and it is fast
// enough not to slow the engine (WriteResults copies two slices per batch).
// Nothing survives the process.
package inmem

import (
	"cmp"
	"context"
	"fmt"
	"iter"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/evalrun/evalrun"
	"github.com/evalrun/evalrun/dataset"
	"github.com/evalrun/evalrun/internal/sqlstore"
)

var _ evalrun.Store = (*Store)(nil)

// Store is an in-memory [evalrun.Store]. A zero Store is not valid: use
// [New]. It is safe for concurrent use. Values passed in are copied
// shallowly: callers must not modify the bytes of an Item's Input or an
// ItemResult's Output after handing them over, nor those of values read back.
type Store struct {
	now func() time.Time

	mu       sync.RWMutex
	datasets map[string]*datasetRec
	runs     map[string]*runRec

	cache responseCache
}

type datasetRec struct {
	info     evalrun.Dataset
	versions []*versionRec // versions[v-1]
	rows     int           // item rows ever written
	nextRef  int64
}

type versionRec struct {
	info  evalrun.DatasetVersion
	rows  []dataset.Row   // the version's rows in order (Ref indexes items)
	items []*evalrun.Item // items[i] is rows[i]'s item

	byIDOnce sync.Once
	byID     map[string]*evalrun.Item
}

type resultKey struct{ index, repeat int }

type runRec struct {
	info    evalrun.Run
	results map[resultKey]*evalrun.ItemResult
	report  []byte // the stored final report (ReportStore); nil: none

	// sorted caches results ordered by (index, repeat) between writes, so
	// that scans of a finished run do not sort it again. WriteResults
	// (holding the store's lock) clears it; a scan (holding the read lock)
	// fills it. The slice is never modified once stored.
	sorted atomic.Pointer[[]*evalrun.ItemResult]
}

// New returns an empty store.
func New() *Store {
	return &Store{
		now:      time.Now,
		datasets: map[string]*datasetRec{},
		runs:     map[string]*runRec{},
	}
}

// Close does nothing; the store stays usable. Closing twice is safe.
func (s *Store) Close() error { return nil }

// CountItemRows returns the number of item rows ever stored for the dataset
// (one per item version), or 0 for an unknown dataset.
func (s *Store) CountItemRows(_ context.Context, name string) (int, error) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	if d := s.datasets[name]; d != nil {
		return d.rows, nil
	}
	return 0, nil
}

// ImportDataset implements [evalrun.DatasetStore].
func (s *Store) ImportDataset(_ context.Context, name string, items []*evalrun.Item) (evalrun.DatasetVersion, bool, error) {
	if err := dataset.CheckName(name); err != nil {
		return evalrun.DatasetVersion{}, false, fmt.Errorf("import dataset: %w", err)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	d := s.datasets[name]
	var cur *versionRec
	if d != nil {
		cur = d.versions[len(d.versions)-1]
	}
	var curRows []dataset.Row
	if cur != nil {
		curRows = cur.rows
	}
	plan, err := dataset.PlanVersion(cur != nil, curRows, items)
	if err != nil {
		return evalrun.DatasetVersion{}, false, fmt.Errorf("import dataset %q: %w", name, err)
	}
	if plan.Unchanged {
		return cur.info, false, nil
	}
	now := s.now().UTC()
	if d == nil {
		d = &datasetRec{info: evalrun.Dataset{Name: name, CreatedAt: now}}
		s.datasets[name] = d
	}
	v := &versionRec{info: evalrun.DatasetVersion{
		Dataset: name, Version: len(d.versions) + 1, CreatedAt: now, ItemCount: len(items),
		Added: plan.Added, Changed: plan.Changed, Removed: plan.Removed,
	}}
	// Merge kept rows (in key order) with inserted rows (in key order).
	closed := make(map[int64]bool, len(plan.Close))
	for _, r := range plan.Close {
		closed[r.Ref] = true
	}
	v.rows = make([]dataset.Row, 0, len(items))
	v.items = make([]*evalrun.Item, 0, len(items))
	ins := plan.Insert
	for i := 0; i <= len(curRows); i++ {
		for len(ins) > 0 && (i == len(curRows) || string(ins[0].Key) < string(curRows[i].Key)) {
			d.nextRef++
			v.rows = append(v.rows, dataset.Row{ID: ins[0].Item.ID, Key: ins[0].Key, Hash: ins[0].Hash, Ref: d.nextRef})
			v.items = append(v.items, copyItem(ins[0].Item))
			ins = ins[1:]
		}
		if i < len(curRows) && !closed[curRows[i].Ref] {
			v.rows = append(v.rows, curRows[i])
			v.items = append(v.items, cur.items[i])
		}
	}
	d.rows += len(plan.Insert)
	d.versions = append(d.versions, v)
	d.info.LatestVersion = v.info.Version
	d.info.ItemCount = len(items)
	d.info.UpdatedAt = now
	return v.info, true, nil
}

// ImportItems implements [evalrun.DatasetStore]. The store holds every
// item anyway: it collects them and imports the slice.
func (s *Store) ImportItems(ctx context.Context, name string, items iter.Seq2[*evalrun.Item, error]) (evalrun.DatasetVersion, bool, error) {
	var all []*evalrun.Item
	for it, err := range items {
		if err != nil {
			return evalrun.DatasetVersion{}, false, err
		}
		all = append(all, it)
	}
	return s.ImportDataset(ctx, name, all)
}

// copyItem copies an item deeply enough that the caller's later changes do
// not reach the store.
func copyItem(it *evalrun.Item) *evalrun.Item {
	c := &evalrun.Item{ID: it.ID, Input: slices.Clone(it.Input)}
	if it.Expected != nil {
		c.Expected = slices.Clone(it.Expected)
	}
	if b, _ := dataset.MarshalMetadata(it.Metadata); b != nil {
		// A JSON round trip gives the same types the SQL stores give back.
		c.Metadata, _ = dataset.UnmarshalMetadata(b)
	}
	// The same for the agent keys: what SQL stores keep (MarshalAgent),
	// read back alike. PlanVersion hashed them already, so they marshal.
	mocks, expected, _ := dataset.MarshalAgent(it)
	_ = dataset.UnmarshalAgent(c, mocks, expected)
	return c
}

// GetDataset implements [evalrun.DatasetStore].
func (s *Store) GetDataset(_ context.Context, name string) (*evalrun.Dataset, error) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	d := s.datasets[name]
	if d == nil {
		return nil, fmt.Errorf("dataset %q: %w", name, evalrun.ErrNotFound)
	}
	info := d.info
	return &info, nil
}

// ListDatasets implements [evalrun.DatasetStore].
func (s *Store) ListDatasets(_ context.Context) ([]*evalrun.Dataset, error) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	out := make([]*evalrun.Dataset, 0, len(s.datasets))
	for _, d := range s.datasets {
		info := d.info
		out = append(out, &info)
	}
	slices.SortFunc(out, func(a, b *evalrun.Dataset) int { return strings.Compare(a.Name, b.Name) })
	return out, nil
}

// ListDatasetVersions implements [evalrun.DatasetStore].
func (s *Store) ListDatasetVersions(_ context.Context, name string) ([]*evalrun.DatasetVersion, error) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	d := s.datasets[name]
	if d == nil {
		return nil, fmt.Errorf("dataset %q: %w", name, evalrun.ErrNotFound)
	}
	out := make([]*evalrun.DatasetVersion, len(d.versions))
	for i, v := range d.versions {
		info := v.info
		out[i] = &info
	}
	return out, nil
}

func (s *Store) version(name string, version int) (*versionRec, error) {
	d := s.datasets[name]
	if d == nil {
		return nil, fmt.Errorf("dataset %q: %w", name, evalrun.ErrNotFound)
	}
	if version == 0 {
		version = len(d.versions)
	}
	if version < 1 || version > len(d.versions) {
		return nil, fmt.Errorf("dataset %q version %d: %w", name, version, evalrun.ErrNotFound)
	}
	return d.versions[version-1], nil
}

// ScanItems implements [evalrun.DatasetStore]. Versions are immutable, so fn
// runs without the store's lock held.
func (s *Store) ScanItems(ctx context.Context, name string, version int, fn func(*evalrun.Item) error) error {
	s.mu.RLock()
	v, err := s.version(name, version)
	s.mu.RUnlock()
	if err != nil {
		return err
	}
	for _, it := range v.items {
		if err := ctx.Err(); err != nil {
			return err
		}
		c := *it
		if err := fn(&c); err != nil {
			return err
		}
	}
	return nil
}

// ItemsPage implements [evalrun.DatasetStore]. The cursor is the 1-based
// position of the last item returned, as a decimal.
func (s *Store) ItemsPage(ctx context.Context, name string, version int, after []byte, limit int) ([]*evalrun.Item, []byte, error) {
	if version < 1 || limit < 1 {
		return nil, nil, fmt.Errorf("items page of %q: version %d, limit %d: both must be positive: %w", name, version, limit, evalrun.ErrInvalid)
	}
	from := 0
	if after != nil {
		n, err := strconv.Atoi(string(after))
		if err != nil || n < 0 {
			return nil, nil, fmt.Errorf("items page of %q: cursor %q is not one of this store's: %w", name, after, evalrun.ErrInvalid)
		}
		from = n
	}
	if err := ctx.Err(); err != nil {
		return nil, nil, err
	}
	s.mu.RLock()
	v, err := s.version(name, version)
	s.mu.RUnlock()
	if err != nil {
		return nil, nil, err
	}
	if from >= len(v.items) {
		return nil, nil, nil
	}
	end := min(from+limit, len(v.items))
	out := make([]*evalrun.Item, 0, end-from)
	for _, it := range v.items[from:end] {
		c := *it
		out = append(out, &c)
	}
	return out, []byte(strconv.Itoa(end)), nil
}

// CreateRun implements [evalrun.RunStore].
func (s *Store) CreateRun(_ context.Context, run *evalrun.Run) error {
	if run.ID == "" {
		return fmt.Errorf("create run: empty id: %w", evalrun.ErrInvalid)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, ok := s.runs[run.ID]; ok {
		return fmt.Errorf("create run: run %q already exists: %w", run.ID, evalrun.ErrInvalid)
	}
	r := copyRun(run)
	if r.CreatedAt.IsZero() {
		r.CreatedAt = s.now().UTC()
	}
	r.ClaimedBy, r.ClaimExpires = "", time.Time{} // only ClaimRun claims
	s.runs[run.ID] = &runRec{info: *r, results: map[resultKey]*evalrun.ItemResult{}}
	return nil
}

func copyRun(run *evalrun.Run) *evalrun.Run {
	r := *run
	r.Scorers = slices.Clone(run.Scorers)
	r.Config = slices.Clone(run.Config)
	r.CreatedAt = run.CreatedAt.UTC()
	r.StartedAt = run.StartedAt.UTC()
	r.CompletedAt = run.CompletedAt.UTC()
	r.ClaimExpires = run.ClaimExpires.UTC()
	return &r
}

// UpdateRun implements [evalrun.RunStore]. It also replaces the settled
// concurrency.
func (s *Store) UpdateRun(_ context.Context, run *evalrun.Run) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	rec := s.runs[run.ID]
	if rec == nil {
		return fmt.Errorf("update run %q: %w", run.ID, evalrun.ErrNotFound)
	}
	r := &rec.info
	r.Status = run.Status
	r.Total, r.Succeeded, r.Failed, r.Skipped, r.PersistErrors = run.Total, run.Succeeded, run.Failed, run.Skipped, run.PersistErrors
	r.Concurrency = run.Concurrency
	r.Error = run.Error
	r.StartedAt = run.StartedAt.UTC()
	r.CompletedAt = run.CompletedAt.UTC()
	return nil
}

// CancelRun implements [evalrun.RunStore].
func (s *Store) CancelRun(_ context.Context, id, reason string) (*evalrun.Run, bool, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	rec := s.runs[id]
	if rec == nil {
		return nil, false, fmt.Errorf("cancel run %q: %w", id, evalrun.ErrNotFound)
	}
	r := &rec.info
	if !r.Status.Cancelable() {
		return copyRun(r), false, nil
	}
	r.Status = evalrun.RunCanceled
	if r.Error == "" {
		r.Error = reason
	}
	return copyRun(r), true, nil
}

// ClaimRun implements [evalrun.RunStore], by the clock of SetClock.
func (s *Store) ClaimRun(_ context.Context, id string, c evalrun.RunClaim) (*evalrun.Run, bool, error) {
	if c.Owner == "" || c.TTL <= 0 {
		return nil, false, fmt.Errorf("claim run %q: owner %q, ttl %v: %w", id, c.Owner, c.TTL, evalrun.ErrInvalid)
	}
	now := s.cache.now().UTC()
	s.mu.Lock()
	defer s.mu.Unlock()
	rec := s.runs[id]
	if rec == nil {
		return nil, false, fmt.Errorf("claim run %q: %w", id, evalrun.ErrNotFound)
	}
	r := &rec.info
	renew := r.ClaimedBy == c.Owner
	free := !r.Claimed(c.Owner, now) || (c.Replace != "" && r.ClaimedBy == c.Replace)
	if !renew && !(free && r.Resumable()) {
		return copyRun(r), false, nil
	}
	r.ClaimedBy, r.ClaimExpires = c.Owner, now.Add(c.TTL)
	return copyRun(r), true, nil
}

// ReleaseRun implements [evalrun.RunStore].
func (s *Store) ReleaseRun(_ context.Context, id, owner string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	rec := s.runs[id]
	if rec == nil {
		return fmt.Errorf("release run %q: %w", id, evalrun.ErrNotFound)
	}
	if r := &rec.info; r.ClaimedBy == owner {
		r.ClaimedBy, r.ClaimExpires = "", time.Time{}
	}
	return nil
}

// GetRun implements [evalrun.RunStore].
func (s *Store) GetRun(_ context.Context, id string) (*evalrun.Run, error) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	rec := s.runs[id]
	if rec == nil {
		return nil, fmt.Errorf("run %q: %w", id, evalrun.ErrNotFound)
	}
	return copyRun(&rec.info), nil
}

// ListRuns implements [evalrun.RunStore]: newest first (by CreatedAt, then
// by id).
func (s *Store) ListRuns(_ context.Context, f evalrun.RunFilter) ([]*evalrun.Run, error) {
	s.mu.RLock()
	out := make([]*evalrun.Run, 0, len(s.runs))
	for _, rec := range s.runs {
		if f.Keeps(&rec.info) {
			out = append(out, copyRun(&rec.info))
		}
	}
	s.mu.RUnlock()
	slices.SortFunc(out, func(a, b *evalrun.Run) int {
		if c := b.CreatedAt.Compare(a.CreatedAt); c != 0 {
			return c
		}
		return strings.Compare(b.ID, a.ID)
	})
	if f.Limit > 0 && len(out) > f.Limit {
		out = out[:f.Limit]
	}
	return out, nil
}

// WriteResults implements [evalrun.RunStore]. It copies each result
// shallowly (one allocation for the batch's results, one for their scores)
// and takes the lock once per batch. On error nothing is written.
func (s *Store) WriteResults(_ context.Context, results []*evalrun.ItemResult) error {
	if len(results) == 0 {
		return nil
	}
	nscores := 0
	for _, r := range results {
		nscores += len(r.Scores)
	}
	copies := make([]evalrun.ItemResult, len(results))
	scores := make([]evalrun.ScorerResult, 0, nscores)
	for i, r := range results {
		c := &copies[i]
		*c = *r
		c.Item = nil
		if r.Trajectory != nil {
			// Stored as the SQL stores store it, so that every store reads
			// back the same trajectory (Calls [] for none, compact JSON)
			// and refuses the same ones.
			b, err := sqlstore.MarshalTrajectory(r.Trajectory)
			if err == nil {
				c.Trajectory, err = sqlstore.UnmarshalTrajectory(b)
			}
			if err != nil {
				return fmt.Errorf("write result %d/%d of run %q: %w", r.Index, r.Repeat, r.RunID, err)
			}
		}
		c.StartedAt = r.StartedAt.UTC()
		c.CompletedAt = r.CompletedAt.UTC()
		if len(r.Scores) > 0 {
			start := len(scores)
			scores = append(scores, r.Scores...)
			c.Scores = scores[start:len(scores):len(scores)]
		}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	var rec *runRec
	for i := range copies {
		c := &copies[i]
		if rec == nil || rec.info.ID != c.RunID {
			if rec = s.runs[c.RunID]; rec == nil {
				return fmt.Errorf("write results: run %q: %w", c.RunID, evalrun.ErrNotFound)
			}
		}
	}
	rec = nil
	for i := range copies {
		c := &copies[i]
		if rec == nil || rec.info.ID != c.RunID {
			rec = s.runs[c.RunID]
		}
		rec.results[resultKey{c.Index, c.Repeat}] = c
		rec.sorted.Store(nil)
	}
	return nil
}

// snapshot returns the run's results ordered by (index, repeat) (sorted
// once after each write, then cached), the run's scorer order and the items
// of its pinned version by id.
func (s *Store) snapshot(runID string) ([]*evalrun.ItemResult, *evalrun.Run, map[string]*evalrun.Item, error) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	rec := s.runs[runID]
	if rec == nil {
		return nil, nil, nil, fmt.Errorf("run %q: %w", runID, evalrun.ErrNotFound)
	}
	var list []*evalrun.ItemResult
	if p := rec.sorted.Load(); p != nil {
		list = *p
	} else {
		list = make([]*evalrun.ItemResult, 0, len(rec.results))
		for _, r := range rec.results {
			list = append(list, r)
		}
		slices.SortFunc(list, func(a, b *evalrun.ItemResult) int {
			return cmp.Or(cmp.Compare(a.Index, b.Index), cmp.Compare(a.Repeat, b.Repeat))
		})
		rec.sorted.Store(&list)
	}
	var byID map[string]*evalrun.Item
	if v, err := s.version(rec.info.Dataset, rec.info.DatasetVersion); rec.info.DatasetVersion > 0 && err == nil {
		v.byIDOnce.Do(func() {
			v.byID = make(map[string]*evalrun.Item, len(v.items))
			for _, it := range v.items {
				v.byID[it.ID] = it
			}
		})
		byID = v.byID
	}
	return list, copyRun(&rec.info), byID, nil
}

// ScanResults implements [evalrun.RunStore]. It holds the lock only to take
// a snapshot of the run's result pointers; stored results are never
// modified in place, so fn runs unlocked and may call the store.
func (s *Store) ScanResults(ctx context.Context, runID string, q evalrun.ResultQuery, fn func(*evalrun.ItemResult) error) error {
	list, run, byID, err := s.snapshot(runID)
	if err != nil {
		return err
	}
	order := make(map[string]int, len(run.Scorers))
	for i, sc := range run.Scorers {
		order[sc.Name] = i
	}
	n := 0
	for _, r := range list {
		if r.Index < q.FromIndex || (q.FailedOnly && !r.Failed()) {
			continue
		}
		if q.Limit > 0 && n >= q.Limit {
			break
		}
		if err := ctx.Err(); err != nil {
			return err
		}
		n++
		c := copyResult(r, byID[r.ItemID], order, q.SkipPayloads, q.SkipAgentData)
		if err := fn(c); err != nil {
			return err
		}
	}
	return nil
}

// copyResult returns a copy of a stored result with its item it (nil:
// none) and its scores in the run's scorer order, leaving out the payloads
// (ResultQuery.SkipPayloads) or the agent data (SkipAgentData).
func copyResult(r *evalrun.ItemResult, it *evalrun.Item, order map[string]int, skipPayloads, skipAgentData bool) *evalrun.ItemResult {
	skipAgentData = skipAgentData || skipPayloads
	c := *r
	c.Scores = slices.Clone(r.Scores)
	if skipPayloads {
		c.Output = nil
	}
	if skipAgentData {
		c.Trajectory = nil
	} else if r.Trajectory != nil {
		t := *r.Trajectory
		t.Calls = slices.Clone(t.Calls)
		c.Trajectory = &t
	}
	sortScores(c.Scores, order)
	if it != nil {
		ic := *it
		if skipAgentData {
			ic.ToolMocks, ic.ExpectedTrajectory = nil, nil
		}
		if skipPayloads {
			ic.Input, ic.Expected = nil, nil
		}
		c.Item = &ic
	}
	return &c
}

// sortScores orders scores by their scorer's position in order (a run's
// scorer names by position); scorers missing from order keep their
// relative order after the known ones.
func sortScores(scores []evalrun.ScorerResult, order map[string]int) {
	if len(scores) < 2 || len(order) == 0 {
		return
	}
	pos := func(s *evalrun.ScorerResult) int {
		if p, ok := order[s.Scorer]; ok {
			return p
		}
		return len(order)
	}
	slices.SortStableFunc(scores, func(a, b evalrun.ScorerResult) int { return cmp.Compare(pos(&a), pos(&b)) })
}

// ScanResultKeys implements [evalrun.RunStore].
func (s *Store) ScanResultKeys(ctx context.Context, runID string, fn func(evalrun.ResultKey) error) error {
	list, _, _, err := s.snapshot(runID)
	if err != nil {
		return err
	}
	for _, r := range list {
		if err := ctx.Err(); err != nil {
			return err
		}
		if err := fn(evalrun.ResultKey{Index: r.Index, Repeat: r.Repeat, Failed: r.Failed()}); err != nil {
			return err
		}
	}
	return nil
}
