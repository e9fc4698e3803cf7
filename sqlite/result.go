package sqlite

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"time"

	sqlitedrv "modernc.org/sqlite"
	sqlite3 "modernc.org/sqlite/lib"

	"github.com/evalrun/evalrun"
	"github.com/evalrun/evalrun/dataset"
	"github.com/evalrun/evalrun/internal/sqlstore"
)

const resultColumns = `run_id, idx, rep, item_id, output, error, error_kind, attempts, retry_count, latency_ns,
	input_tokens, output_tokens, cost_usd, trace_id, cache_hit, started_at, completed_at, trajectory`

const (
	resultArgs = 18
	scoreArgs  = 13
	// Rows per multi-row INSERT: SQLite allows 32766 parameters.
	resultChunk = 64
	scoreChunk  = 128
)

// valuesSQL returns "INSERT ... VALUES (?, …), (?, …)" for rows rows.
func valuesSQL(prefix string, args, rows int) string {
	one := "(" + strings.Repeat("?, ", args-1) + "?)"
	var b strings.Builder
	b.WriteString(prefix)
	for i := range rows {
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteString(one)
	}
	return b.String()
}

const (
	replaceResultPrefix = `INSERT OR REPLACE INTO results (` + resultColumns + `) VALUES `
	insertScorePrefix   = `INSERT INTO scores (run_id, idx, rep, pos, scorer, score, passed, reason, error, error_kind,
		input_tokens, output_tokens, cost_usd) VALUES `
)

var (
	replaceResultsSQL = valuesSQL(replaceResultPrefix, resultArgs, resultChunk)
	insertScoresSQL   = valuesSQL(insertScorePrefix, scoreArgs, scoreChunk)
)

// resultKey identifies a stored result.
type resultKey struct {
	run         string
	index, rept int
}

// WriteResults implements [evalrun.RunStore]: the batch is one
// transaction of multi-row inserts. A key written before (found with one
// range query per run of the batch) is replaced along with its scores; of a
// key repeated within the batch, the last result wins. It returns an error
// wrapping ErrNotFound, writing nothing, when a result's run does not exist.
//
// An error of a class that refuses every write (see refusesWrites) is
// marked [evalrun.ErrStoreUnavailable].
func (s *Store) WriteResults(ctx context.Context, results []*evalrun.ItemResult) error {
	return sqlstore.MarkUnavailable(s.writeResults(ctx, results), refusesWrites)
}

// refusesWrites reports whether err is of a class that every write will
// meet until someone acts: a full disk, a read-only file or database, an
// I/O error, a damaged file, or SQLITE_ERROR, which the store's fixed
// statements meet only when the schema is missing (a table dropped, a file
// that is not evalrun's). A locked database or a constraint is not.
func refusesWrites(err error) bool {
	var se *sqlitedrv.Error
	if !errors.As(err, &se) {
		return false
	}
	switch se.Code() & 0xff {
	case sqlite3.SQLITE_FULL, sqlite3.SQLITE_READONLY, sqlite3.SQLITE_IOERR, sqlite3.SQLITE_CORRUPT,
		sqlite3.SQLITE_NOTADB, sqlite3.SQLITE_CANTOPEN, sqlite3.SQLITE_PERM, sqlite3.SQLITE_ERROR:
		return true
	}
	return false
}

