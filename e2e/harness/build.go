// Package harness runs the real agentmsg binary against a private tmux
// server and stand-in agents whose logs say what they really received. The
// end-to-end tests use it through the testing.TB wrappers; a benchmark
// program can use the error-returning functions directly.
package harness

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
)

// Binaries are the programs a test runs.
type Binaries struct {
	Agentmsg string // the CLI under test
	Standin  string // the stand-in agent
}

var (
	buildOnce sync.Once
	built     Binaries
	buildDir  string
	buildErr  error
)

// Build compiles agentmsg and the stand-in once per process into a temp dir
// that Cleanup removes. It must run inside the module (any directory of it).
func Build() (Binaries, error) {
	buildOnce.Do(func() {
		buildDir, buildErr = os.MkdirTemp("", "agentmsg-e2e-bin")
		if buildErr != nil {
			return
		}
		// One go build for both: with -o DIR/ each main package is written
		// under the last element of its import path.
		cmd := exec.Command("go", "build", "-o", buildDir+string(filepath.Separator),
			"github.com/agentmsg/agentmsg", "github.com/agentmsg/agentmsg/e2e/standin")
		if out, err := cmd.CombinedOutput(); err != nil {
			buildErr = fmt.Errorf("building agentmsg and the stand-in: %v\n%s", err, out)
			return
		}
		built = Binaries{
			Agentmsg: filepath.Join(buildDir, "agentmsg"),
			Standin:  filepath.Join(buildDir, "standin"),
		}
	})
	return built, buildErr
}

// Cleanup removes what Build made. Call it once, after the last test (from
// TestMain, or at the end of a benchmark program).
func Cleanup() {
	if buildDir != "" {
		os.RemoveAll(buildDir)
	}
}
