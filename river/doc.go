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
// and scorers once per run through a [Builder], loads the item, calls
// [engine.Pipeline.Process] (deadline, transient-only retries with back-off,
// parallel scorers) and writes the result, keyed by (run, index, repeat) so
// that a job executed twice never duplicates it.
//
// A job carries only the run id, the item index and the repeat: nothing
// unserializable travels, and a worker needs the same environment (secrets)
// as the suite, not the suite file.
//
// Queue retries are for infrastructure only: a job whose item was processed
// returns nil whatever the item's outcome, so the queue never retries what
// the engine's retry policy already decided. A job fails (and River retries
// it later, possibly on another worker) only when its result could not be
// written, the run could not be loaded, or the worker stopped mid-item. A
// worker killed mid-item leaves its jobs running in the queue; River's
// rescuer makes them available again after [WorkerOptions.RescueAfter].
//
// Distributed mode is PostgreSQL only; see docs/distributed.md.
package river