func (s *Store) writeResults(ctx context.Context, results []*evalrun.ItemResult) error {
	if len(results) == 0 {
		return nil
	}
	results = sqlstore.LastOfEachKey(results)
	var fullResults, fullScores *sql.Stmt
	if len(results) >= resultChunk {
		var err error
		if fullResults, err = s.prepareFull(ctx, &s.replaceResults, replaceResultsSQL); err != nil {
			return fmt.Errorf("write results: %w", err)
		}
	}
	scores := 0
	for _, r := range results {
		scores += len(r.Scores)
	}
	if scores >= scoreChunk {
		var err error
		if fullScores, err = s.prepareFull(ctx, &s.insertScores, insertScoresSQL); err != nil {
			return fmt.Errorf("write scores: %w", err)
		}
	}
	tx, err := s.writer.BeginTx(ctx, nil)
	if err != nil {
		return fmt.Errorf("write results: %w", err)
	}
	defer tx.Rollback()
	scorers, err := checkRuns(ctx, tx, results)
	if err != nil {
		return err
	}
	if err := deleteOldScores(ctx, tx, results, scorers); err != nil {
		return fmt.Errorf("write results: replace scores: %w", err)
	}
	args := make([]any, 0, resultChunk*resultArgs)
	for chunk := range slices.Chunk(results, resultChunk) {
		args = args[:0]
		for _, r := range chunk {
			traj, err := sqlstore.MarshalTrajectory(r.Trajectory)
			if err != nil {
				return fmt.Errorf("write result %d/%d of run %q: %w", r.Index, r.Repeat, r.RunID, err)
			}
			args = append(args, r.RunID, r.Index, r.Repeat, r.ItemID, blob(r.Output), r.Error, string(r.ErrorKind),
				r.Attempts, r.RetryCount, int64(r.Latency), nullInt(r.Usage.InputTokens), nullInt(r.Usage.OutputTokens),
				nullFloat(r.Usage.CostUSD), r.TraceID, r.CacheHit, micros(r.StartedAt), micros(r.CompletedAt), blob(traj))
		}
		if len(chunk) == resultChunk {
			_, err = tx.StmtContext(ctx, fullResults).ExecContext(ctx, args...)
		} else {
			_, err = tx.ExecContext(ctx, valuesSQL(replaceResultPrefix, resultArgs, len(chunk)), args...)
		}
		if err != nil {
			return fmt.Errorf("write results %d/%d… of run %q: %w", chunk[0].Index, chunk[0].Repeat, chunk[0].RunID, err)
		}
	}
	args = args[:0]
	rows := 0
	flush := func() error {
		if rows == 0 {
			return nil
		}
		var err error
		if rows == scoreChunk {
			_, err = tx.StmtContext(ctx, fullScores).ExecContext(ctx, args...)
		} else {
			_, err = tx.ExecContext(ctx, valuesSQL(insertScorePrefix, scoreArgs, rows), args...)
		}
		args, rows = args[:0], 0
		return err
	}
	for _, r := range results {
		for pos, sc := range r.Scores {
			args = append(args, r.RunID, r.Index, r.Repeat, pos, sc.Scorer, nullFloat(sc.Score), sc.Passed,
				sc.Reason, sc.Error, string(sc.ErrorKind), nullInt(sc.Usage.InputTokens), nullInt(sc.Usage.OutputTokens),
				nullFloat(sc.Usage.CostUSD))
			if rows++; rows == scoreChunk {
				if err := flush(); err != nil {
					return fmt.Errorf("write scores of run %q: %w", r.RunID, err)
				}
			}
		}
	}
	if err := flush(); err != nil {
		return fmt.Errorf("write scores: %w", err)
	}
	if err := writeScoreKeys(ctx, tx, results, scorers); err != nil {
		return fmt.Errorf("write score keys: %w", err)
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("write results: commit: %w", err)
	}
	return nil
}

