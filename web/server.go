package web

import (
	"context"
	"embed"
	"errors"
	"fmt"
	"html/template"
	"io/fs"
	"log/slog"
	"net"
	"net/http"
	"runtime/debug"
	"strconv"
	"time"

	"github.com/evalrun/evalrun"
	"github.com/evalrun/evalrun/report"
)

//go:embed templates/*.html
var templateFS embed.FS

//go:embed static
var staticFS embed.FS

// contentSecurityPolicy allows the page's own scripts, styles and images
// only; inline SVG is markup, not an image, so it needs nothing more.
const contentSecurityPolicy = "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; " +
	"connect-src 'self'; object-src 'none'; base-uri 'none'; frame-ancestors 'none'; form-action 'self'"

// Options configures a [Server]. The zero value is valid: no token
// (loopback only), the default logger, the system clock.
type Options struct {
	// Token, when set, is required on every request (see the package
	// documentation). It is required to serve a non-loopback address
	// ([CheckAddr]) and must pass [CheckToken].
	Token string
	// Logger receives request errors; nil means slog.Default().
	Logger *slog.Logger
	// Clock dates cached reports; nil means evalrun.SystemClock.
	Clock evalrun.Clock
	// RefreshInterval is how long the report of a running run is reused
	// before it is recomputed; 0 means 3 s. A finished run's report is
	// computed once.
	RefreshInterval time.Duration
	// CacheSize is the number of run reports (and, apart, comparisons)
	// kept in memory; 0 means 32.
	CacheSize int
	// ListWait bounds how long the runs list waits for the pass rates of
	// runs whose reports are not cached yet; 0 means 1 s. The reports go on
	// being computed in the background, and a reload shows them.
	ListWait time.Duration
	// PageSize is the number of items per page; 0 means 50.
	PageSize int
	// SearchBudget is the number of results a page of a search (q=)
	// examines at most (evalrun.ResultPageQuery.SearchBudget); 0 means
	// evalrun.DefaultSearchBudget.
	SearchBudget int
	// Prewarm is the number of newest runs whose reports are computed in
	// the background as soon as the server starts, so that their first
	// page view is served from memory; 0 means none.
	Prewarm int
}

// Server is the viewer's [http.Handler]. It is safe for concurrent use.
// Close stops the reports being computed in the background.
type Server struct {
	store evalrun.Store
	opts  Options
	log   *slog.Logger
	mux   *http.ServeMux
	pages map[string]*template.Template

	auth     *authenticator
	reports  *memo[*report.Report]
	compares *memo[*compareView]
	// experiments holds the experiment pages' data (report and index).
	experiments *memo[*experimentData]
	// counts holds the totals of finished runs' sorted listings.
	counts *countCache

	bgCtx    context.Context
	bgCancel context.CancelFunc
	// prewarmed is closed when the Prewarm reports are computed.
	prewarmed chan struct{}
}

// New returns the viewer of store. It reads the store only.
func New(store evalrun.Store, opts Options) (*Server, error) {
	if store == nil {
		return nil, errors.New("web: nil store")
	}
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	if opts.Clock == nil {
		opts.Clock = evalrun.SystemClock
	}
	if opts.RefreshInterval <= 0 {
		opts.RefreshInterval = 3 * time.Second
	}
	if opts.CacheSize <= 0 {
		opts.CacheSize = 32
	}
	if opts.ListWait <= 0 {
		opts.ListWait = time.Second
	}
	if opts.SearchBudget <= 0 {
		opts.SearchBudget = evalrun.DefaultSearchBudget
	}
	if opts.PageSize <= 0 {
		opts.PageSize = 50
	}
	if opts.Token != "" {
		if err := CheckToken(opts.Token); err != nil {
			return nil, err
		}
	}
	pages, err := parseTemplates()
	if err != nil {
		return nil, fmt.Errorf("web: %w", err)
	}
	s := &Server{
		store: store,
		opts:  opts,
		log:   opts.Logger,
		mux:   http.NewServeMux(),
		pages: pages,
		auth:  newAuthenticator(opts.Token),
	}
	s.bgCtx, s.bgCancel = context.WithCancel(context.Background())
	// Background builds: two at a time on 2-core machines is plenty.
	sem := make(chan struct{}, 2)
	s.reports = newMemo[*report.Report](opts.CacheSize, opts.Clock, sem)
	s.compares = newMemo[*compareView](max(opts.CacheSize/4, 4), opts.Clock, sem)
	s.experiments = newMemo[*experimentData](max(opts.CacheSize/4, 4), opts.Clock, sem)
	// A few words an entry: 4,096 listings' counts are ~1 MB at most.
	s.counts = newCountCache(4096)
	s.routes()
	s.prewarmed = make(chan struct{})
	go s.prewarm(opts.Prewarm)
	return s, nil
}

// prewarm computes the reports of the n newest runs in the background.
func (s *Server) prewarm(n int) {
	defer close(s.prewarmed)
	if n <= 0 {
		return
	}
	runs, err := s.store.ListRuns(s.bgCtx, evalrun.RunFilter{Limit: n})
	if err != nil {
		s.log.Warn("web: prewarm: list runs", "err", err)
		return
	}
	for _, run := range runs {
		if _, err := s.report(s.bgCtx, run); err != nil && s.bgCtx.Err() == nil {
			s.log.Warn("web: prewarm", "run", run.ID, "err", err)
		}
	}
}

// Close cancels the reports being computed in the background. The handler
// still answers afterwards (computing what it needs in the request). Closing
// twice is safe.
func (s *Server) Close() error {
	s.bgCancel()
	return nil
}

