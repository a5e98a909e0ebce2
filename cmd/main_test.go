package cmd

import (
	"fmt"
	"os"
	"testing"
)

// TestMain gives the package's tests a TMPDIR of their own: a factory with
// no XDG_RUNTIME_DIR keeps its locks under $TMPDIR/agentmsg-<uid>, which
// must not outlive the tests.
func TestMain(m *testing.M) {
	tmp, err := os.MkdirTemp("", "agentmsg-cmd-test")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	os.Setenv("TMPDIR", tmp)
	code := m.Run()
	os.RemoveAll(tmp)
	os.Exit(code)
}
