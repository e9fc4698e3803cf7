// Package river is evalrun's distributed mode: a run's items become jobs
// in River (github.com/riverqueue/river), a job queue in the run's own
// PostgreSQL database, and any number of worker processes on any number of
// machines execute them with the engine's item pipeline.
//
// A [Coordinator] enqueues one job per (item index, repeat) in the same
// transaction as the run record ([Coordinator.Enqueue]), waits for every
// execution to have a stored result while reporting progress
// ([Coordinator.Wait]), finalizes the run record with the same rules as a
// local run, and cancels runs ([Coordinator.Cancel]). A [Worker] runs a River
// client: for each job it loads the run record, rebuilds the run's target
// and scorers once per run through a [Builder], takes the job's item from
// the run's [ItemIndex] (a bounded page cache, not the dataset), calls
// [engine.Pipeline.Process] (deadline, transient-only retries with back-off,
// parallel scorers) and writes the result, keyed by (run, index, repeat) so
// that a job executed twice never duplicates it. The results of jobs
// finishing together are written in one store call (group commit), and a
// job returns, so that River records it completed, only once its result is
// stored; jobs starting together share the read of their run's status.
//
// A job carries only the run id, the item index and the repeat: nothing
// unserializable travels, and a worker needs the same environment (secrets)
// as the suite, not the suite file.
//
// Queue retries are for infrastructure only: a job whose item was processed
// returns nil whatever the item's outcome, so the queue never retries what
// the engine's retry policy already decided. A job fails (and River retries
// it later, possibly on another worker) only when its result could not be
// written, the run could not be loaded, or the worker stopped mid-item.
//
// Liveness is by heartbeat, not by job age: every worker records a
// heartbeat (the database's now()) every [WorkerOptions.HeartbeatInterval]
// and makes the running jobs of workers silent for longer than their
// [WorkerOptions.DeadAfter] available again, with the state change River's
// rescuer makes. River's job timeout is off for these jobs, so its
// age-based rescuer never takes them: a live worker's slow item is never
// taken from it, and a killed worker's items run again within DeadAfter +
// HeartbeatInterval + the fetch poll interval (24 s by default), whatever
// item_timeout is. Workers export Prometheus metrics through
// [WorkerOptions.Metrics]. See docs/distributed.md.
//
// Distributed mode is PostgreSQL only; see docs/distributed.md.
package river