// deleteOldScores deletes the scores (and score_keys rows) of the batch's
// keys that were written before. One range query per run finds them; a
// fresh batch deletes nothing.
func deleteOldScores(ctx context.Context, tx *sql.Tx, results []*evalrun.ItemResult, scorers map[string][]evalrun.ScorerInfo) error {
	type span struct{ lo, hi int }
	spans := map[string]*span{}
	inBatch := make(map[resultKey]bool, len(results))
	for _, r := range results {
		inBatch[resultKey{r.RunID, r.Index, r.Repeat}] = true
		if sp := spans[r.RunID]; sp == nil {
			spans[r.RunID] = &span{r.Index, r.Index}
		} else {
			sp.lo, sp.hi = min(sp.lo, r.Index), max(sp.hi, r.Index)
		}
	}
	var old []resultKey
	for run, sp := range spans {
		rows, err := tx.QueryContext(ctx, `SELECT idx, rep FROM results WHERE run_id = ? AND idx BETWEEN ? AND ?`, run, sp.lo, sp.hi)
		if err != nil {
			return err
		}
		for rows.Next() {
			k := resultKey{run: run}
			if err := rows.Scan(&k.index, &k.rept); err != nil {
				rows.Close()
				return err
			}
			if inBatch[k] {
				old = append(old, k)
			}
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return err
		}
	}
	for _, k := range old {
		if err := deleteScoreKeys(ctx, tx, k, scorers[k.run]); err != nil {
			return err
		}
		if _, err := tx.ExecContext(ctx, `DELETE FROM scores WHERE run_id = ? AND idx = ? AND rep = ?`, k.run, k.index, k.rept); err != nil {
			return err
		}
	}
	return nil
}

// checkRuns fails with ErrNotFound when a result's run does not exist; it
// returns the scorers of each run (for score_keys).
func checkRuns(ctx context.Context, tx *sql.Tx, results []*evalrun.ItemResult) (map[string][]evalrun.ScorerInfo, error) {
	last := ""
	seen := map[string][]evalrun.ScorerInfo{}
	for _, r := range results {
		if r.RunID == last {
			continue
		}
		if _, ok := seen[r.RunID]; ok {
			continue
		}
		var raw []byte
		err := tx.QueryRowContext(ctx, `SELECT scorers FROM runs WHERE id = ?`, r.RunID).Scan(&raw)
		if errors.Is(err, sql.ErrNoRows) {
			return nil, fmt.Errorf("write results: run %q: %w", r.RunID, evalrun.ErrNotFound)
		}
		if err != nil {
			return nil, fmt.Errorf("write results: %w", err)
		}
		var scorers []evalrun.ScorerInfo
		if err := json.Unmarshal(raw, &scorers); err != nil {
			return nil, fmt.Errorf("write results: scorers of run %q: %w", r.RunID, err)
		}
		last = r.RunID
		seen[r.RunID] = sqlstore.UniqueScorers(scorers)
	}
	return seen, nil
}

// scanBatch is how many results the reading goroutine of ScanResults hands
// over at a time, at most; scanAhead batches may wait, so a scan holds at
// most (scanAhead+2)·scanBatch results whatever the run's size. Batches
// start at firstBatch results and double, so that a scan stopped after a
// page (the viewer's items pages) reads little ahead.
const (
	firstBatch = 16
	scanBatch  = 256
	scanAhead  = 1
)

// Columns of the two queries of ScanResults, read through the driver.
const (
	scanResultColumns = `r.idx, r.rep, r.item_id, r.output, NULLIF(r.error, ''), NULLIF(r.error_kind, ''),
		r.attempts, r.retry_count, r.latency_ns, r.input_tokens, r.output_tokens, r.cost_usd, NULLIF(r.trace_id, ''),
		r.cache_hit, r.started_at, r.completed_at, i.id, i.input, i.expected, i.metadata`
	// scanResultColumns for ResultQuery.SkipPayloads: no output, input or
	// expected output.
	skipPayloadColumns = `r.idx, r.rep, r.item_id, NULL, NULLIF(r.error, ''), NULLIF(r.error_kind, ''),
		r.attempts, r.retry_count, r.latency_ns, r.input_tokens, r.output_tokens, r.cost_usd, NULLIF(r.trace_id, ''),
		r.cache_hit, r.started_at, r.completed_at, i.id, NULL, NULL, i.metadata`
	// The agent columns, or NULLs in their place for ResultQuery.SkipAgentData.
	scanAgentColumns = `, r.trajectory, i.tool_mocks, i.expected_trajectory`
	skipAgentColumns = `, NULL, NULL, NULL`
	nResultColumns   = 23
	// The columns of a score after its key (idx, rep).
	scanScoreValues = `s.scorer, s.score, s.passed, NULLIF(s.reason, ''), NULLIF(s.error, ''),
		NULLIF(s.error_kind, ''), s.input_tokens, s.output_tokens, s.cost_usd`
	nScoreColumns = 11
)

