// Command workload runs evalrun end to end on the standard workloads of
// docs/benchmarks.md and prints one line per workload: wall time, peak RSS,
// items/s, ratio to the ideal time, what the mock saw (requests, peak
// in-flight) and the pass count.
//
//	go run ./bench/cmd/workload [-reps 3] [W1 W2 ...]
//
// It builds evalrun (CGO_ENABLED=0, as shipped) into a temporary folder
// unless -evalrun names a binary, serves the mock (package bench/mock)
// in-process on 127.0.0.1, writes each workload's dataset and suite into the
// temporary folder, and runs `evalrun run SUITE --db FRESH.db`: the default
// SQLite store, in a new file per run. Wall time and peak RSS are the evalrun
// process's whole life (wait4 rusage), startup and persistence included.
// With -reps N every workload runs N times and the line gives medians; the
// runs themselves go to standard error.
package main

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"math"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/evalrun/evalrun"
	"github.com/evalrun/evalrun/bench/mock"
	"github.com/evalrun/evalrun/report"
	"github.com/evalrun/evalrun/sqlite"
)

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "workload:", err)
		os.Exit(1)
	}
}

type config struct {
	repo, rev, bin, tmp, profile, target string
	extra                                []string
	reps, items                          int
	timeout                              time.Duration
	keep, baseline, preimport            bool
}

func run() error {
	var c config
	var extra, clientURL string
	flag.StringVar(&clientURL, "client", "", "internal: be the bare client of -baseline against this mock URL, for workload ARG")
	flag.StringVar(&c.repo, "repo", ".", "the evalrun module to build")
	flag.StringVar(&c.rev, "rev", "", "build this git revision (git archive into the temporary folder) instead of the working tree")
	flag.StringVar(&c.bin, "evalrun", "", "use this evalrun binary instead of building one")
	flag.IntVar(&c.items, "items", 0, "override the workloads' item counts (e.g. to see how memory grows with them)")
	flag.IntVar(&c.reps, "reps", envInt("REPS", 1), "runs per workload; the line gives medians (default $REPS or 1)")
	flag.DurationVar(&c.timeout, "timeout", 10*time.Minute, "kill a run after this long")
	flag.BoolVar(&c.baseline, "baseline", false, "also run each workload's requests with a bare Go client (the floor on this machine), once per rep")
	flag.BoolVar(&c.keep, "keep", false, "keep the temporary folder (datasets, suites, databases, logs)")
	flag.StringVar(&c.profile, "profile", "", "build bench/cmd/evalrunprof (evalrun with profiles) and write DIR/<workload>.cpu.pprof and .heap.pprof (the last rep's)")
	flag.StringVar(&c.target, "target", "openai", "target kind: openai (the mock's /v1 chat completions), http (its /echo) or echo (no server)")
	flag.BoolVar(&c.preimport, "preimport", false, "import the dataset with evalrun dataset import (a separate, unmeasured process) before each run, instead of the suite's dataset.file")
	flag.StringVar(&extra, "args", "", "extra arguments for evalrun run, space-separated")
	flag.Usage = func() {
		fmt.Fprintf(flag.CommandLine.Output(), "usage: workload [flags] [W1 W2 W3 W4 W4F]\n")
		flag.PrintDefaults()
	}
	flag.Parse()
	c.extra = strings.Fields(extra)
	if clientURL != "" {
		return clientMode(clientURL, flag.Args())
	}
	if c.target != "openai" && c.target != "http" && c.target != "echo" {
		return fmt.Errorf("-target %q: openai, http or echo", c.target)
	}
	if c.reps < 1 {
		return fmt.Errorf("-reps %d: must be at least 1", c.reps)
	}
	var ws []Workload
	for _, name := range flag.Args() {
		w, ok := Find(name)
		if !ok {
			return fmt.Errorf("unknown workload %q (known: W1 W2 W3 W4 W4F)", name)
		}
		ws = append(ws, w)
	}
	if len(ws) == 0 {
		for _, name := range Default {
			w, _ := Find(name)
			ws = append(ws, w)
		}
	}

	tmp, err := os.MkdirTemp("", "evalrun-bench-")
	if err != nil {
		return err
	}
	c.tmp = tmp
	if c.keep {
		fmt.Fprintln(os.Stderr, "# keeping", tmp)
	} else {
		defer os.RemoveAll(tmp)
	}
	if c.bin == "" {
		c.bin = filepath.Join(tmp, "evalrun")
		fmt.Fprintln(os.Stderr, "# building evalrun")
		pkg := "./cmd/evalrun"
		if c.profile != "" {
			pkg = "./bench/cmd/evalrunprof"
		}
		src := c.repo
		if c.rev != "" {
			if src, err = export(c.repo, c.rev, tmp); err != nil {
				return err
			}
		}
		cmd := exec.Command("go", "build", "-o", c.bin, pkg)
		cmd.Dir, cmd.Stdout, cmd.Stderr = src, os.Stderr, os.Stderr
		cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
		if err := cmd.Run(); err != nil {
			return fmt.Errorf("building evalrun: %w", err)
		}
	}
	if c.profile != "" {
		if c.profile, err = filepath.Abs(c.profile); err != nil {
			return err
		}
		if err := os.MkdirAll(c.profile, 0o755); err != nil {
			return err
		}
	}

	failed := false
	for _, w := range ws {
		if c.target != "openai" {
			w.Name += "-" + c.target
		}
		if c.items > 0 {
			w.Items = c.items
		}
		res, err := runWorkload(c, w)
		if err != nil {
			return fmt.Errorf("%s: %w", w.Name, err)
		}
		fmt.Println(res.Line(w))
		if res.RC != 0 {
			failed = true
		}
	}
	if failed {
		return errors.New("some run exited non-zero (see its line's rc)")
	}
	return nil
}

