package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/cobra"
	"golang.org/x/term"

	"github.com/evalrun/evalrun/internal/redact"
	"github.com/evalrun/evalrun/suite"
)

// DefaultDB is the storage used when neither --db nor EVALRUN_DB is set.
const DefaultDB = "sqlite:.evalrun/evalrun.db"

// State is everything the commands take from the process: standard streams,
// the environment and whether standard error is a terminal. It is the only
// place that touches os-level things, so tests run commands with buffers.
type State struct {
	Stdin          io.Reader
	Stdout, Stderr io.Writer
	// Env is the process environment as "KEY=value" strings.
	Env []string
	// Terminal is true when standard error is a terminal (progress bar).
	Terminal bool
	// CancelPoll is how often a run checks whether its stored status
	// became canceled (evalrun runs cancel from another process).
	CancelPoll time.Duration
	// ProgressEvery is how often a plain progress line is printed when
	// standard error is not a terminal.
	ProgressEvery time.Duration
	// Now is the clock of run ids and messages.
	Now func() time.Time
	// TraceFlushTimeout bounds the export of spans at exit when tracing
	// is on (OTEL_EXPORTER_OTLP_ENDPOINT); 0 means
	// DefaultTraceFlushTimeout.
	TraceFlushTimeout time.Duration

	lookup suite.Env
	// summary is what the command appends to $GITHUB_STEP_SUMMARY as it
	// ends (stepsummary.go); nil for none.
	summary *stepSummary
	// scrub is the suite's secret scrubber once scrubOutput ran; nil before.
	scrub *redact.Scrubber
	// ran is set once a command's own code starts, so that an error before
	// it is known to be a usage error (exit code 2).
	ran bool
}

// scrubOutput makes everything the command prints from now on go through
// the suite's secret scrubber (the last line of defence: errors, names and
// reports are scrubbed where they are made).
func (st *State) scrubOutput(s *suite.Suite) {
	st.Stdout, st.Stderr = s.Scrubber().Writer(st.Stdout), s.Scrubber().Writer(st.Stderr)
	st.scrub = s.Scrubber()
}

// Getenv returns the value of an environment variable, "" when unset.
func (st *State) Getenv(name string) string {
	v, _ := st.lookupEnv()(name)
	return v
}

func (st *State) lookupEnv() suite.Env {
	if st.lookup == nil {
		st.lookup = suite.EnvList(st.Env)
	}
	return st.lookup
}

// commands are the constructors of the top-level commands, in help order.
// A command file adds its own with register in an init function, so a new
// command (serve, worker) is one new file.
var commands []func(*State) *cobra.Command

// register adds a top-level command constructor.
func register(f func(*State) *cobra.Command) { commands = append(commands, f) }

// Main runs the evalrun command line with args (without the program name)
// and returns the process exit code: 0 success, 1 a run finished with
// errors or a breached threshold (or an operation failed), 2 bad usage,
// configuration or input, 130 interrupted. See [ExitCode].
func Main(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer, env []string) int {
	st := &State{Stdin: stdin, Stdout: stdout, Stderr: stderr, Env: env,
		CancelPoll: time.Second, ProgressEvery: 5 * time.Second, Now: time.Now}
	if f, ok := stderr.(*os.File); ok {
		st.Terminal = term.IsTerminal(int(f.Fd()))
	}
	return st.Main(ctx, args)
}