// rawBatch is a batch of rows read by readResults: nResultColumns values
// per result in res, nScoreColumns per score in scores, and the scores of
// result i at scores[nScoreColumns·from[i] : nScoreColumns·from[i+1]].
type rawBatch struct {
	res, scores []driver.Value
	from        []int
}

func (b *rawBatch) len() int { return len(b.res) / nResultColumns }

// ScanResults implements [evalrun.RunStore]. Two streamed queries in one
// read transaction (one snapshot, as a single query would see) are merged:
// the results joined with their items, and the run's scores, both in
// primary key order, so neither needs a sort, and a result's columns are
// read once rather than once per score. Text columns that are usually empty
// come back as NULL (one driver call instead of three). A goroutine steps
// the queries through the driver (no database/sql conversions) while this
// one converts the rows, decodes item metadata (a small cache skips
// decoding repeated values) and calls fn: fn runs on the caller's
// goroutine, and memory stays bounded (scanBatch, scanAhead).
func (s *Store) ScanResults(ctx context.Context, runID string, q evalrun.ResultQuery, fn func(*evalrun.ItemResult) error) error {
	return s.scanResults(ctx, runID, q, nil, fn)
}

// scanResults is ScanResults, of the results whose index is in indexes
// (in ascending order) when it is not nil.
func (s *Store) scanResults(ctx context.Context, runID string, q evalrun.ResultQuery, indexes []int64, fn func(*evalrun.ItemResult) error) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	batches := make(chan *rawBatch, scanAhead)
	errc := make(chan error, 1)
	var run *evalrun.Run
	ready := make(chan struct{}) // run is set
	go func() {
		defer close(batches)
		errc <- s.readResults(ctx, runID, q, indexes, func(r *evalrun.Run) { run = r; close(ready) }, func(b *rawBatch) bool {
			select {
			case batches <- b:
				return true
			case <-ctx.Done():
				return false
			}
		})
	}()
	var (
		meta  sqlstore.MetaCache
		order map[string]int
		err   error
	)
	for b := range batches {
		if err != nil {
			continue // drain until the reader stops
		}
		if order == nil {
			<-ready
			order = make(map[string]int, len(run.Scorers))
			for i, info := range run.Scorers {
				order[info.Name] = i
			}
		}
		for i := range b.len() {
			var r evalrun.ItemResult
			var m []byte
			if m, err = resultFromRow(&r, runID, b.res[i*nResultColumns:(i+1)*nResultColumns]); err == nil && r.Item != nil {
				r.Item.Metadata, err = meta.Decode(m)
			}
			if err != nil {
				err = fmt.Errorf("result %d/%d of run %q: %w", r.Index, r.Repeat, runID, err)
				break
			}
			if n := b.from[i+1] - b.from[i]; n > 0 {
				r.Scores = make([]evalrun.ScorerResult, n)
				for j := range n {
					k := (b.from[i] + j) * nScoreColumns
					if err = scoreFromRow(&r.Scores[j], b.scores[k:k+nScoreColumns]); err != nil {
						break
					}
				}
				if err != nil {
					err = fmt.Errorf("scores of result %d/%d of run %q: %w", r.Index, r.Repeat, runID, err)
					break
				}
				sqlstore.SortScores(r.Scores, order)
			}
			if err = ctx.Err(); err != nil {
				break
			}
			if err = fn(&r); err != nil {
				break
			}
		}
		if err != nil {
			cancel()
		}
	}
	if rerr := <-errc; err == nil {
		err = rerr
	}
	return err
}