// export writes the tree of git revision rev of repo into tmp/src.
func export(repo, rev, tmp string) (string, error) {
	dst := filepath.Join(tmp, "src")
	if err := os.MkdirAll(dst, 0o755); err != nil {
		return "", err
	}
	fmt.Fprintln(os.Stderr, "# exporting", rev)
	cmd := exec.Command("sh", "-c", `git -C "$1" archive "$2" | tar -x -C "$3"`, "sh", repo, rev, dst)
	cmd.Stderr = os.Stderr
	if err := cmd.Run(); err != nil {
		return "", fmt.Errorf("git archive %s: %w", rev, err)
	}
	return dst, nil
}

// runWorkload runs w c.reps times against a fresh in-process mock and
// returns the median result.
func runWorkload(c config, w Workload) (Result, error) {
	dir := filepath.Join(c.tmp, w.Name)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return Result{}, err
	}
	data := filepath.Join(dir, "data.jsonl")
	if err := WriteDataset(data, w); err != nil {
		return Result{}, err
	}
	srv, err := mock.New(w.Mock)
	if err != nil {
		return Result{}, err
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return Result{}, err
	}
	hs := &http.Server{Handler: srv, ReadHeaderTimeout: 10 * time.Second}
	go hs.Serve(ln)
	defer hs.Close()
	suite := filepath.Join(dir, "suite.yaml")
	suiteData := data
	if c.preimport {
		suiteData = ""
	}
	if err := os.WriteFile(suite, []byte(Suite(w, c.target, "http://"+ln.Addr().String(), suiteData)), 0o644); err != nil {
		return Result{}, err
	}

	var runs []Result
	for rep := range c.reps {
		if c.baseline {
			if err := baselineProcess(c, w, srv, "http://"+ln.Addr().String(), rep); err != nil {
				return Result{}, err
			}
		}
		srv.ResetStats()
		r, err := runOnce(c, w, srv, dir, suite, rep)
		if err != nil {
			return Result{}, err
		}
		fmt.Fprintln(os.Stderr, "# rep", rep+1, r.Line(w))
		runs = append(runs, r)
	}
	return Median(runs), nil
}

