package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"github.com/evalrun/evalrun"
	"github.com/evalrun/evalrun/dataset"
	"github.com/evalrun/evalrun/internal/sqlstore"
)

// ImportDataset implements [evalrun.DatasetStore]. It plans the version
// with [dataset.PlanVersion] against the latest version's rows and writes
// the plan in one transaction.
func (s *Store) ImportDataset(ctx context.Context, name string, items []*evalrun.Item) (evalrun.DatasetVersion, bool, error) {
	var zero evalrun.DatasetVersion
	if err := dataset.CheckName(name); err != nil {
		return zero, false, fmt.Errorf("import dataset: %w", err)
	}
	tx, err := s.writer.BeginTx(ctx, nil)
	if err != nil {
		return zero, false, fmt.Errorf("import dataset %q: %w", name, err)
	}
	defer tx.Rollback()

	latest := 0
	err = tx.QueryRowContext(ctx, `SELECT latest_version FROM datasets WHERE name = ?`, name).Scan(&latest)
	if err != nil && !errors.Is(err, sql.ErrNoRows) {
		return zero, false, fmt.Errorf("import dataset %q: %w", name, err)
	}
	current, err := currentRows(ctx, tx, name)
	if err != nil {
		return zero, false, fmt.Errorf("import dataset %q: %w", name, err)
	}
	plan, err := dataset.PlanVersion(latest > 0, current, items)
	if err != nil {
		return zero, false, fmt.Errorf("import dataset %q: %w", name, err)
	}
	if plan.Unchanged {
		v, err := getVersion(ctx, tx, name, latest)
		if err != nil {
			return zero, false, fmt.Errorf("import dataset %q: %w", name, err)
		}
		return *v, false, nil
	}

	now := time.Now().UTC()
	v := evalrun.DatasetVersion{
		Dataset: name, Version: latest + 1, CreatedAt: now.Truncate(time.Microsecond), ItemCount: len(items),
		Added: plan.Added, Changed: plan.Changed, Removed: plan.Removed,
	}
	if latest == 0 {
		_, err = tx.ExecContext(ctx, `INSERT INTO datasets (name, latest_version, item_count, created_at, updated_at) VALUES (?, ?, ?, ?, ?)`,
			name, v.Version, v.ItemCount, now.UnixMicro(), now.UnixMicro())
	} else {
		_, err = tx.ExecContext(ctx, `UPDATE datasets SET latest_version = ?, item_count = ?, updated_at = ? WHERE name = ?`,
			v.Version, v.ItemCount, now.UnixMicro(), name)
	}
	if err != nil {
		return zero, false, fmt.Errorf("import dataset %q: %w", name, err)
	}
	if _, err := tx.ExecContext(ctx, `INSERT INTO dataset_versions (dataset, version, created_at, item_count, added, changed, removed)
		VALUES (?, ?, ?, ?, ?, ?, ?)`, name, v.Version, now.UnixMicro(), v.ItemCount, v.Added, v.Changed, v.Removed); err != nil {
		return zero, false, fmt.Errorf("import dataset %q: %w", name, err)
	}
	if err := writeRows(ctx, tx, name, v.Version, plan); err != nil {
		return zero, false, fmt.Errorf("import dataset %q: %w", name, err)
	}
	if err := tx.Commit(); err != nil {
		return zero, false, fmt.Errorf("import dataset %q: commit: %w", name, err)
	}
	return v, true, nil
}

func currentRows(ctx context.Context, tx *sql.Tx, name string) ([]dataset.Row, error) {
	rows, err := tx.QueryContext(ctx, `SELECT id, item_id, ord, hash FROM dataset_items
		WHERE dataset = ? AND valid_to IS NULL ORDER BY ord`, name)
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
		out = append(out, r)
	}
	return out, rows.Err()
}

func writeRows(ctx context.Context, tx *sql.Tx, name string, version int, plan *dataset.VersionPlan) error {
	if len(plan.Close) > 0 {
		stmt, err := tx.PrepareContext(ctx, `UPDATE dataset_items SET valid_to = ? WHERE id = ?`)
		if err != nil {
			return err
		}
		defer stmt.Close()
		for _, r := range plan.Close {
			if _, err := stmt.ExecContext(ctx, version, r.Ref); err != nil {
				return fmt.Errorf("close item %q: %w", r.ID, err)
			}
		}
	}
	if len(plan.Insert) == 0 {
		return nil
	}
	stmt, err := tx.PrepareContext(ctx, `INSERT INTO dataset_items
		(dataset, item_id, valid_from, ord, hash, input, expected, metadata, tool_mocks, expected_trajectory)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`)
	if err != nil {
		return err
	}
	defer stmt.Close()
	for _, r := range plan.Insert {
		meta, err := dataset.MarshalMetadata(r.Item.Metadata)
		if err != nil {
			return fmt.Errorf("item %q: %w", r.Item.ID, err)
		}
		mocks, expected, err := dataset.MarshalAgent(r.Item)
		if err != nil {
			return fmt.Errorf("item %q: %w", r.Item.ID, err)
		}
		if _, err := stmt.ExecContext(ctx, name, r.Item.ID, version, r.Key, r.Hash,
			[]byte(r.Item.Input), blob(r.Item.Expected), blob(meta), blob(mocks), blob(expected)); err != nil {
			return fmt.Errorf("insert item %q: %w", r.Item.ID, err)
		}
	}
	return nil
}

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