// readResults reads the rows of ScanResults in one read transaction on one
// connection, giving the run to gotRun before the first batch and handing
// the rows to send in batches until send returns false (the scan stopped).
func (s *Store) readResults(ctx context.Context, runID string, q evalrun.ResultQuery, indexes []int64, gotRun func(*evalrun.Run), send func(*rawBatch) bool) (err error) {
	conn, err := s.reader.Conn(ctx)
	if err != nil {
		return fmt.Errorf("scan results of run %q: %w", runID, err)
	}
	defer conn.Close()
	if _, err := conn.ExecContext(ctx, `BEGIN`); err != nil {
		return fmt.Errorf("scan results of run %q: %w", runID, err)
	}
	defer func() {
		if _, rerr := conn.ExecContext(context.WithoutCancel(ctx), `ROLLBACK`); rerr != nil {
			// Never hand the pool a connection inside a transaction.
			_ = conn.Raw(func(any) error { return driver.ErrBadConn })
		}
	}()
	run, err := getRun(ctx, conn, runID)
	if err != nil {
		return err
	}
	version := run.DatasetVersion
	if version == 0 {
		version, _ = resolveVersion(ctx, conn, run.Dataset, 0)
	}
	gotRun(run)
	limit := -1
	if q.Limit > 0 {
		limit = q.Limit
	}
	failedOnly := 0
	if q.FailedOnly {
		failedOnly = 1
	}
	return conn.Raw(func(dc any) error {
		qc, ok := dc.(driver.QueryerContext)
		if !ok {
			return fmt.Errorf("scan results: the sqlite driver's connection (%T) cannot query", dc)
		}
		args := func(vs ...any) []driver.NamedValue {
			out := make([]driver.NamedValue, len(vs))
			for i, v := range vs {
				out[i] = driver.NamedValue{Ordinal: i + 1, Value: v}
			}
			return out
		}
		agent := scanAgentColumns
		if q.SkipAgentData || q.SkipPayloads {
			agent = skipAgentColumns
		}
		columns := scanResultColumns
		if q.SkipPayloads {
			columns = skipPayloadColumns
		}
		// Of given indexes: ?7… (the results' and the scores' queries).
		inIndexes, scoreArgs := "", args(runID, int64(q.FromIndex))
		resultArgs := args(runID, int64(q.FromIndex), int64(failedOnly), int64(limit), run.Dataset, int64(version))
		if indexes != nil {
			var ib strings.Builder
			for i, idx := range indexes {
				if i > 0 {
					ib.WriteString(", ")
				}
				fmt.Fprintf(&ib, "?%d", 7+i)
				resultArgs = append(resultArgs, driver.NamedValue{Ordinal: 7 + i, Value: idx})
			}
			scoreArgs = resultArgs // ?3 to ?6 unused, but numbered before ?7
			inIndexes = ib.String()
			if len(indexes) == 0 {
				inIndexes = "NULL"
			}
		}
		resultsWhere, scoresWhere := `r.idx >= ?2`, `s.idx >= ?2`
		if indexes != nil {
			resultsWhere, scoresWhere = `r.idx IN (`+inIndexes+`)`, `s.idx IN (`+inIndexes+`) AND ?2 = ?2`
		}
		rows, err := qc.QueryContext(ctx, `SELECT `+columns+agent+`
			FROM results r
			LEFT JOIN dataset_items i ON i.dataset = ?5 AND i.item_id = r.item_id
				AND i.valid_from <= ?6 AND (i.valid_to IS NULL OR i.valid_to > ?6)
			WHERE r.run_id = ?1 AND `+resultsWhere+` AND (?3 = 0 OR r.error != '')
			ORDER BY r.idx, r.rep LIMIT ?4`, resultArgs)
		if err != nil {
			return fmt.Errorf("scan results of run %q: %w", runID, err)
		}
		defer rows.Close()
		// The scores of a contiguous range of results are one range of the
		// scores' primary key; those of the failed results only, a lookup
		// per failed result.
		var scores driver.Rows
		if q.FailedOnly {
			// Results stay the outer loop (a LEFT JOIN keeps its order): a
			// primary key lookup of scores per failed result, and a row
			// (with no scorer) for a failed result without scores, so that
			// this query advances with the results query instead of
			// searching the rest of the run for the next score.
			scores, err = qc.QueryContext(ctx, `SELECT r.idx, r.rep, `+scanScoreValues+`
				FROM results r LEFT JOIN scores s ON s.run_id = ?1 AND s.idx = r.idx AND s.rep = r.rep
				WHERE r.run_id = ?1 AND r.idx >= ?2 AND r.error != ''
				ORDER BY r.idx, r.rep, s.pos`, args(runID, int64(q.FromIndex)))
		} else {
			scores, err = qc.QueryContext(ctx, `SELECT s.idx, s.rep, `+scanScoreValues+`
				FROM scores s WHERE s.run_id = ?1 AND `+scoresWhere+` ORDER BY s.idx, s.rep, s.pos`, scoreArgs)
		}
		if err != nil {
			return fmt.Errorf("scan scores of run %q: %w", runID, err)
		}
		defer scores.Close()
		sc := rawScores{rows: scores}
		size := firstBatch
		newBatch := func() *rawBatch {
			return &rawBatch{
				res:    make([]driver.Value, 0, size*nResultColumns),
				scores: make([]driver.Value, 0, size*max(len(run.Scorers), 1)*nScoreColumns),
				from:   append(make([]int, 0, size+1), 0),
			}
		}
		b := newBatch()
		done := ctx.Done()
		for {
			select {
			case <-done: // the scan stopped (or was canceled): read no further
				return ctx.Err()
			default:
			}
			n := len(b.res)
			b.res = b.res[:n+nResultColumns] // within the capacity of size rows
			if err := rows.Next(b.res[n:]); err == io.EOF {
				b.res = b.res[:n]
				break
			} else if err != nil {
				return fmt.Errorf("scan results of run %q: %w", runID, err)
			}
			idx, rep := asInt(b.res[n]), asInt(b.res[n+1])
			if b.scores, err = sc.appendScores(b.scores, idx, rep); err != nil {
				return fmt.Errorf("scan scores of run %q: %w", runID, err)
			}
			b.from = append(b.from, len(b.scores)/nScoreColumns)
			if b.len() == size {
				if !send(b) {
					return nil
				}
				size = min(2*size, scanBatch)
				b = newBatch()
			}
		}
		if b.len() > 0 {
			send(b)
		}
		return nil
	})
}