// runOnce runs evalrun once on a fresh database and measures it.
func runOnce(c config, w Workload, srv *mock.Server, dir, suite string, rep int) (Result, error) {
	db := filepath.Join(dir, fmt.Sprintf("evalrun-%d.db", rep))
	if c.preimport {
		imp := exec.Command(c.bin, "dataset", "import", DatasetName(w), filepath.Join(dir, "data.jsonl"), "--db", "sqlite:"+db)
		if out, err := imp.CombinedOutput(); err != nil {
			return Result{}, fmt.Errorf("evalrun dataset import: %w: %s", err, out)
		}
	}
	args := []string{"run", suite, "--db", "sqlite:" + db}
	if !w.Retain {
		args = append(args, "--no-retain")
	}
	args = append(args, c.extra...)
	stdout, err := os.Create(filepath.Join(dir, fmt.Sprintf("stdout-%d.txt", rep)))
	if err != nil {
		return Result{}, err
	}
	defer stdout.Close()
	out := &firstWrite{}
	stderr := &firstWrite{}

	res := Result{Load1: load1()}
	selfBefore := selfCPU()
	ctx, cancel := context.WithTimeout(context.Background(), c.timeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, c.bin, args...)
	cmd.Dir, cmd.Stdout, cmd.Stderr = dir, out, stderr
	cmd.Env = append(os.Environ(), "BENCH_MOCK_API_KEY=sk-mock", "OPENAI_API_KEY=sk-mock")
	if c.profile != "" {
		cmd.Env = append(cmd.Env, "EVALRUN_MEMSTATS=1",
			"EVALRUN_CPUPROFILE="+filepath.Join(c.profile, w.Name+".cpu.pprof"),
			"EVALRUN_HEAPPROFILE="+filepath.Join(c.profile, w.Name+".heap.pprof"))
	}
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	start := time.Now()
	stderr.start, out.start = start, start
	if err := cmd.Start(); err != nil {
		return Result{}, fmt.Errorf("starting evalrun: %w", err)
	}
	polled := make(chan [2]float64, 1)
	go pollRSS(cmd.Process.Pid, polled)
	err = cmd.Wait()
	split := <-polled
	res.RSSAnonMB, res.RSSFileMB = split[0], split[1]
	res.Wall = time.Since(start)
	res.MockCPU = selfCPU() - selfBefore
	res.Setup = stderr.first
	if out.buf.Len() > 0 {
		res.Tail = res.Wall - out.first
	}
	if _, err := stdout.Write(out.Bytes()); err != nil {
		return Result{}, err
	}
	os.WriteFile(filepath.Join(dir, fmt.Sprintf("stderr-%d.txt", rep)), stderr.Bytes(), 0o644)
	if m := memstatsLine.FindString(stderr.String()); m != "" {
		fmt.Fprintf(os.Stderr, "# %s: %s\n", w.Name, m)
	}
	var exitErr *exec.ExitError
	switch {
	case err == nil:
	case errors.As(err, &exitErr):
		res.RC = exitErr.ExitCode()
	default:
		return Result{}, fmt.Errorf("running evalrun: %w", err)
	}
	if ctx.Err() != nil {
		res.RC = -1
	}
	if ru, ok := cmd.ProcessState.SysUsage().(*syscall.Rusage); ok {
		res.RSSMB = float64(ru.Maxrss) / 1024 // KiB on Linux
		res.CPU = tv(ru.Utime) + tv(ru.Stime)
	}
	st := srv.Stats()
	res.MockRequests, res.PeakInFlight = st.Requests, st.PeakInFlight
	res.Status = st.Status

	res.Passed, res.Succeeded, res.Failed = -1, -1, -1
	if res.RC != 0 {
		fmt.Fprintf(os.Stderr, "# %s: evalrun exited %d: %s\n", w.Name, res.RC, firstLines(stderr.String(), 5))
	}
	if err := counts(db, runID(stderr.String()), &res); err != nil {
		fmt.Fprintf(os.Stderr, "# %s: reading the run's report: %v\n", w.Name, err)
	}
	return res, nil
}

var memstatsLine = regexp.MustCompile(`evalrunprof: peak heap.*`)

var runIDLine = regexp.MustCompile(`(?m)^run (\S+)`)

// runID finds the run id on evalrun's first stderr line ("run <ID> …").
func runID(stderr string) string {
	if m := runIDLine.FindStringSubmatch(stderr); m != nil {
		return m[1]
	}
	return ""
}

// counts reads the run's succeeded, failed and passed counts from its
// report, built from the database the run wrote (not timed). An empty id
// means the newest run.
func counts(db, id string, res *Result) error {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	store, err := sqlite.Open(ctx, db)
	if err != nil {
		return err
	}
	defer store.Close()
	if id == "" {
		runs, err := store.ListRuns(ctx, evalrun.RunFilter{})
		if err != nil {
			return err
		}
		if len(runs) == 0 {
			return errors.New("no run in the database")
		}
		id = runs[0].ID
	}
	rep, err := report.FromStore(ctx, store, id, report.WithoutItems())
	if err != nil {
		return err
	}
	res.Succeeded, res.Failed = rep.Run.Succeeded, rep.Run.Failed
	res.Passed = 0
	for _, s := range rep.Scorers {
		if s.PassRate != nil {
			res.Passed += int(math.Round(*s.PassRate * float64(s.Count)))
		}
	}
	return nil
}

func firstLines(s string, n int) string {
	lines := strings.SplitN(strings.TrimSpace(s), "\n", n+1)
	return strings.Join(lines[:min(n, len(lines))], " | ")
}

func tv(t syscall.Timeval) float64 { return float64(t.Sec) + float64(t.Usec)/1e6 }

