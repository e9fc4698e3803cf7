package postgres

import (
	"bytes"
	"cmp"
	"context"
	"errors"
	"fmt"
	"iter"
	"time"

	"github.com/evalrun/evalrun"
	"github.com/evalrun/evalrun/dataset"
	"github.com/evalrun/evalrun/internal/sqlstore"
	"github.com/jackc/pgx/v5"
)

// ImportDataset implements [evalrun.DatasetStore]: [Store.ImportItems]
// over the slice.
func (s *Store) ImportDataset(ctx context.Context, name string, items []*evalrun.Item) (evalrun.DatasetVersion, bool, error) {
	return s.ImportItems(ctx, name, dataset.Items(items))
}

// ImportItems implements [evalrun.DatasetStore]. In one transaction,
// holding an advisory lock on the dataset's name so that concurrent
// imports take turns, it reads the latest version's rows in order, a page
// at a time, alongside the items: an item equal to the row of its
// position (the usual case of a re-import) costs a bit; any other is
// copied (COPY, a batch at a time) into a temporary table. Unless every
// item was in place, it then compares the staged items with the latest
// version in SQL, plans the version with [dataset.PlanPositions] and
// writes the plan set-based: only changed, added and moved items get rows.
func (s *Store) ImportItems(ctx context.Context, name string, items iter.Seq2[*evalrun.Item, error]) (evalrun.DatasetVersion, bool, error) {
	var zero evalrun.DatasetVersion
	if err := dataset.CheckName(name); err != nil {
		return zero, false, fmt.Errorf("import dataset: %w", err)
	}
	fail := func(err error) (evalrun.DatasetVersion, bool, error) {
		return zero, false, fmt.Errorf("import dataset %q: %w", name, err)
	}
	tx, err := s.pool.Begin(ctx)
	if err != nil {
		return fail(err)
	}
	defer tx.Rollback(context.WithoutCancel(ctx))
	if _, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock(hashtextextended('evalrun dataset ' || $1, 0))`, name); err != nil {
		return fail(err)
	}
	latest := 0
	err = tx.QueryRow(ctx, `SELECT latest_version FROM datasets WHERE name = $1`, name).Scan(&latest)
	if err != nil && !errors.Is(err, pgx.ErrNoRows) {
		return fail(err)
	}
	if _, err := tx.Exec(ctx, stagingSchema); err != nil {
		return fail(err)
	}
	st, err := stageItems(ctx, tx, name, items)
	var itemsErr *itemsError
	if errors.As(err, &itemsErr) {
		return zero, false, itemsErr.err
	}
	if err != nil {
		return fail(err)
	}
	n, cur := st.n, st.cur
	if latest > 0 && n == cur && st.inPlaceCount == n {
		v, err := getVersion(ctx, tx, name, latest)
		if err != nil {
			return fail(err)
		}
		return *v, false, nil
	}
	if _, err := tx.Exec(ctx, `INSERT INTO import_current (rank, ref, item_id, hash, ord)
		SELECT row_number() OVER (ORDER BY ord), id, item_id, hash, ord FROM dataset_items
		WHERE dataset = $1 AND valid_to IS NULL`, name); err != nil {
		return fail(err)
	}
	if _, err := tx.Exec(ctx, `ANALYZE import_items, import_current`); err != nil {
		return fail(err)
	}
	dup, err := firstDuplicate(ctx, tx)
	if err != nil {
		return fail(err)
	}
	matches, matched, changed, err := matchItems(ctx, tx, st.inPlace, dup)
	if err != nil {
		return fail(err)
	}
	matched += st.inPlaceCount
	plan := dataset.PlanPositions(n, cur, st.inPlace, matches)
	matches = nil

	now := time.Now().UTC().Truncate(time.Microsecond)
	v := evalrun.DatasetVersion{
		Dataset: name, Version: latest + 1, CreatedAt: now, ItemCount: n,
		Added: n - matched, Changed: changed, Removed: cur - matched,
	}
	if latest == 0 {
		_, err = tx.Exec(ctx, `INSERT INTO datasets (name, latest_version, item_count, created_at, updated_at) VALUES ($1, $2, $3, $4, $4)`,
			name, v.Version, v.ItemCount, now)
	} else {
		_, err = tx.Exec(ctx, `UPDATE datasets SET latest_version = $2, item_count = $3, updated_at = $4 WHERE name = $1`,
			name, v.Version, v.ItemCount, now)
	}
	if err != nil {
		return fail(err)
	}
	if _, err := tx.Exec(ctx, `INSERT INTO dataset_versions (dataset, version, created_at, item_count, added, changed, removed)
		VALUES ($1, $2, $3, $4, $5, $6, $7)`, name, v.Version, now, v.ItemCount, v.Added, v.Changed, v.Removed); err != nil {
		return fail(err)
	}
	if err := writePlan(ctx, tx, name, v.Version, plan, st.inPlace); err != nil {
		return fail(err)
	}
	if err := tx.Commit(ctx); err != nil {
		return fail(fmt.Errorf("commit: %w", err))
	}
	return v, true, nil
}

// stagingSchema holds an import's temporary tables, dropped with its
// transaction: the new items not in place by 1-based position, the latest version's
// rows by 1-based rank in its order, and the order keys of the items to
// insert.
const stagingSchema = `
CREATE TEMP TABLE import_items (
	pos                 integer PRIMARY KEY,
	item_id             text NOT NULL,
	hash                bytea NOT NULL,
	input               bytea NOT NULL,
	expected            bytea,
	metadata            bytea,
	tool_mocks          bytea,
	expected_trajectory bytea
) ON COMMIT DROP;
CREATE TEMP TABLE import_current (
	rank    integer PRIMARY KEY,
	ref     bigint NOT NULL,
	item_id text NOT NULL,
	hash    bytea NOT NULL,
	ord     bytea NOT NULL
) ON COMMIT DROP;
CREATE TEMP TABLE import_keys (
	pos      integer NOT NULL,
	ord      bytea NOT NULL,
	in_place boolean NOT NULL
) ON COMMIT DROP;`

// itemsError carries an error of the items' sequence, returned as is.
type itemsError struct{ err error }

func (e *itemsError) Error() string { return e.err.Error() }

// staged is what stageItems learnt.
type staged struct {
	n, cur       int            // items, rows of the latest version
	inPlace      dataset.Bitset // positions of the items equal to the row of that rank
	inPlaceCount int
}

// stageItems reads stagePage current rows per query, and copies up to
// stagePage staged items or stageBytes of them per COPY: each is a round
// trip, each batch is held.
const (
	stagePage  = 10_000
	stageBytes = 8 << 20
)

// stageItems reads the items and the latest version's rows in order side
// by side (keyset pages on the (dataset, ord) index, between which the
// connection copies): an item equal to the row of its rank is only marked
// in place; any other is copied into import_items.
func stageItems(ctx context.Context, tx pgx.Tx, name string, items iter.Seq2[*evalrun.Item, error]) (*staged, error) {
	st := &staged{}
	if err := tx.QueryRow(ctx, `SELECT count(*) FROM dataset_items WHERE dataset = $1 AND valid_to IS NULL`, name).Scan(&st.cur); err != nil {
		return nil, err
	}
	type row struct {
		id   string
		hash []byte
	}
	var page []row
	read, after := 0, []byte{} // rows read; the last one's order key
	curRow := func() (row, bool, error) {
		if len(page) == 0 && read < st.cur {
			rows, err := tx.Query(ctx, `SELECT item_id, hash, ord FROM dataset_items
				WHERE dataset = $1 AND valid_to IS NULL AND ord > $2 ORDER BY ord LIMIT $3`, name, after, stagePage)
			if err != nil {
				return row{}, false, err
			}
			for rows.Next() {
				var r row
				if err := rows.Scan(&r.id, &r.hash, &after); err != nil {
					rows.Close()
					return row{}, false, err
				}
				page = append(page, r)
			}
			rows.Close()
			if err := rows.Err(); err != nil {
				return row{}, false, err
			}
			read += len(page)
		}
		if len(page) == 0 {
			return row{}, false, nil
		}
		r := page[0]
		page = page[1:]
		return r, true, nil
	}
	columns := []string{"pos", "item_id", "hash", "input", "expected", "metadata", "tool_mocks", "expected_trajectory"}
	if st.cur == 0 {
		// Nothing to compare with (a new dataset): one COPY of every item.
		next, stop := iter.Pull2(items)
		defer stop()
		src := &stageSource{next: next}
		_, err := tx.CopyFrom(ctx, pgx.Identifier{"import_items"}, columns, src)
		switch {
		case src.itemsErr != nil:
			return nil, &itemsError{src.itemsErr}
		case src.err != nil:
			return nil, src.err
		case err != nil:
			return nil, fmt.Errorf("stage items: %w", err)
		}
		st.n = src.n
		return st, nil
	}
	var batch [][]any
	batchBytes := 0
	flush := func() error {
		if len(batch) == 0 {
			return nil
		}
		_, err := tx.CopyFrom(ctx, pgx.Identifier{"import_items"}, columns, pgx.CopyFromRows(batch))
		batch, batchBytes = batch[:0], 0
		if err != nil {
			return fmt.Errorf("stage items: %w", err)
		}
		return nil
	}
	for it, err := range items {
		if err != nil {
			return nil, &itemsError{err}
		}
		st.n++
		enc, err := dataset.Stage(st.n, it)
		if err != nil {
			return nil, err
		}
		id := pgText(it.ID)
		r, ok, err := curRow()
		if err != nil {
			return nil, err
		}
		if ok && r.id == id && bytes.Equal(r.hash, enc.Hash) {
			st.inPlace.Set(st.n)
			st.inPlaceCount++
			continue
		}
		batch = append(batch, stageRow(st.n, it, enc))
		batchBytes += len(it.Input) + len(it.Expected) + len(enc.Metadata) + len(enc.ToolMocks) + len(enc.ExpectedTrajectory)
		if len(batch) == stagePage || batchBytes >= stageBytes {
			if err := flush(); err != nil {
				return nil, err
			}
		}
	}
	return st, flush()
}

// stageRow is the import_items row of an item.
func stageRow(pos int, it *evalrun.Item, enc dataset.StagedItem) []any {
	return []any{pos, pgText(it.ID), enc.Hash, []byte(it.Input), blob(it.Expected), blob(enc.Metadata), blob(enc.ToolMocks), blob(enc.ExpectedTrajectory)}
}

// stageSource feeds one COPY from the items' sequence, checking and
// encoding each item ([dataset.Stage]).
type stageSource struct {
	next     func() (*evalrun.Item, error, bool)
	n        int
	row      []any
	err      error // an invalid item
	itemsErr error // the sequence's own error, returned as is
}

func (s *stageSource) Next() bool {
	it, err, ok := s.next()
	switch {
	case !ok:
		return false
	case err != nil:
		s.itemsErr = err
		return false
	}
	s.n++
	enc, err := dataset.Stage(s.n, it)
	if err != nil {
		s.err = err
		return false
	}
	s.row = stageRow(s.n, it, enc)
	return true
}

func (s *stageSource) Values() ([]any, error) { return s.row, nil }

func (s *stageSource) Err() error { return cmp.Or(s.itemsErr, s.err) }

// firstDuplicate returns the first staged item whose id an earlier staged
// item has, or nil.
func firstDuplicate(ctx context.Context, tx pgx.Tx) (*dataset.DuplicateIDError, error) {
	d := &dataset.DuplicateIDError{}
	err := tx.QueryRow(ctx, `SELECT b.item_id, min(a.pos), b.pos FROM import_items b
		JOIN import_items a ON a.item_id = b.item_id AND a.pos < b.pos
		WHERE b.item_id IN (SELECT item_id FROM import_items GROUP BY item_id HAVING count(*) > 1)
		GROUP BY b.pos, b.item_id ORDER BY b.pos LIMIT 1`).Scan(&d.ID, &d.First, &d.Second)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	d.ID = fromPGText(d.ID)
	return d, nil
}

// matchItems returns the staged items equal to a current row (in
// position order), how many have a current row, and how many of those
// changed. A staged item with the id of an item in place is a duplicate:
// it returns the first duplicate, this or dup.
func matchItems(ctx context.Context, tx pgx.Tx, inPlace dataset.Bitset, dup *dataset.DuplicateIDError) ([]dataset.Match, int, int, error) {
	rows, err := tx.Query(ctx, `SELECT s.pos, c.rank, c.hash = s.hash, s.item_id FROM import_items s
		JOIN import_current c ON c.item_id = s.item_id ORDER BY s.pos`)
	if err != nil {
		return nil, 0, 0, err
	}
	defer rows.Close()
	var matches []dataset.Match
	matched, changed := 0, 0
	for rows.Next() {
		var m dataset.Match
		var same bool
		var id string
		if err := rows.Scan(&m.Pos, &m.Rank, &same, &id); err != nil {
			return nil, 0, 0, err
		}
		if inPlace.Has(int(m.Rank)) {
			first, second := int(min(m.Pos, m.Rank)), int(max(m.Pos, m.Rank))
			if dup == nil || second < dup.Second {
				dup = &dataset.DuplicateIDError{ID: fromPGText(id), First: first, Second: second}
			}
			continue
		}
		matched++
		if same {
			matches = append(matches, m)
		} else {
			changed++
		}
	}
	if err := rows.Err(); err != nil {
		return nil, 0, 0, err
	}
	if dup != nil {
		return nil, 0, 0, dup
	}
	return matches, matched, changed, nil
}

// writePlan closes the rows the plan drops and copies the staged items it
// inserts with their order keys (computed here, sent by COPY).
func writePlan(ctx context.Context, tx pgx.Tx, name string, version int, plan *dataset.PositionPlan, inPlace dataset.Bitset) error {
	if len(plan.Close) > 0 {
		if _, err := tx.Exec(ctx, `UPDATE dataset_items d SET valid_to = $1 FROM import_current c
			WHERE c.rank = ANY($2) AND d.id = c.ref`, version, plan.Close); err != nil {
			return fmt.Errorf("close item rows: %w", err)
		}
	}
	if len(plan.Insert) == 0 {
		return nil
	}
	var bounds []int32
	for _, sp := range plan.Insert {
		bounds = append(bounds, sp.Lo, sp.Hi)
	}
	keys := map[int32][]byte{}
	rows, err := tx.Query(ctx, `SELECT rank, ord FROM import_current WHERE rank = ANY($1)`, bounds)
	if err != nil {
		return err
	}
	for rows.Next() {
		var rank int32
		var key []byte
		if err := rows.Scan(&rank, &key); err != nil {
			rows.Close()
			return err
		}
		keys[rank] = key
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return err
	}
	next, stop := iter.Pull2(func(yield func(int32, []byte) bool) {
		for _, sp := range plan.Insert {
			pos := sp.From
			for k := range dataset.KeysBetween(keys[sp.Lo], keys[sp.Hi], int(sp.To-sp.From+1)) {
				if !yield(pos, k) {
					return
				}
				pos++
			}
		}
	})
	defer stop()
	if _, err := tx.CopyFrom(ctx, pgx.Identifier{"import_keys"}, []string{"pos", "ord", "in_place"},
		pgx.CopyFromFunc(func() ([]any, error) {
			pos, key, ok := next()
			if !ok {
				return nil, nil
			}
			return []any{pos, key, inPlace.Has(int(pos))}, nil
		})); err != nil {
		return fmt.Errorf("copy order keys: %w", err)
	}
	// A staged item comes from import_items; an item in place that the
	// plan moves, from its current row (its rank is its position).
	if _, err := tx.Exec(ctx, `INSERT INTO dataset_items
		(dataset, item_id, valid_from, ord, hash, input, expected, metadata, tool_mocks, expected_trajectory)
		SELECT $1::text, s.item_id, $2::integer, k.ord, s.hash, s.input, s.expected, s.metadata, s.tool_mocks, s.expected_trajectory
		FROM import_keys k JOIN import_items s ON s.pos = k.pos WHERE NOT k.in_place
		UNION ALL
		SELECT $1::text, d.item_id, $2::integer, k.ord, d.hash, d.input, d.expected, d.metadata, d.tool_mocks, d.expected_trajectory
		FROM import_keys k JOIN import_current c ON c.rank = k.pos JOIN dataset_items d ON d.id = c.ref WHERE k.in_place`,
		name, version); err != nil {
		return fmt.Errorf("insert item rows: %w", err)
	}
	return nil
}

// querier is what a pool, a connection and a transaction share.
type querier interface {
	QueryRow(ctx context.Context, sql string, args ...any) pgx.Row
	Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error)
}

func getVersion(ctx context.Context, q querier, name string, version int) (*evalrun.DatasetVersion, error) {
	v := &evalrun.DatasetVersion{Dataset: name, Version: version}
	err := q.QueryRow(ctx, `SELECT created_at, item_count, added, changed, removed FROM dataset_versions
		WHERE dataset = $1 AND version = $2`, name, version).Scan(&v.CreatedAt, &v.ItemCount, &v.Added, &v.Changed, &v.Removed)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, fmt.Errorf("dataset %q version %d: %w", name, version, evalrun.ErrNotFound)
	}
	if err != nil {
		return nil, fmt.Errorf("dataset %q version %d: %w", name, version, err)
	}
	v.CreatedAt = v.CreatedAt.UTC()
	return v, nil
}

const datasetColumns = `name, latest_version, item_count, created_at, updated_at`

func scanDataset(row pgx.Row) (*evalrun.Dataset, error) {
	d := &evalrun.Dataset{}
	if err := row.Scan(&d.Name, &d.LatestVersion, &d.ItemCount, &d.CreatedAt, &d.UpdatedAt); err != nil {
		return nil, err
	}
	d.CreatedAt, d.UpdatedAt = d.CreatedAt.UTC(), d.UpdatedAt.UTC()
	return d, nil
}

// GetDataset implements [evalrun.DatasetStore].
func (s *Store) GetDataset(ctx context.Context, name string) (*evalrun.Dataset, error) {
	d, err := scanDataset(s.pool.QueryRow(ctx, `SELECT `+datasetColumns+` FROM datasets WHERE name = $1`, name))
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, fmt.Errorf("dataset %q: %w", name, evalrun.ErrNotFound)
	}
	if err != nil {
		return nil, fmt.Errorf("get dataset %q: %w", name, err)
	}
	return d, nil
}

// ListDatasets implements [evalrun.DatasetStore].
func (s *Store) ListDatasets(ctx context.Context) ([]*evalrun.Dataset, error) {
	rows, err := s.pool.Query(ctx, `SELECT `+datasetColumns+` FROM datasets ORDER BY name COLLATE "C"`)
	if err != nil {
		return nil, fmt.Errorf("list datasets: %w", err)
	}
	defer rows.Close()
	out := []*evalrun.Dataset{}
	for rows.Next() {
		d, err := scanDataset(rows)
		if err != nil {
			return nil, fmt.Errorf("list datasets: %w", err)
		}
		out = append(out, d)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("list datasets: %w", err)
	}
	return out, nil
}

// ListDatasetVersions implements [evalrun.DatasetStore].
func (s *Store) ListDatasetVersions(ctx context.Context, name string) ([]*evalrun.DatasetVersion, error) {
	rows, err := s.pool.Query(ctx, `SELECT version, created_at, item_count, added, changed, removed
		FROM dataset_versions WHERE dataset = $1 ORDER BY version`, name)
	if err != nil {
		return nil, fmt.Errorf("list versions of %q: %w", name, err)
	}
	defer rows.Close()
	var out []*evalrun.DatasetVersion
	for rows.Next() {
		v := &evalrun.DatasetVersion{Dataset: name}
		if err := rows.Scan(&v.Version, &v.CreatedAt, &v.ItemCount, &v.Added, &v.Changed, &v.Removed); err != nil {
			return nil, fmt.Errorf("list versions of %q: %w", name, err)
		}
		v.CreatedAt = v.CreatedAt.UTC()
		out = append(out, v)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("list versions of %q: %w", name, err)
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("dataset %q: %w", name, evalrun.ErrNotFound)
	}
	return out, nil
}

// resolveVersion returns version, or the latest when it is 0, checking
// that it exists.
func resolveVersion(ctx context.Context, q querier, name string, version int) (int, error) {
	var latest int
	err := q.QueryRow(ctx, `SELECT latest_version FROM datasets WHERE name = $1`, name).Scan(&latest)
	if errors.Is(err, pgx.ErrNoRows) {
		return 0, fmt.Errorf("dataset %q: %w", name, evalrun.ErrNotFound)
	}
	if err != nil {
		return 0, fmt.Errorf("dataset %q: %w", name, err)
	}
	return sqlstore.ResolveVersion(name, version, latest)
}

// ScanItems implements [evalrun.DatasetStore]: one query, streamed.
func (s *Store) ScanItems(ctx context.Context, name string, version int, fn func(*evalrun.Item) error) error {
	v, err := resolveVersion(ctx, s.pool, name, version)
	if err != nil {
		return err
	}
	rows, err := s.pool.Query(ctx, `SELECT ord, `+itemColumns+` FROM dataset_items
		WHERE dataset = $1 AND valid_from <= $2 AND (valid_to IS NULL OR valid_to > $2) ORDER BY ord`, name, v)
	if err != nil {
		return fmt.Errorf("scan items of %q version %d: %w", name, v, err)
	}
	defer rows.Close()
	for rows.Next() {
		it, _, err := scanItem(rows, name)
		if err != nil {
			return fmt.Errorf("scan items of %q version %d: %w", name, v, err)
		}
		if err := fn(it); err != nil {
			return err
		}
	}
	if err := rows.Err(); err != nil {
		return fmt.Errorf("scan items of %q version %d: %w", name, v, err)
	}
	return nil
}

// ItemsPage implements [evalrun.DatasetStore]: a keyset page on the
// (dataset, ord) index; the cursor is the last item's order key.
func (s *Store) ItemsPage(ctx context.Context, name string, version int, after []byte, limit int) ([]*evalrun.Item, []byte, error) {
	if version < 1 || limit < 1 {
		return nil, nil, fmt.Errorf("items page of %q: version %d, limit %d: both must be positive: %w", name, version, limit, evalrun.ErrInvalid)
	}
	if _, err := getVersion(ctx, s.pool, name, version); err != nil {
		return nil, nil, err
	}
	if after == nil {
		after = []byte{} // sorts before every key
	}
	rows, err := s.pool.Query(ctx, `SELECT ord, `+itemColumns+` FROM dataset_items
		WHERE dataset = $1 AND ord > $2 AND valid_from <= $3 AND (valid_to IS NULL OR valid_to > $3) ORDER BY ord LIMIT $4`,
		name, after, version, limit)
	if err != nil {
		return nil, nil, fmt.Errorf("items page of %q version %d: %w", name, version, err)
	}
	defer rows.Close()
	var out []*evalrun.Item
	var next []byte
	for rows.Next() {
		it, key, err := scanItem(rows, name)
		if err != nil {
			return nil, nil, fmt.Errorf("items page of %q version %d: %w", name, version, err)
		}
		out, next = append(out, it), key
	}
	if err := rows.Err(); err != nil {
		return nil, nil, fmt.Errorf("items page of %q version %d: %w", name, version, err)
	}
	return out, next, nil
}

// itemColumns are the columns scanItem reads after the order key.
const itemColumns = `item_id, input, expected, metadata, tool_mocks, expected_trajectory`

// scanItem reads one row of ord and itemColumns.
func scanItem(rows pgx.Rows, name string) (*evalrun.Item, []byte, error) {
	it := &evalrun.Item{}
	var key, input, expected, meta, mocks, expectedCalls []byte
	if err := rows.Scan(&key, &it.ID, &input, &expected, &meta, &mocks, &expectedCalls); err != nil {
		return nil, nil, err
	}
	it.ID = fromPGText(it.ID)
	it.Input = input
	if len(expected) > 0 {
		it.Expected = expected
	}
	var err error
	if it.Metadata, err = dataset.UnmarshalMetadata(meta); err != nil {
		return nil, nil, fmt.Errorf("item %q of %q: %w", it.ID, name, err)
	}
	if err := dataset.UnmarshalAgent(it, mocks, expectedCalls); err != nil {
		return nil, nil, fmt.Errorf("item %q of %q: %w", it.ID, name, err)
	}
	return it, key, nil
}