func (s *Server) routes() {
	static, _ := fs.Sub(staticFS, "static")
	s.mux.Handle("GET /static/", http.StripPrefix("/static/", http.FileServerFS(static)))

	s.mux.HandleFunc("GET /{$}", s.handleRuns)
	s.mux.HandleFunc("GET /runs/{id}", s.handleRun)
	s.mux.HandleFunc("GET /runs/{id}/items", s.handleItems)
	s.mux.HandleFunc("GET /runs/{id}/items/{index}", s.handleItem)
	s.mux.HandleFunc("GET /compare", s.handleCompare)
	s.mux.HandleFunc("GET /experiments", s.handleExperiments)
	s.mux.HandleFunc("GET /experiments/{id}", s.handleExperiment)

	s.mux.HandleFunc("GET /api/runs", s.apiRuns)
	s.mux.HandleFunc("GET /api/runs/{id}", s.apiRun)
	s.mux.HandleFunc("GET /api/runs/{id}/items", s.apiItems)
	s.mux.HandleFunc("GET /api/runs/{id}/items/{index}", s.apiItem)
	s.mux.HandleFunc("GET /api/compare", s.apiCompare)
	s.mux.HandleFunc("GET /api/experiments", s.apiExperiments)
	s.mux.HandleFunc("GET /api/experiments/{id}", s.apiExperiment)
	s.mux.HandleFunc("GET /api/experiments/{id}/items", s.apiExperimentItems)

	s.mux.HandleFunc("/", s.handleNotFound)
}

// ServeHTTP sets the security headers, checks the token (or, without one,
// the Host) and routes the request.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	h := w.Header()
	h.Set("Content-Security-Policy", contentSecurityPolicy)
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("X-Frame-Options", "DENY")
	h.Set("Referrer-Policy", "no-referrer")
	h.Set("Cross-Origin-Opener-Policy", "same-origin")
	h.Set("Cross-Origin-Resource-Policy", "same-origin")
	// The last line of defence: a handler's panic is a bug to fix, logged
	// with its stack; the user gets a 500 rather than a dropped connection.
	defer func() {
		if v := recover(); v != nil {
			if v == http.ErrAbortHandler {
				panic(v)
			}
			s.log.Error("web: panic serving a request", "path", r.URL.Path, "panic", v, "stack", string(debug.Stack()))
			http.Error(w, "internal error (see the server's log)", http.StatusInternalServerError)
		}
	}()
	if !s.auth.check(w, r) {
		return
	}
	s.mux.ServeHTTP(w, r)
}

// CheckAddr returns an error when addr (host:port) would bind a
// non-loopback interface without a token, or when a token is given that
// [CheckToken] refuses. An empty host (":8080") binds every interface and
// so needs a token too; "localhost" and loopback IPs do not.
func CheckAddr(addr, token string) error {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return invalidf("--addr %q: want HOST:PORT, e.g. 127.0.0.1:8080 (%v)", addr, err)
	}
	// A bad port is the user's to fix (exit 2), not a failure to listen.
	if _, err := strconv.ParseUint(port, 10, 16); err != nil && port != "" {
		return invalidf("--addr %q: the port must be a number from 0 to 65535, e.g. 127.0.0.1:8080", addr)
	}
	if token != "" {
		return CheckToken(token)
	}
	if isLoopbackHost(host) {
		return nil
	}
	shown := host
	if shown == "" {
		shown = "every interface"
	}
	return invalidf("refusing to serve %s (%s) without a token: set --token or EVALRUN_TOKEN (at least %d characters: openssl rand -hex 16), or use --addr 127.0.0.1:PORT",
		addr, shown, MinTokenLength)
}

// isLoopbackHost reports whether host (no port) names the loopback
// interface.
func isLoopbackHost(host string) bool {
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// ListenAndServe serves the viewer of store on addr until ctx is done, then
// shuts down gracefully (in-flight requests get 5 s). It returns
// [CheckAddr]'s error before listening, and nil after a shutdown caused by
// ctx.
func ListenAndServe(ctx context.Context, addr string, store evalrun.Store, opts Options) error {
	if err := CheckAddr(addr, opts.Token); err != nil {
		return err
	}
	srv, err := New(store, opts)
	if err != nil {
		return err
	}
	defer srv.Close()
	var lc net.ListenConfig
	ln, err := lc.Listen(ctx, "tcp", addr)
	if err != nil {
		return fmt.Errorf("web: %w", err)
	}
	srv.log.Info("evalrun viewer listening", "url", "http://"+ln.Addr().String()+"/", "token", opts.Token != "")
	return Serve(ctx, ln, srv)
}

// Serve serves h on ln until ctx is done, then shuts down gracefully (5 s
// for in-flight requests). It closes ln. It returns nil after a shutdown
// caused by ctx, and the server's error otherwise.
func Serve(ctx context.Context, ln net.Listener, h http.Handler) error {
	hs := &http.Server{
		Handler:           h,
		ReadHeaderTimeout: 10 * time.Second,
		IdleTimeout:       2 * time.Minute,
		BaseContext:       func(net.Listener) context.Context { return context.WithoutCancel(ctx) },
	}
	errc := make(chan error, 1)
	go func() { errc <- hs.Serve(ln) }()
	select {
	case err := <-errc:
		return fmt.Errorf("web: %w", err)
	case <-ctx.Done():
	}
	sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
	defer cancel()
	err := hs.Shutdown(sctx)
	if serr := <-errc; serr != nil && !errors.Is(serr, http.ErrServerClosed) && err == nil {
		err = serr
	}
	if err != nil {
		return fmt.Errorf("web: shutdown: %w", err)
	}
	return nil
}
