package serve

import (
	"errors"
	"fmt"
	"os"
	"runtime/pprof"
	"runtime/trace"
)

// profile starts what AGENTMSG_PPROF (a CPU profile) and AGENTMSG_TRACE (an
// execution trace) ask for, each written to the path given, and returns
// what ends them: the daemon's speed is measured with it (e2e/bench
// -profile), never set in use, so it is not documented as an option.
func profile(lookup func(string) (string, bool)) (stop func() error, err error) {
	var stops []func() error
	stop = func() error {
		var errs []error
		for _, s := range stops {
			errs = append(errs, s())
		}
		return errors.Join(errs...)
	}
	if path, ok := lookup("AGENTMSG_PPROF"); ok && path != "" {
		f, err := os.Create(path)
		if err != nil {
			return stop, fmt.Errorf("AGENTMSG_PPROF: %w", err)
		}
		if err := pprof.StartCPUProfile(f); err != nil {
			f.Close()
			return stop, fmt.Errorf("AGENTMSG_PPROF: %w", err)
		}
		stops = append(stops, func() error { pprof.StopCPUProfile(); return f.Close() })
	}
	if path, ok := lookup("AGENTMSG_TRACE"); ok && path != "" {
		f, err := os.Create(path)
		if err != nil {
			return stop, fmt.Errorf("AGENTMSG_TRACE: %w", err)
		}
		if err := trace.Start(f); err != nil {
			f.Close()
			return stop, fmt.Errorf("AGENTMSG_TRACE: %w", err)
		}
		stops = append(stops, func() error { trace.Stop(); return f.Close() })
	}
	return stop, nil
}
