package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"syscall"

	"github.com/spf13/cobra"

	"github.com/evalrun/evalrun"
	"github.com/evalrun/evalrun/report"
)

// reportFile is a report to write to a file.
type reportFile struct {
	path   string
	format report.Format
}

// reportTargets returns the format of standard output (--format, default the
// table) and the format of every -o file: its extension's, else --format.
func reportTargets(format string, paths []string) (report.Format, []reportFile, error) {
	stdout := report.FormatTable
	if format != "" {
		f, err := report.ParseFormat(format)
		if err != nil {
			return "", nil, fmt.Errorf("--format: %w", err)
		}
		stdout = f
	}
	files := make([]reportFile, 0, len(paths))
	for _, p := range paths {
		f, ok := report.FormatForPath(p)
		switch {
		case ok:
		case format != "":
			f = stdout
		default:
			return "", nil, invalidf("-o %s: cannot tell the format from the extension (use .json, .md, .xml, .html or .txt, or give --format)", p)
		}
		files = append(files, reportFile{path: p, format: f})
	}
	return stdout, files, nil
}

// writeReports writes rep to standard output and to every file. When src
// is not nil, rep was built without its item rows ([report.WithoutItems])
// and the formats that list them (JSON, JUnit, HTML) stream them from src
// while writing, so that memory does not grow with the run; the output is
// the same. The HTML report shows failOn, the run's fail_on gates, with
// their verdicts. It writes every file it can and returns the errors of
// the others.
func (st *State) writeReports(ctx context.Context, rep *report.Report, src *report.ItemSource, stdout report.Format, files []reportFile,
	failOn []report.Condition) error {
	write := func(w io.Writer, f report.Format) error {
		if f == report.FormatHTML {
			opts := report.HTMLOptions{FailOn: failOn}
			if src != nil {
				return report.WriteHTMLStream(ctx, w, rep, *src, opts)
			}
			return report.WriteHTML(w, rep, opts)
		}
		if src != nil {
			return report.WriteStream(ctx, w, rep, f, *src)
		}
		return report.Write(w, rep, f)
	}
	var errs []error
	// A closed standard output (a reader that went away, as head -1 does)
	// loses only what nobody reads: the files are still written and the
	// exit code is the run's.
	if err := write(st.Stdout, stdout); err != nil && !errors.Is(err, syscall.EPIPE) {
		errs = append(errs, fmt.Errorf("write the report to standard output: %w", err))
	}
	for _, f := range files {
		if err := writeFile(f.path, func(w *os.File) error { return write(w, f.format) }); err != nil {
			errs = append(errs, err)
			continue
		}
		fmt.Fprintf(st.Stderr, "wrote %s (%s)\n", f.path, f.format)
	}
	return errors.Join(errs...)
}

// storedReport builds the report of a run whose results are not in memory
// (--no-retain, --resume, --distributed, evalrun report) in memory that
// does not grow with its items: the aggregates in one pass over the stored
// results, without item rows, and the source writeReports streams the
// rows from when a format needs them.
func storedReport(ctx context.Context, store evalrun.RunStore, runID string) (*report.Report, *report.ItemSource, error) {
	rep, err := report.FromStore(ctx, store, runID, report.WithoutItems())
	if err != nil {
		return nil, nil, err
	}
	return rep, &report.ItemSource{Store: store, RunID: runID}, nil
}

// writeFile creates path (and its directory) and fills it with write. A
// regular file is written to a temporary file beside it, renamed over path
// only once whole: a write that fails half-way (a store error while a
// report streams, a full disk) leaves the previous file as it was, never
// half a report. Anything else (a device such as /dev/stdout, a pipe) is
// written in place. A symbolic link is written through, not replaced.
func writeFile(path string, write func(*os.File) error) error {
	if dir := filepath.Dir(path); dir != "." {
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return fmt.Errorf("write %s: %w", path, err)
		}
	}
	real, mode := path, os.FileMode(0o644)
	if p, err := filepath.EvalSymlinks(path); err == nil {
		real = p
	}
	if fi, err := os.Stat(real); err == nil {
		if !fi.Mode().IsRegular() {
			return writeInPlace(path, write)
		}
		mode = fi.Mode().Perm()
	}
	f, err := os.CreateTemp(filepath.Dir(real), "."+filepath.Base(real)+".*.tmp")
	if err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	tmp := f.Name()
	err = write(f)
	if err == nil {
		err = f.Chmod(mode)
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp, real)
	}
	if err != nil {
		os.Remove(tmp)
		return fmt.Errorf("write %s: %w", path, err)
	}
	return nil
}

// writeInPlace writes to path opened for writing, for what is not a
// regular file (a device, a named pipe).
func writeInPlace(path string, write func(*os.File) error) error {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o666)
	if err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	if err := write(f); err != nil {
		f.Close()
		return fmt.Errorf("write %s: %w", path, err)
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	return nil
}

// formatCompletion completes --format values.
func formatCompletion(*cobra.Command, []string, string) ([]string, cobra.ShellCompDirective) {
	out := make([]string, len(report.Formats))
	for i, f := range report.Formats {
		out[i] = string(f)
	}
	return out, cobra.ShellCompDirectiveNoFileComp
}

// shellQuote quotes s for a POSIX shell when it needs it.
func shellQuote(s string) string {
	if s != "" && strings.Trim(s, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_./:=@+,") == "" {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}
