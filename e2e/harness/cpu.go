package harness

import (
	"bytes"
	"fmt"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"
)

// CPUTime is the user and system CPU time process pid has used so far. It
// skips tb where there is no /proc to read it from (Linux only).
func CPUTime(tb testing.TB, pid int) time.Duration {
	tb.Helper()
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		if _, serr := os.Stat("/proc/self/stat"); serr != nil {
			tb.Skip("another process's CPU time is read from /proc (Linux only)")
		}
		tb.Fatal(err)
	}
	// The fields after the command's closing parenthesis: utime and
	// stime are the 12th and 13th, in clock ticks (100 a second).
	f := strings.Fields(string(b[bytes.LastIndexByte(b, ')')+2:]))
	utime, _ := strconv.Atoi(f[11])
	stime, _ := strconv.Atoi(f[12])
	return time.Duration(utime+stime) * 10 * time.Millisecond
}