// rawScores walks a run's score rows in (idx, rep, pos) order alongside
// its results, in the same order.
type rawScores struct {
	rows driver.Rows
	row  []driver.Value // the row read ahead: the first of a later result
	have bool           // row holds a row
	done bool           // no rows left
}

// appendScores appends to dst the rows of the scores of result (idx, rep),
// skipping those of results before it. Results must be asked for in
// (idx, rep) order.
func (c *rawScores) appendScores(dst []driver.Value, idx, rep int64) ([]driver.Value, error) {
	for !c.done {
		if !c.have {
			if c.row == nil {
				c.row = make([]driver.Value, nScoreColumns)
			}
			if err := c.rows.Next(c.row); err == io.EOF {
				c.done = true
				break
			} else if err != nil {
				return dst, err
			}
			c.have = true
		}
		i, r := asInt(c.row[0]), asInt(c.row[1])
		if i > idx || i == idx && r > rep {
			break
		}
		if i == idx && r == rep && c.row[2] != nil { // no scorer: a result without scores
			dst = append(dst, c.row...)
		}
		c.have = false
	}
	return dst, nil
}

// resultFromRow sets r (but its scores and its item's metadata) from a row
// of the results query, returning the item's metadata, still encoded.
func resultFromRow(r *evalrun.ItemResult, runID string, v []driver.Value) (meta []byte, err error) {
	itemID, ok := v[2].(string)
	if !ok {
		return nil, fmt.Errorf("item_id is %T", v[2])
	}
	*r = evalrun.ItemResult{
		RunID: runID, Index: int(asInt(v[0])), Repeat: int(asInt(v[1])), ItemID: itemID,
		Output: asBytes(v[3]), Error: asString(v[4]), ErrorKind: evalrun.ErrorKind(asString(v[5])),
		Attempts: int(asInt(v[6])), RetryCount: int(asInt(v[7])), Latency: time.Duration(asInt(v[8])),
		Usage:   rawUsage(v[9], v[10], v[11]),
		TraceID: asString(v[12]), CacheHit: asInt(v[13]) != 0,
		StartedAt: rawMicros(v[14]), CompletedAt: rawMicros(v[15]),
	}
	if r.Trajectory, err = sqlstore.UnmarshalTrajectory(asBytes(v[20])); err != nil {
		return nil, err
	}
	if v[16] != nil {
		r.Item = &evalrun.Item{ID: itemID, Input: asBytes(v[17]), Expected: asBytes(v[18])}
		if err := dataset.UnmarshalAgent(r.Item, asBytes(v[21]), asBytes(v[22])); err != nil {
			return nil, err
		}
	}
	return asBytes(v[19]), nil
}

