package mcplive

import (
	"os"
	"testing"

	"github.com/agentmsg/agentmsg/e2e/harness"
)

// TestMain removes the binaries harness.Build made.
func TestMain(m *testing.M) {
	code := m.Run()
	harness.Cleanup()
	os.Exit(code)
}
