package postgres

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/evalrun/evalrun"
	"github.com/evalrun/evalrun/dataset"
	"github.com/evalrun/evalrun/internal/sqlstore"
	"github.com/jackc/pgx/v5"
)

// ImportDataset implements [evalrun.DatasetStore]. It plans the version
// with [dataset.PlanVersion] against the latest version's rows and writes
// the plan in one transaction (new rows by COPY), holding an advisory lock
// on the dataset's name so that concurrent imports take turns.
func (s *Store) ImportDataset(ctx context.Context, name string, items []*evalrun.Item) (evalrun.DatasetVersion, bool, error) {
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
	current, err := currentRows(ctx, tx, name)
	if err != nil {
		return fail(err)
	}
	plan, err := dataset.PlanVersion(latest > 0, current, items)
	if err != nil {
		return fail(err)
	}
	if plan.Unchanged {
		v, err := getVersion(ctx, tx, name, latest)
		if err != nil {
			return fail(err)
		}
		return *v, false, nil
	}

	now := time.Now().UTC().Truncate(time.Microsecond)
	v := evalrun.DatasetVersion{
		Dataset: name, Version: latest + 1, CreatedAt: now, ItemCount: len(items),
		Added: plan.Added, Changed: plan.Changed, Removed: plan.Removed,
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
	if len(plan.Close) > 0 {
		refs := make([]int64, len(plan.Close))
		for i, r := range plan.Close {
			refs[i] = r.Ref
		}
		if _, err := tx.Exec(ctx, `UPDATE dataset_items SET valid_to = $1 WHERE id = ANY($2)`, v.Version, refs); err != nil {
			return fail(err)
		}
	}
	var rowErr error
	_, err = tx.CopyFrom(ctx, pgx.Identifier{"dataset_items"},
		[]string{"dataset", "item_id", "valid_from", "ord", "hash", "input", "expected", "metadata", "tool_mocks", "expected_trajectory"},
		pgx.CopyFromSlice(len(plan.Insert), func(i int) ([]any, error) {
			r := plan.Insert[i]
			meta, err := dataset.MarshalMetadata(r.Item.Metadata)
			if err != nil {
				rowErr = fmt.Errorf("item %q: %w", r.Item.ID, err)
				return nil, rowErr
			}
			mocks, expected, err := dataset.MarshalAgent(r.Item)
			if err != nil {
				rowErr = fmt.Errorf("item %q: %w", r.Item.ID, err)
				return nil, rowErr
			}
			return []any{name, pgText(r.Item.ID), v.Version, r.Key, r.Hash, []byte(r.Item.Input), blob(r.Item.Expected), blob(meta),
				blob(mocks), blob(expected)}, nil
		}))
	if rowErr != nil {
		return fail(rowErr)
	}
	if err != nil {
		return fail(fmt.Errorf("copy items: %w", err))
	}
	if err := tx.Commit(ctx); err != nil {
		return fail(fmt.Errorf("commit: %w", err))
	}
	return v, true, nil
}

func currentRows(ctx context.Context, tx pgx.Tx, name string) ([]dataset.Row, error) {
	rows, err := tx.Query(ctx, `SELECT id, item_id, ord, hash FROM dataset_items
		WHERE dataset = $1 AND valid_to IS NULL ORDER BY ord`, name)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []dataset.Row
	for rows.Next() {
		var r dataset.Row
		if err := rows.Scan(&r.Ref, &r.ID, &r.Key, &r.Hash); err != nil {
			return nil, err
		}
		r.ID = fromPGText(r.ID)
		out = append(out, r)
	}
	return out, rows.Err()
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
