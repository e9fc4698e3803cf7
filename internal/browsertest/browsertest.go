// Package browsertest starts the headless Chromium of evalrun's browser
// tests (the viewer's and the HTML report's). Only tests import it.
package browsertest

import (
	"context"
	"os"
	"os/exec"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
)

// Chromium returns the path of a Chromium binary: $EVALRUN_CHROMIUM, or the
// first of the usual names found in PATH; "" when there is none.
func Chromium() string {
	if p := os.Getenv("EVALRUN_CHROMIUM"); p != "" {
		return p
	}
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome", "google-chrome-stable"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	return ""
}

// Start starts a headless Chromium with a fresh profile and a 1280×900
// window (opts add to or override its options) and returns its context,
// which bounds the test's steps to 90 s; the browser stops when the test
// ends. Without a Chromium binary the test is skipped, unless
// EVALRUN_REQUIRE_BROWSER=1 (scripts/test sets it), when it fails.
func Start(t *testing.T, opts ...chromedp.ExecAllocatorOption) context.Context {
	t.Helper()
	path := Chromium()
	if path == "" {
		if os.Getenv("EVALRUN_REQUIRE_BROWSER") == "1" {
			t.Fatal("no Chromium binary found (chromium, chromium-browser, google-chrome in PATH or $EVALRUN_CHROMIUM) " +
				"and EVALRUN_REQUIRE_BROWSER=1: install it with apt-get install -y chromium")
		}
		t.Skip("skipping the browser test: no Chromium binary found (apt-get install -y chromium, or set EVALRUN_CHROMIUM)")
	}
	all := append([]chromedp.ExecAllocatorOption{
		chromedp.ExecPath(path),
		chromedp.Headless,
		chromedp.NoSandbox,
		chromedp.DisableGPU,
		chromedp.NoFirstRun,
		chromedp.NoDefaultBrowserCheck,
		// Without these Chromium reaches for Google's hosts, which this
		// closed network refuses many at a time.
		chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true),
		chromedp.Flag("disable-extensions", true),
		chromedp.Flag("disable-dev-shm-usage", true),
		chromedp.UserDataDir(t.TempDir()),
		chromedp.WindowSize(1280, 900),
	}, opts...)
	actx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), all...)
	bctx, cancelBrowser := chromedp.NewContext(actx)
	// The first call starts the browser, which lives as long as bctx: it
	// must not carry the timeout, which bounds the test's steps only.
	if err := chromedp.Do(bctx); err != nil {
		cancelBrowser()
		cancelAlloc()
		t.Fatalf("start %s: %v", path, err)
	}
	ctx, cancelTimeout := context.WithTimeout(bctx, 90*time.Second)
	t.Cleanup(func() {
		cancelTimeout()
		cancelBrowser()
		cancelAlloc()
	})
	return ctx
}