// scoreFromRow sets sc from a row of the scores query.
func scoreFromRow(sc *evalrun.ScorerResult, v []driver.Value) error {
	name, ok := v[2].(string)
	if !ok {
		return fmt.Errorf("scorer is %T", v[2])
	}
	*sc = evalrun.ScorerResult{
		Scorer: name, Score: asFloatPtr(v[3]), Passed: asInt(v[4]) != 0, Reason: asString(v[5]),
		Error: asString(v[6]), ErrorKind: evalrun.ErrorKind(asString(v[7])), Usage: rawUsage(v[8], v[9], v[10]),
	}
	return nil
}

// Conversions of the driver's values (int64, float64, string, []byte or
// nil for the columns read here); NULL gives the zero value.

func asInt(v driver.Value) int64 {
	switch v := v.(type) {
	case int64:
		return v
	case float64:
		return int64(v)
	case bool:
		if v {
			return 1
		}
	}
	return 0
}

func asString(v driver.Value) string {
	switch v := v.(type) {
	case string:
		return v
	case []byte:
		return string(v)
	}
	return ""
}

// asBytes returns a BLOB's bytes (the driver's own copy), nil for NULL and
// for an empty BLOB.
func asBytes(v driver.Value) []byte {
	switch v := v.(type) {
	case []byte:
		if len(v) > 0 {
			return v
		}
	case string:
		if v != "" {
			return []byte(v)
		}
	}
	return nil
}

func asFloatPtr(v driver.Value) *float64 {
	switch v := v.(type) {
	case float64:
		return &v
	case int64:
		f := float64(v)
		return &f
	}
	return nil
}

func asIntPtr(v driver.Value) *int64 {
	if v == nil {
		return nil
	}
	n := asInt(v)
	return &n
}

func rawUsage(in, out, cost driver.Value) evalrun.Usage {
	return evalrun.Usage{InputTokens: asIntPtr(in), OutputTokens: asIntPtr(out), CostUSD: asFloatPtr(cost)}
}

// rawMicros is fromMicros of a driver value.
func rawMicros(v driver.Value) time.Time {
	if v == nil {
		return time.Time{}
	}
	return time.UnixMicro(asInt(v)).UTC()
}

// ScanResultKeys implements [evalrun.RunStore].
func (s *Store) ScanResultKeys(ctx context.Context, runID string, fn func(evalrun.ResultKey) error) error {
	if _, err := getRun(ctx, s.reader, runID); err != nil {
		return err
	}
	rows, err := s.reader.QueryContext(ctx, `SELECT idx, rep, error != '' FROM results WHERE run_id = ? ORDER BY idx, rep`, runID)
	if err != nil {
		return fmt.Errorf("scan result keys of run %q: %w", runID, err)
	}
	defer rows.Close()
	for rows.Next() {
		var k evalrun.ResultKey
		if err := rows.Scan(&k.Index, &k.Repeat, &k.Failed); err != nil {
			return fmt.Errorf("scan result keys of run %q: %w", runID, err)
		}
		if err := fn(k); err != nil {
			return err
		}
	}
	if err := rows.Err(); err != nil {
		return fmt.Errorf("scan result keys of run %q: %w", runID, err)
	}
	return nil
}
