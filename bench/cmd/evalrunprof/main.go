// Command evalrunprof is evalrun (the same internal/cli, the same signal
// handling as cmd/evalrun) with profiles for the benchmarks, set by
// environment variables so that the command line stays the user's:
//
//	EVALRUN_CPUPROFILE=FILE   a CPU profile of the whole process
//	EVALRUN_HEAPPROFILE=FILE  a heap profile taken when the heap in use
//	                          was at its highest (sampled every 100 ms)
//	EVALRUN_HEAPPROFILE_AT=D  take it after D (e.g. 20s) instead: the live
//	                          heap of the most recent GC at that moment
//	EVALRUN_MEMSTATS=1        the peak heap and runtime totals on stderr
//
// bench/cmd/workload builds it instead of cmd/evalrun with -profile DIR.
package main

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"runtime"
	"runtime/metrics"
	"runtime/pprof"
	"sync"
	"syscall"
	"time"

	"github.com/evalrun/evalrun/internal/cli"
)

func main() {
	stop := startProfiles()
	ctx, cancel := context.WithCancelCause(context.Background())
	sig := make(chan os.Signal, 2)
	signal.Notify(sig, os.Interrupt, syscall.SIGTERM)
	go func() {
		<-sig
		cancel(cli.ErrInterrupted)
		<-sig
		stop()
		os.Exit(cli.ExitInterrupted)
	}()
	code := cli.Main(ctx, os.Args[1:], os.Stdin, os.Stdout, os.Stderr, os.Environ())
	stop()
	os.Exit(code)
}

// startProfiles starts what the environment asks for and returns the
// function that finishes it (safe to call twice).
func startProfiles() (stop func()) {
	var stops []func()
	if path := os.Getenv("EVALRUN_CPUPROFILE"); path != "" {
		f, err := os.Create(path)
		if err == nil {
			err = pprof.StartCPUProfile(f)
		}
		if err != nil {
			fmt.Fprintln(os.Stderr, "evalrunprof: cpu profile:", err)
		} else {
			stops = append(stops, func() { pprof.StopCPUProfile(); f.Close() })
		}
	}
	heapPath, memstats := os.Getenv("EVALRUN_HEAPPROFILE"), os.Getenv("EVALRUN_MEMSTATS") != ""
	if heapPath != "" || memstats {
		done, finished := make(chan struct{}), make(chan struct{})
		go watchHeap(heapPath, memstats, done, finished)
		stops = append(stops, func() { close(done); <-finished })
	}
	var once sync.Once
	return func() {
		once.Do(func() {
			for _, s := range stops {
				s()
			}
		})
	}
}

// watchHeap samples the live heap every 100 ms; whenever it reaches a new
// high (10 % above the last), it writes a heap profile to path.
func watchHeap(path string, memstats bool, done <-chan struct{}, finished chan<- struct{}) {
	defer close(finished)
	if path != "" {
		runtime.MemProfileRate = 64 << 10
	}
	sample := []metrics.Sample{{Name: "/memory/classes/heap/objects:bytes"}, {Name: "/memory/classes/total:bytes"}}
	var peakLive, peakTotal, written uint64
	at, _ := time.ParseDuration(os.Getenv("EVALRUN_HEAPPROFILE_AT"))
	start := time.Now()
	var peakAt time.Duration
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	for {
		metrics.Read(sample)
		live, total := sample[0].Value.Uint64(), sample[1].Value.Uint64()
		if total > peakTotal {
			peakAt = time.Since(start)
		}
		peakLive, peakTotal = max(peakLive, live), max(peakTotal, total)
		if path != "" && (at == 0 && live > written+written/10 || at > 0 && written == 0 && time.Since(start) >= at) {
			if f, err := os.Create(path); err == nil {
				pprof.Lookup("heap").WriteTo(f, 0)
				f.Close()
				written = live
			}
		}
		select {
		case <-done:
			if memstats {
				fmt.Fprintf(os.Stderr, "evalrunprof: peak heap objects %.1f MB, peak runtime total %.1f MB at %.1fs\n",
					float64(peakLive)/(1<<20), float64(peakTotal)/(1<<20), peakAt.Seconds())
			}
			return
		case <-tick.C:
		}
	}
}
