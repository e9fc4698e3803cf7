package cli

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"syscall"

	"github.com/spf13/cobra"

	"github.com/evalrun/evalrun"
	"github.com/evalrun/evalrun/sqlite"
	"github.com/evalrun/evalrun/web"
)

func init() { register(newServeCmd) }

// DefaultServeAddr is where evalrun serve listens without --addr.
const DefaultServeAddr = "127.0.0.1:8080"

// servePrewarm is the number of newest runs whose reports the viewer
// computes as soon as it starts.
const servePrewarm = 10

func newServeCmd(st *State) *cobra.Command {
	var addr, token string
	cmd := &cobra.Command{
		Use:   "serve",
		Short: "Serve the web viewer: runs, items, scores, histograms and comparisons in a browser",
		Long: `Serve a read-only web viewer of the store (see docs/web.md): the runs list, run
pages with aggregates, histograms and cohorts, paged items, item details and
comparisons, and the same data as JSON under /api/.

It listens on 127.0.0.1:8080 by default. Any other interface (":8080",
"0.0.0.0:8080", a LAN address) needs a token, from --token or EVALRUN_TOKEN,
which every request must then present (see docs/web.md); without one evalrun
refuses to start (exit 2). A token has at least 16 characters, printable
ASCII without spaces, 8 of them different (openssl rand -hex 16 makes one); a
weaker one is refused (exit 2). The URL is printed on standard error. Ctrl-C stops the
server (exit 0).`,
		Example: `  evalrun serve
  evalrun serve --addr 127.0.0.1:9000 --db postgres://evalrun@db/evalrun
  EVALRUN_TOKEN=$(openssl rand -hex 16) evalrun serve --addr 0.0.0.0:8080`,
		Args: args(),
		RunE: func(cmd *cobra.Command, _ []string) error {
			source := "--token"
			if token == "" {
				token, source = st.Getenv("EVALRUN_TOKEN"), "EVALRUN_TOKEN"
			}
			if token != "" {
				if err := web.CheckToken(token); err != nil {
					return usageError(fmt.Errorf("%s: %w", source, err))
				}
			}
			if err := web.CheckAddr(addr, token); err != nil {
				return usageError(err)
			}
			// The viewer's readers map the file: its search pages read many outputs.
			return st.withStoreOpts(cmd, []sqlite.Option{sqlite.MappedReads()}, func(ctx context.Context, store evalrun.Store) error {
				var lc net.ListenConfig
				ln, err := lc.Listen(ctx, "tcp", addr)
				if err != nil {
					hint := "use --addr HOST:PORT with an address of this machine"
					if errors.Is(err, syscall.EADDRINUSE) {
						hint = "is another server using the port? use --addr HOST:PORT"
					}
					return fmt.Errorf("serve: listen on %s: %w (%s)", addr, err, hint)
				}
				return st.serve(ctx, ln, store, token)
			})
		},
	}
	cmd.Flags().StringVar(&addr, "addr", DefaultServeAddr, "address to listen on, HOST:PORT (a non-loopback one needs --token)")
	cmd.Flags().StringVar(&token, "token", "", "token every request must present, at least 16 characters (default: $EVALRUN_TOKEN); required off loopback")
	return cmd
}

// serve serves the viewer of store on ln until ctx is done (Ctrl-C), which
// is a clean exit. It prints the URL to standard error first.
func (st *State) serve(ctx context.Context, ln net.Listener, store evalrun.Store, token string) error {
	logger := slog.New(slog.NewTextHandler(st.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	srv, err := web.New(store, web.Options{Token: token, Logger: logger, Prewarm: servePrewarm})
	if err != nil {
		ln.Close()
		return err
	}
	defer srv.Close()
	auth := ""
	if token != "" {
		auth = " (token required)"
	}
	fmt.Fprintf(st.Stderr, "evalrun viewer: http://%s/%s; Ctrl-C stops it\n", ln.Addr(), auth)
	// Serve returns nil after a shutdown caused by ctx (Ctrl-C).
	return web.Serve(ctx, ln, srv)
}
