package sqlite

import (
	"bytes"
	"context"
	"database/sql"
	"encoding/hex"
	"errors"
	"fmt"
	"iter"
	"strings"
	"time"

	"github.com/evalrun/evalrun"
	"github.com/evalrun/evalrun/dataset"
	"github.com/evalrun/evalrun/internal/sqlstore"
)

// ImportDataset implements [evalrun.DatasetStore]: [Store.ImportItems]
// over the slice.
func (s *Store) ImportDataset(ctx context.Context, name string, items []*evalrun.Item) (evalrun.DatasetVersion, bool, error) {
	return s.ImportItems(ctx, name, dataset.Items(items))
}

// ImportItems implements [evalrun.DatasetStore]. In one transaction it
// walks the latest version's rows in order alongside the items: an item
// equal to the row of its position (the usual case of a re-import) costs
// a bit; any other is staged in a temporary table (SQLite spills it to a
// temporary file: memory stays flat). Unless every item was in place, it
// then compares the staged items with the latest version in SQL, plans
// the version with [dataset.PlanPositions] and writes the plan: only
// changed, added and moved items get rows.
func (s *Store) ImportItems(ctx context.Context, name string, items iter.Seq2[*evalrun.Item, error]) (evalrun.DatasetVersion, bool, error) {
	var zero evalrun.DatasetVersion
	if err := dataset.CheckName(name); err != nil {
		return zero, false, fmt.Errorf("import dataset: %w", err)
	}
	fail := func(err error) (evalrun.DatasetVersion, bool, error) {
		return zero, false, fmt.Errorf("import dataset %q: %w", name, err)
	}
	tx, err := s.writer.BeginTx(ctx, nil)
	if err != nil {
		return fail(err)
	}
	defer tx.Rollback()
	// A temporary table outlives a transaction on its connection: drop
	// what a failed import left (a rollback also undoes its creation).
	if _, err := tx.ExecContext(ctx, dropStaging+stagingSchema); err != nil {
		return fail(err)
	}

	latest := 0
	err = tx.QueryRowContext(ctx, `SELECT latest_version FROM datasets WHERE name = ?`, name).Scan(&latest)
	if err != nil && !errors.Is(err, sql.ErrNoRows) {
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
	if _, err := tx.ExecContext(ctx, `CREATE INDEX temp.import_items_id ON import_items (item_id);
		INSERT INTO temp.import_current (rank, ref, item_id, hash, ord)
		SELECT row_number() OVER (ORDER BY ord), id, item_id, hash, ord FROM dataset_items
		WHERE dataset = ? AND valid_to IS NULL`, name); err != nil {
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

	now := time.Now().UTC()
	v := evalrun.DatasetVersion{
		Dataset: name, Version: latest + 1, CreatedAt: now.Truncate(time.Microsecond), ItemCount: n,
		Added: n - matched, Changed: changed, Removed: cur - matched,
	}
	if latest == 0 {
		_, err = tx.ExecContext(ctx, `INSERT INTO datasets (name, latest_version, item_count, created_at, updated_at) VALUES (?, ?, ?, ?, ?)`,
			name, v.Version, v.ItemCount, now.UnixMicro(), now.UnixMicro())
	} else {
		_, err = tx.ExecContext(ctx, `UPDATE datasets SET latest_version = ?, item_count = ?, updated_at = ? WHERE name = ?`,
			v.Version, v.ItemCount, now.UnixMicro(), name)
	}
	if err != nil {
		return fail(err)
	}
	if _, err := tx.ExecContext(ctx, `INSERT INTO dataset_versions (dataset, version, created_at, item_count, added, changed, removed)
		VALUES (?, ?, ?, ?, ?, ?, ?)`, name, v.Version, now.UnixMicro(), v.ItemCount, v.Added, v.Changed, v.Removed); err != nil {
		return fail(err)
	}
	if err := writePlan(ctx, tx, name, v.Version, plan, st.inPlace); err != nil {
		return fail(err)
	}
	if _, err := tx.ExecContext(ctx, dropStaging); err != nil {
		return fail(err)
	}
	if err := tx.Commit(); err != nil {
		return fail(fmt.Errorf("commit: %w", err))
	}
	return v, true, nil
}

// The staging tables of an import: the new items not in place by 1-based
// position, and the latest version's rows by 1-based rank in its order.
const (
	stagingSchema = `
CREATE TEMP TABLE import_items (
	pos                 INTEGER PRIMARY KEY,
	item_id             TEXT NOT NULL,
	hash                BLOB NOT NULL,
	input               BLOB NOT NULL,
	expected            BLOB,
	metadata            BLOB,
	tool_mocks          BLOB,
	expected_trajectory BLOB
);
CREATE TEMP TABLE import_current (
	rank    INTEGER PRIMARY KEY,
	ref     INTEGER NOT NULL,
	item_id TEXT NOT NULL UNIQUE,
	hash    BLOB NOT NULL,
	ord     BLOB NOT NULL
);`
	dropStaging = `DROP TABLE IF EXISTS temp.import_items; DROP TABLE IF EXISTS temp.import_current;`
)

// itemsError carries an error of the items' sequence, returned as is.
type itemsError struct{ err error }

func (e *itemsError) Error() string { return e.err.Error() }

// staged is what stageItems learnt.
type staged struct {
	n, cur       int            // items, rows of the latest version
	inPlace      dataset.Bitset // positions of the items equal to the row of that rank
	inPlaceCount int
}

// stageItems reads the items and the latest version's rows in order side
// by side: an item equal to the row of its rank is only marked in place;
// any other is written into import_items.
func stageItems(ctx context.Context, tx *sql.Tx, name string, items iter.Seq2[*evalrun.Item, error]) (*staged, error) {
	rows, err := tx.QueryContext(ctx, `SELECT item_id, hash FROM dataset_items
		WHERE dataset = ? AND valid_to IS NULL ORDER BY ord`, name)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	st := &staged{}
	curRow := func() (string, []byte, bool, error) {
		if !rows.Next() {
			return "", nil, false, rows.Err()
		}
		var id string
		var hash []byte
		st.cur++
		return id, hash, true, rows.Scan(&id, &hash)
	}
	b := &stageBatch{tx: tx}
	defer b.close()
	for it, err := range items {
		if err != nil {
			return nil, &itemsError{err}
		}
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		st.n++
		enc, err := dataset.Stage(st.n, it)
		if err != nil {
			return nil, err
		}
		id, hash, ok, err := curRow()
		if err != nil {
			return nil, err
		}
		if ok && id == it.ID && bytes.Equal(hash, enc.Hash) {
			st.inPlace.Set(st.n)
			st.inPlaceCount++
			continue
		}
		if err := b.add(ctx, st.n, it, enc); err != nil {
			return nil, err
		}
	}
	if err := b.flush(ctx); err != nil {
		return nil, err
	}
	for {
		_, _, ok, err := curRow()
		if err != nil {
			return nil, err
		}
		if !ok {
			return st, nil
		}
	}
}

// stageBatch writes staged items into import_items several rows per
// statement: one INSERT per item was a third of a fresh 1,000-item
// import. A batch holds at most stageRows items and about stageBytes of
// their data, so memory stays flat whatever the file.
type stageBatch struct {
	tx    *sql.Tx
	full  *sql.Stmt // the INSERT of stageRows rows, prepared when first needed
	args  []any
	rows  int
	bytes int
	first string // the batch's first item id, for errors
}

const (
	stageRows  = 64
	stageBytes = 1 << 20
	stageCols  = 8
)

// stageSQL is the INSERT of n rows into import_items.
func stageSQL(n int) string {
	var b strings.Builder
	b.WriteString(`INSERT INTO temp.import_items (pos, item_id, hash, input, expected, metadata, tool_mocks, expected_trajectory) VALUES `)
	for i := range n {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString("(?,?,?,?,?,?,?,?)")
	}
	return b.String()
}

// add appends the item at pos to the batch, writing the batch when full.
// The item's bytes are copied: the caller may reuse them.
func (b *stageBatch) add(ctx context.Context, pos int, it *evalrun.Item, enc dataset.StagedItem) error {
	if b.rows == 0 {
		b.first = it.ID
	}
	b.args = append(b.args, pos, it.ID, enc.Hash, bytes.Clone([]byte(it.Input)), blob(bytes.Clone(it.Expected)),
		blob(enc.Metadata), blob(enc.ToolMocks), blob(enc.ExpectedTrajectory))
	b.rows++
	b.bytes += len(it.ID) + len(it.Input) + len(it.Expected) + len(enc.Metadata) + len(enc.ToolMocks) + len(enc.ExpectedTrajectory)
	if b.rows == stageRows || b.bytes >= stageBytes {
		return b.flush(ctx)
	}
	return nil
}

// flush writes the batch's rows.
func (b *stageBatch) flush(ctx context.Context) error {
	if b.rows == 0 {
		return nil
	}
	var err error
	if b.rows == stageRows {
		if b.full == nil {
			b.full, err = b.tx.PrepareContext(ctx, stageSQL(stageRows))
		}
		if err == nil {
			_, err = b.full.ExecContext(ctx, b.args...)
		}
	} else {
		_, err = b.tx.ExecContext(ctx, stageSQL(b.rows), b.args...)
	}
	if err != nil {
		return fmt.Errorf("stage %d items from %q: %w", b.rows, b.first, err)
	}
	clear(b.args)
	b.args, b.rows, b.bytes = b.args[:0], 0, 0
	return nil
}

func (b *stageBatch) close() {
	if b.full != nil {
		b.full.Close()
	}
}

// firstDuplicate returns the first staged item whose id an earlier staged
// item has, or nil.
func firstDuplicate(ctx context.Context, tx *sql.Tx) (*dataset.DuplicateIDError, error) {
	d := &dataset.DuplicateIDError{}
	err := tx.QueryRowContext(ctx, `SELECT b.item_id, min(a.pos), b.pos FROM temp.import_items b
		JOIN temp.import_items a ON a.item_id = b.item_id AND a.pos < b.pos
		WHERE b.item_id IN (SELECT item_id FROM temp.import_items GROUP BY item_id HAVING count(*) > 1)
		GROUP BY b.pos ORDER BY b.pos LIMIT 1`).Scan(&d.ID, &d.First, &d.Second)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	return d, nil
}

// matchItems returns the staged items equal to a current row (in
// position order), how many have a current row, and how many of those
// changed. A staged item with the id of an item in place is a duplicate:
// it returns the first duplicate, this or dup.
func matchItems(ctx context.Context, tx *sql.Tx, inPlace dataset.Bitset, dup *dataset.DuplicateIDError) ([]dataset.Match, int, int, error) {
	rows, err := tx.QueryContext(ctx, `SELECT s.pos, c.rank, c.hash = s.hash, s.item_id FROM temp.import_items s
		JOIN temp.import_current c ON c.item_id = s.item_id ORDER BY s.pos`)
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
				dup = &dataset.DuplicateIDError{ID: id, First: first, Second: second}
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

// writePlan closes the rows the plan drops and inserts the items it
// inserts, with their order keys: a staged item from import_items, an
// item in place (a row the plan moves) from its current row.
func writePlan(ctx context.Context, tx *sql.Tx, name string, version int, plan *dataset.PositionPlan, inPlace dataset.Bitset) error {
	if len(plan.Close) > 0 {
		stmt, err := tx.PrepareContext(ctx, `UPDATE dataset_items SET valid_to = ?
			WHERE id = (SELECT ref FROM temp.import_current WHERE rank = ?)`)
		if err != nil {
			return err
		}
		defer stmt.Close()
		for _, rank := range plan.Close {
			if _, err := stmt.ExecContext(ctx, version, rank); err != nil {
				return fmt.Errorf("close item row: %w", err)
			}
		}
	}
	if len(plan.Insert) == 0 {
		return nil
	}
	keyOf, err := tx.PrepareContext(ctx, `SELECT ord FROM temp.import_current WHERE rank = ?`)
	if err != nil {
		return err
	}
	defer keyOf.Close()
	key := func(rank int32) ([]byte, error) {
		if rank == 0 {
			return nil, nil
		}
		var k []byte
		return k, keyOf.QueryRowContext(ctx, rank).Scan(&k)
	}
	const columns = `item_id, hash, input, expected, metadata, tool_mocks, expected_trajectory`
	// Rows go in batches of up to insertBatch consecutive positions of one
	// kind (staged, or in place): one statement per batch, its order keys
	// a JSON array of hex strings, instead of one statement per row, which
	// cost most of a fresh 1,000-item import (statement setup, cursors on
	// the temporary tables). A batch holds insertBatch keys: memory stays
	// flat.
	insertStaged, err := tx.PrepareContext(ctx, `INSERT INTO dataset_items (dataset, valid_from, ord, `+columns+`)
		SELECT ?1, ?2, unhex(k.value), `+prefixed("s.", columns)+` FROM json_each(?3) k
		JOIN temp.import_items s ON s.pos = ?4 + k.key ORDER BY k.key`)
	if err != nil {
		return err
	}
	defer insertStaged.Close()
	insertInPlace, err := tx.PrepareContext(ctx, `INSERT INTO dataset_items (dataset, valid_from, ord, `+columns+`)
		SELECT ?1, ?2, unhex(k.value), `+prefixed("d.", columns)+` FROM json_each(?3) k
		JOIN temp.import_current c ON c.rank = ?4 + k.key
		JOIN dataset_items d ON d.id = c.ref ORDER BY k.key`)
	if err != nil {
		return err
	}
	defer insertInPlace.Close()
	var keys []byte // the batch's keys: ["hex", ...]
	var first, count int32
	var staged bool
	flush := func() error {
		if count == 0 {
			return nil
		}
		keys = append(keys, ']')
		stmt := insertStaged
		if !staged {
			stmt = insertInPlace // its rank is its position
		}
		res, err := stmt.ExecContext(ctx, name, version, string(keys), first)
		if err == nil {
			var n int64
			if n, err = res.RowsAffected(); err == nil && n != int64(count) {
				err = fmt.Errorf("%d of %d rows from position %d", n, count, first)
			}
		}
		if err != nil {
			return fmt.Errorf("insert item rows: %w", err)
		}
		keys, count = keys[:0], 0
		return nil
	}
	for _, sp := range plan.Insert {
		lo, err := key(sp.Lo)
		if err != nil {
			return err
		}
		hi, err := key(sp.Hi)
		if err != nil {
			return err
		}
		pos := sp.From
		for k := range dataset.KeysBetween(lo, hi, int(sp.To-sp.From+1)) {
			isStaged := !inPlace.Has(int(pos))
			if count > 0 && (count == insertBatch || isStaged != staged || pos != first+count) {
				if err := flush(); err != nil {
					return err
				}
			}
			if count == 0 {
				first, staged = pos, isStaged
				keys = append(keys, '[')
			} else {
				keys = append(keys, ',')
			}
			keys = append(keys, '"')
			keys = hex.AppendEncode(keys, k)
			keys = append(keys, '"')
			count++
			pos++
		}
	}
	return flush()
}

// prefixed qualifies every column of the comma-separated list with p.
func prefixed(p, columns string) string {
	return p + strings.ReplaceAll(columns, ", ", ", "+p)
}

// insertBatch is the most item rows writePlan inserts in one statement.
const insertBatch = 256

type querier interface {
	QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row
	QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error)
}

func getVersion(ctx context.Context, q querier, name string, version int) (*evalrun.DatasetVersion, error) {
	v := &evalrun.DatasetVersion{Dataset: name, Version: version}
	var created int64
	err := q.QueryRowContext(ctx, `SELECT created_at, item_count, added, changed, removed FROM dataset_versions
		WHERE dataset = ? AND version = ?`, name, version).Scan(&created, &v.ItemCount, &v.Added, &v.Changed, &v.Removed)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, fmt.Errorf("dataset %q version %d: %w", name, version, evalrun.ErrNotFound)
	}
	if err != nil {
		return nil, fmt.Errorf("dataset %q version %d: %w", name, version, err)
	}
	v.CreatedAt = time.UnixMicro(created).UTC()
	return v, nil
}

const datasetColumns = `name, latest_version, item_count, created_at, updated_at`

func scanDataset(sc interface{ Scan(...any) error }) (*evalrun.Dataset, error) {
	d := &evalrun.Dataset{}
	var created, updated int64
	if err := sc.Scan(&d.Name, &d.LatestVersion, &d.ItemCount, &created, &updated); err != nil {
		return nil, err
	}
	d.CreatedAt = time.UnixMicro(created).UTC()
	d.UpdatedAt = time.UnixMicro(updated).UTC()
	return d, nil
}

// GetDataset implements [evalrun.DatasetStore].
func (s *Store) GetDataset(ctx context.Context, name string) (*evalrun.Dataset, error) {
	d, err := scanDataset(s.reader.QueryRowContext(ctx, `SELECT `+datasetColumns+` FROM datasets WHERE name = ?`, name))
	if errors.Is(err, sql.ErrNoRows) {
		return nil, fmt.Errorf("dataset %q: %w", name, evalrun.ErrNotFound)
	}
	if err != nil {
		return nil, fmt.Errorf("get dataset %q: %w", name, err)
	}
	return d, nil
}

// ListDatasets implements [evalrun.DatasetStore].
func (s *Store) ListDatasets(ctx context.Context) ([]*evalrun.Dataset, error) {
	rows, err := s.reader.QueryContext(ctx, `SELECT `+datasetColumns+` FROM datasets ORDER BY name`)
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
	rows, err := s.reader.QueryContext(ctx, `SELECT version, created_at, item_count, added, changed, removed
		FROM dataset_versions WHERE dataset = ? ORDER BY version`, name)
	if err != nil {
		return nil, fmt.Errorf("list versions of %q: %w", name, err)
	}
	defer rows.Close()
	var out []*evalrun.DatasetVersion
	for rows.Next() {
		v := &evalrun.DatasetVersion{Dataset: name}
		var created int64
		if err := rows.Scan(&v.Version, &created, &v.ItemCount, &v.Added, &v.Changed, &v.Removed); err != nil {
			return nil, fmt.Errorf("list versions of %q: %w", name, err)
		}
		v.CreatedAt = time.UnixMicro(created).UTC()
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
	err := q.QueryRowContext(ctx, `SELECT latest_version FROM datasets WHERE name = ?`, name).Scan(&latest)
	if errors.Is(err, sql.ErrNoRows) {
		return 0, fmt.Errorf("dataset %q: %w", name, evalrun.ErrNotFound)
	}
	if err != nil {
		return 0, fmt.Errorf("dataset %q: %w", name, err)
	}
	return sqlstore.ResolveVersion(name, version, latest)
}

// ScanItems implements [evalrun.DatasetStore]: one query, streamed.
func (s *Store) ScanItems(ctx context.Context, name string, version int, fn func(*evalrun.Item) error) error {
	v, err := resolveVersion(ctx, s.reader, name, version)
	if err != nil {
		return err
	}
	rows, err := s.reader.QueryContext(ctx, `SELECT ord, `+itemColumns+` FROM dataset_items
		WHERE dataset = ? AND valid_from <= ? AND (valid_to IS NULL OR valid_to > ?) ORDER BY ord`, name, v, v)
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
	if _, err := getVersion(ctx, s.reader, name, version); err != nil {
		return nil, nil, err
	}
	if after == nil {
		after = []byte{} // sorts before every key
	}
	rows, err := s.reader.QueryContext(ctx, `SELECT ord, `+itemColumns+` FROM dataset_items
		WHERE dataset = ? AND ord > ? AND valid_from <= ? AND (valid_to IS NULL OR valid_to > ?) ORDER BY ord LIMIT ?`,
		name, after, version, version, limit)
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
func scanItem(rows *sql.Rows, name string) (*evalrun.Item, []byte, error) {
	it := &evalrun.Item{}
	var key, expected, meta, mocks, expectedCalls []byte
	if err := rows.Scan(&key, &it.ID, (*[]byte)(&it.Input), &expected, &meta, &mocks, &expectedCalls); err != nil {
		return nil, nil, err
	}
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