// selfCPU is this process's CPU time so far: the in-process mock's, mostly.
func selfCPU() float64 {
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) != nil {
		return 0
	}
	return tv(ru.Utime) + tv(ru.Stime)
}

// load1 is the one-minute load average, or -1.
func load1() float64 {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return -1
	}
	f, err := strconv.ParseFloat(strings.Fields(string(b))[0], 64)
	if err != nil {
		return -1
	}
	return f
}

// baselineProcess runs this program as the bare client of [Baseline] in
// a process of its own, like evalrun, and prints its whole-process wall
// time.
func baselineProcess(c config, w Workload, srv *mock.Server, base string, rep int) error {
	self, err := os.Executable()
	if err != nil {
		return err
	}
	srv.ResetStats()
	ctx, cancel := context.WithTimeout(context.Background(), c.timeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, self, "-client", base, "-items", strconv.Itoa(w.Items), w.Name)
	cmd.Stderr = os.Stderr
	start := time.Now()
	out, err := cmd.Output()
	wall := time.Since(start)
	if err != nil {
		return fmt.Errorf("baseline client: %w", err)
	}
	var rss, cpu float64
	if ru, ok := cmd.ProcessState.SysUsage().(*syscall.Rusage); ok {
		rss, cpu = float64(ru.Maxrss)/1024, tv(ru.Utime)+tv(ru.Stime)
	}
	st := srv.Stats()
	fmt.Fprintf(os.Stderr, "# rep %d %s-baseline items=%d wall_s=%.3f rss_mb=%.1f ratio=%s cpu_s=%.2f peak_inflight=%d load1=%.2f %s\n",
		rep+1, w.Name, w.Items, wall.Seconds(), rss, ratio(wall, w.Ideal()), cpu, st.PeakInFlight, load1(), strings.TrimSpace(string(out)))
	return nil
}

