// Package cli is the evalrun command line (cobra): run, dataset, runs,
// report, compare and version. [Main] is its entry point; it returns the
// process exit code (see [ExitCode] and docs/cli.md). Only this package
// touches the process (streams, environment, terminal detection), through
// [State], so tests run commands with buffers.
//
// A command lives in its own file and registers its constructor from init
// (register(newXCmd)), so adding serve or worker is one new file.
package cli
