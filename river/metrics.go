package river

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/prometheus/client_golang/prometheus"
)

// queueDepthTimeout bounds the count of queued jobs done at each scrape.
const queueDepthTimeout = 5 * time.Second

// workerMetrics are a worker's health and throughput for Prometheus. A nil
// *workerMetrics records nothing.
type workerMetrics struct {
	items        *prometheus.CounterVec
	jobErrors    prometheus.Counter
	inFlight     prometheus.Gauge
	lastBeat     prometheus.Gauge
	beatFailures prometheus.Counter
	reaped       prometheus.Counter
	batchSize    prometheus.Histogram
}

// register creates the worker's metrics on reg, with a collector counting
// the jobs of its queues by state at each scrape.
func registerMetrics(reg prometheus.Registerer, pool *pgxpool.Pool, workerID string, queues []string) (*workerMetrics, error) {
	labels := prometheus.Labels{"worker": workerID}
	m := &workerMetrics{
		items: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "evalrun_worker_items_total", ConstLabels: labels,
			Help: "Item executions this worker stored a result for, by outcome: succeeded, or failed (target error).",
		}, []string{"outcome"}),
		jobErrors: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "evalrun_worker_job_errors_total", ConstLabels: labels,
			Help: "Jobs that returned to the queue for an infrastructure reason (run not loaded, result not written, stop).",
		}),
		inFlight: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "evalrun_worker_items_in_flight", ConstLabels: labels,
			Help: "Item executions this worker is running now.",
		}),
		lastBeat: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "evalrun_worker_last_heartbeat_timestamp_seconds", ConstLabels: labels,
			Help: "When this worker last recorded its heartbeat (Unix time); stale past dead-after means the others run its jobs again.",
		}),
		beatFailures: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "evalrun_worker_heartbeat_failures_total", ConstLabels: labels,
			Help: "Heartbeats this worker could not record.",
		}),
		reaped: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "evalrun_worker_dead_worker_jobs_taken_total", ConstLabels: labels,
			Help: "Running jobs of dead workers this worker made available again.",
		}),
		batchSize: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name: "evalrun_worker_result_batch_size", ConstLabels: labels,
			Help:    "Results written per store call (one transaction): the results of jobs finishing together share one.",
			Buckets: prometheus.ExponentialBuckets(1, 2, 9), // 1 … 256 (maxResultBatch)
		}),
	}
	// Both outcomes are exported from the start, so rates work at once.
	m.items.WithLabelValues("succeeded")
	m.items.WithLabelValues("failed")
	for _, c := range []prometheus.Collector{m.items, m.jobErrors, m.inFlight, m.lastBeat, m.beatFailures, m.reaped, m.batchSize,
		&queueDepth{pool: pool, queues: queues}} {
		if err := reg.Register(c); err != nil {
			return nil, fmt.Errorf("worker metrics: %w", err)
		}
	}
	return m, nil
}

func (m *workerMetrics) itemStored(failed bool) {
	if m == nil {
		return
	}
	if failed {
		m.items.WithLabelValues("failed").Inc()
	} else {
		m.items.WithLabelValues("succeeded").Inc()
	}
}

// resultsWritten records a store call writing n results. It is a method
// value taken at construction, so it must accept a nil receiver.
func (m *workerMetrics) resultsWritten(n int) {
	if m != nil {
		m.batchSize.Observe(float64(n))
	}
}

func (m *workerMetrics) jobFailed() {
	if m != nil {
		m.jobErrors.Inc()
	}
}

func (m *workerMetrics) started() {
	if m != nil {
		m.inFlight.Inc()
	}
}

func (m *workerMetrics) ended() {
	if m != nil {
		m.inFlight.Dec()
	}
}

func (m *workerMetrics) beat(err error) {
	if m == nil {
		return
	}
	if err != nil {
		m.beatFailures.Inc()
		return
	}
	m.lastBeat.SetToCurrentTime()
}

func (m *workerMetrics) took(n int64) {
	if m != nil && n > 0 {
		m.reaped.Add(float64(n))
	}
}

// queueStates are the states counted as queue depth: waiting to run
// (available, scheduled, retryable, pending) or running.
var queueStates = []string{"available", "scheduled", "retryable", "pending", "running"}

// queueDepth counts the evalrun jobs of the worker's queues by state when
// scraped: the queue is shared by every worker, so this is the depth
// operators scale on, read from River's table.
type queueDepth struct {
	pool   *pgxpool.Pool
	queues []string
}

var queueDepthDesc = prometheus.NewDesc("evalrun_queue_jobs",
	"evalrun jobs in the queue by state (shared by every worker of the queue), counted at scrape time.",
	[]string{"queue", "state"}, nil)

// Describe implements prometheus.Collector.
func (q *queueDepth) Describe(ch chan<- *prometheus.Desc) { ch <- queueDepthDesc }

// Collect implements prometheus.Collector.
func (q *queueDepth) Collect(ch chan<- prometheus.Metric) {
	ctx, cancel := context.WithTimeout(context.Background(), queueDepthTimeout)
	defer cancel()
	counts := make(map[[2]string]int64)
	rows, err := q.pool.Query(ctx, `SELECT queue, state::text, count(*) FROM river_job
		WHERE kind = $1 AND queue = ANY($2) AND state::text = ANY($3) GROUP BY 1, 2`, Kind, q.queues, queueStates)
	if err == nil {
		var queue, state string
		var n int64
		_, err = pgx.ForEachRow(rows, []any{&queue, &state, &n}, func() error {
			counts[[2]string{queue, state}] = n
			return nil
		})
	}
	if err != nil {
		ch <- prometheus.NewInvalidMetric(queueDepthDesc, fmt.Errorf("count queued jobs: %w", err))
		return
	}
	for _, queue := range q.queues {
		for _, state := range queueStates {
			ch <- prometheus.MustNewConstMetric(queueDepthDesc, prometheus.GaugeValue,
				float64(counts[[2]string{queue, state}]), queue, state)
		}
	}
}