// clientMode is the child side of baselineProcess.
func clientMode(base string, args []string) error {
	if len(args) != 1 {
		return errors.New("-client needs one workload name")
	}
	w, ok := Find(args[0])
	if !ok {
		return fmt.Errorf("unknown workload %q", args[0])
	}
	if f := flag.Lookup("items"); f != nil {
		if n, err := strconv.Atoi(f.Value.String()); err == nil && n > 0 {
			w.Items = n
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Hour)
	defer cancel()
	wall, passed, err := Baseline(ctx, w, base)
	fmt.Printf("client_wall_s=%.3f passed=%d err=%v\n", wall.Seconds(), passed, err)
	return nil
}

func ratio(wall, ideal time.Duration) string {
	if ideal <= 0 {
		return "-"
	}
	return fmt.Sprintf("%.3f", wall.Seconds()/ideal.Seconds())
}

func envInt(name string, def int) int {
	if n, err := strconv.Atoi(os.Getenv(name)); err == nil {
		return n
	}
	return def
}

// pollRSS samples /proc/PID/status every 20 ms until the process is gone
// and sends the peaks of RssAnon and RssFile (MB): the heap (Go's and
// SQLite's) and the resident part of the binary.
func pollRSS(pid int, out chan<- [2]float64) {
	var peak [2]float64
	defer func() { out <- peak }()
	path := fmt.Sprintf("/proc/%d/status", pid)
	for range 200_000 { // bounded: over an hour
		b, err := os.ReadFile(path)
		if err != nil || strings.Contains(string(b), "State:\tZ") {
			return
		}
		for line := range strings.Lines(string(b)) {
			for i, key := range []string{"RssAnon:", "RssFile:"} {
				if rest, ok := strings.CutPrefix(line, key); ok {
					if kb, err := strconv.ParseFloat(strings.TrimSuffix(strings.TrimSpace(rest), " kB"), 64); err == nil {
						peak[i] = max(peak[i], kb/1024)
					}
				}
			}
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// firstWrite collects a process's standard error and when its first
// bytes came (evalrun's "run <ID> started" line: start-up, store opening
// and dataset import are done by then).
// It has no ReadFrom (io.Copy would bypass Write).
type firstWrite struct {
	buf   bytes.Buffer
	start time.Time
	first time.Duration
}

func (w *firstWrite) Write(p []byte) (int, error) {
	if w.buf.Len() == 0 && len(p) > 0 {
		w.first = time.Since(w.start)
	}
	return w.buf.Write(p)
}

func (w *firstWrite) String() string { return w.buf.String() }

func (w *firstWrite) Bytes() []byte { return w.buf.Bytes() }

// Result is one measured run, or the median of several.
type Result struct {
	Wall time.Duration
	// Setup is the time to evalrun's first line on stderr.
	Setup time.Duration
	// Tail is the time from evalrun's first byte on stdout (the report,
	// once the run is over) to its exit.
	Tail                time.Duration
	RSSMB, CPU, MockCPU float64
	// RSSAnonMB and RSSFileMB are the sampled peaks of the anonymous
	// (heaps) and file-backed (the binary) resident memory.
	RSSAnonMB, RSSFileMB       float64
	MockRequests, PeakInFlight int64
	Status                     map[string]int64
	// Passed, Succeeded and Failed come from the run's report; -1 when
	// it could not be read.
	Passed, Succeeded, Failed int
	RC                        int
	Load1                     float64
	Reps                      int
}

// Median combines runs: the median wall time, RSS, CPU and load; the
// highest peak in-flight and request count; the lowest pass and success
// counts, the highest failure count; the first non-zero exit code.
func Median(runs []Result) Result {
	if len(runs) == 0 {
		return Result{}
	}
	m := runs[0]
	m.Reps = len(runs)
	pick := func(get func(Result) float64) float64 {
		vs := make([]float64, len(runs))
		for i, r := range runs {
			vs[i] = get(r)
		}
		slices.Sort(vs)
		if n := len(vs); n%2 == 0 {
			return (vs[n/2-1] + vs[n/2]) / 2
		}
		return vs[len(vs)/2]
	}
	m.Wall = time.Duration(pick(func(r Result) float64 { return float64(r.Wall) }))
	m.Setup = time.Duration(pick(func(r Result) float64 { return float64(r.Setup) }))
	m.Tail = time.Duration(pick(func(r Result) float64 { return float64(r.Tail) }))
	m.RSSMB = pick(func(r Result) float64 { return r.RSSMB })
	m.RSSAnonMB = pick(func(r Result) float64 { return r.RSSAnonMB })
	m.RSSFileMB = pick(func(r Result) float64 { return r.RSSFileMB })
	m.CPU = pick(func(r Result) float64 { return r.CPU })
	m.MockCPU = pick(func(r Result) float64 { return r.MockCPU })
	m.Load1 = pick(func(r Result) float64 { return r.Load1 })
	for _, r := range runs[1:] {
		m.PeakInFlight = max(m.PeakInFlight, r.PeakInFlight)
		m.MockRequests = max(m.MockRequests, r.MockRequests)
		m.Passed = min(m.Passed, r.Passed)
		m.Succeeded = min(m.Succeeded, r.Succeeded)
		m.Failed = max(m.Failed, r.Failed)
		if m.RC == 0 {
			m.RC = r.RC
		}
	}
	return m
}

// Line is the result's one-line form, key=value pairs.
func (r Result) Line(w Workload) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s items=%d lat_ms=%d conc=%d wall_s=%.3f rss_mb=%.1f items_per_s=%.0f",
		w.Name, w.Items, w.Mock.Latency.Milliseconds(), w.Concurrency, r.Wall.Seconds(), r.RSSMB, float64(w.Items)/r.Wall.Seconds())
	fmt.Fprintf(&b, " rss_anon_mb=%.1f rss_file_mb=%.1f", r.RSSAnonMB, r.RSSFileMB)
	if ideal := w.Ideal(); ideal > 0 {
		fmt.Fprintf(&b, " ideal_s=%.2f ratio=%.3f", ideal.Seconds(), r.Wall.Seconds()/ideal.Seconds())
	} else {
		b.WriteString(" ideal_s=0 ratio=-")
	}
	fmt.Fprintf(&b, " setup_s=%.3f tail_s=%.3f cpu_s=%.2f mock_cpu_s=%.2f mock_requests=%d peak_inflight=%d", r.Setup.Seconds(), r.Tail.Seconds(), r.CPU, r.MockCPU, r.MockRequests, r.PeakInFlight)
	if len(r.Status) > 0 && (len(r.Status) > 1 || r.Status["200"] == 0) {
		codes := make([]string, 0, len(r.Status))
		for k, v := range r.Status {
			codes = append(codes, k+":"+strconv.FormatInt(v, 10))
		}
		slices.Sort(codes)
		fmt.Fprintf(&b, " mock_status=%s", strings.Join(codes, ","))
	}
	fmt.Fprintf(&b, " succeeded=%d failed=%d passed=%d rc=%d load1=%.2f", r.Succeeded, r.Failed, r.Passed, r.RC, r.Load1)
	if r.Reps > 1 {
		fmt.Fprintf(&b, " reps=%d", r.Reps)
	}
	return b.String()
}