// Main runs the command line with st's streams and environment; see [Main].
func (st *State) Main(ctx context.Context, args []string) (code int) {
	defer func() {
		if r := recover(); r != nil {
			fmt.Fprintf(st.Stderr, "evalrun: internal error: %v\n(this is a bug: please report it with the command you ran)\n", r)
			code = 1
		}
	}()
	// Spans are flushed after everything else, the error message included.
	defer st.startTracing(ctx)()
	root := st.rootCommand()
	root.SetArgs(args)
	err := root.ExecuteContext(ctx)
	if outputGone(err) {
		// Standard output's reader went away (evalrun runs list | head -1):
		// what was asked for was read as far as it was wanted, so this is
		// not a failure, and nobody is left to tell.
		err = nil
	}
	if err != nil && errors.Is(err, context.Canceled) && errors.Is(context.Cause(ctx), ErrInterrupted) {
		// Ctrl-C before a run had started (the storage opening or
		// migrating, the dataset importing) fails that step with a bare
		// context.Canceled: it is the interruption, exit 130, not an error.
		err = &exitError{code: ExitInterrupted, err: fmt.Errorf("interrupted: %w", err)}
	}
	if err != nil && !st.ran {
		err = usageError(err)
	}
	code = ExitCode(err)
	st.flushStepSummary(code)
	var se *suite.Error
	switch {
	case err == nil, silent(err):
	case errors.As(err, &se):
		// compiler style: one "file:line:col: ..." line per problem
		fmt.Fprintln(st.Stderr, se.Error())
	default:
		msg := strings.TrimRight(err.Error(), "\n")
		fmt.Fprintf(st.Stderr, "evalrun: %s\n", msg)
	}
	if err != nil && !silent(err) {
		if code == 2 && !st.ran {
			fmt.Fprintln(st.Stderr, "Run 'evalrun --help' for usage.")
		}
	}
	return code
}

// outputGone reports whether err is only a write to standard output or
// error whose reader went away (EPIPE; cmd/evalrun ignores SIGPIPE). A
// broken pipe anywhere else (a database connection) is a real error.
func outputGone(err error) bool {
	var pe *fs.PathError
	return errors.As(err, &pe) && (pe.Path == "/dev/stdout" || pe.Path == "/dev/stderr") &&
		errors.Is(pe.Err, syscall.EPIPE)
}

// rootCommand builds the command tree.
func (st *State) rootCommand() *cobra.Command {
	root := &cobra.Command{
		Use:   "evalrun",
		Short: "Evaluate LLM applications: run a dataset against a target, score, store, report",
		Long: `evalrun runs every item of a versioned dataset against a target (a model, an
HTTP service, a local program...), grades each output with scorers, stores
everything (SQLite by default, PostgreSQL for teams) and reports, with exit
codes a CI pipeline can gate on:

  0    the run completed, no target or scorer errors, every fail_on holds
  1    it finished but with errors or a breached threshold
  2    bad usage, configuration or input (nothing was run)
  130  interrupted (partial reports written; resume with --resume RUN_ID)

Storage: --db or EVALRUN_DB, sqlite:PATH or postgres://...; default ` + DefaultDB + `.`,
		Example: `  evalrun run examples/quickstart/suite.yaml
  evalrun runs list
  evalrun report RUN_ID -o report.md`,
		SilenceErrors: true,
		SilenceUsage:  true,
		PersistentPreRun: func(*cobra.Command, []string) {
			st.ran = true
		},
	}
	root.SetIn(st.Stdin)
	root.SetOut(st.Stdout)
	root.SetErr(st.Stderr)
	root.PersistentFlags().String("db", "", "storage: sqlite:PATH or postgres://... (default: $EVALRUN_DB, else "+DefaultDB+")")
	root.SetFlagErrorFunc(func(_ *cobra.Command, err error) error { return usageError(err) })
	for _, f := range commands {
		root.AddCommand(f(st))
	}
	return root
}

// args returns a cobra argument check for exactly the named arguments,
// whose error names what is missing.
func args(names ...string) cobra.PositionalArgs {
	return func(cmd *cobra.Command, a []string) error {
		if len(a) == len(names) {
			return nil
		}
		if len(a) < len(names) {
			return usageError(fmt.Errorf("%s: missing %s (usage: %s)", cmd.CommandPath(),
				strings.Join(names[len(a):], " "), cmd.UseLine()))
		}
		return usageError(fmt.Errorf("%s: too many arguments: %q (usage: %s)", cmd.CommandPath(),
			a[len(names):], cmd.UseLine()))
	}
}
