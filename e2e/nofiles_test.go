package e2e

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/agentmsg/agentmsg/e2e/harness"
)

// An agentmsg killed at any moment leaves no file of message text behind
// (issue 10, item 11): killed broadcasts used to leave their paste files in
// $TMPDIR. Each broadcast here is killed a little later than the one before.
// Where a file cannot be made without a name (Darwin) a kill between
// making a temp file and unlinking it can leave it, empty (a CI run's
// portable step left one agentmsg-out-* before it used O_TMPFILE): never
// one with text.
func TestKilledSendersLeaveNoMessageFiles(t *testing.T) {
	t.Parallel()
	s := harness.NewTestServer(t)
	names := make([]string, 6)
	for i := range names {
		names[i] = fmt.Sprintf("agent-files-a%d", i)
	}
	s.StartAgents(names, harness.Style("plain")) // no pointer: the whole text is pasted
	tmp := filepath.Join(s.Dir, "tmp")
	if err := os.Mkdir(tmp, 0o700); err != nil {
		t.Fatal(err)
	}
	text := "secret " + strings.Repeat("payload line\n", 20000)
	for i := range 8 {
		cmd := exec.Command(s.Bins.Agentmsg, "-S", s.Socket, "broadcast", "files", "-")
		cmd.Env = append(s.Env(), "TMPDIR="+tmp)
		cmd.Stdin = strings.NewReader(text)
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		time.Sleep(time.Duration(10+15*i) * time.Millisecond)
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
	}
	// tmux clients of a killed agentmsg finish on their own; give them a
	// moment before looking.
	deadline := time.Now().Add(5 * time.Second)
	for {
		left, err := leftFiles(tmp)
		if err != nil {
			t.Fatal(err)
		}
		if len(left) == 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("killed broadcasts left %d files in TMPDIR: %v", len(left), left)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// leftFiles lists the files in dir that a killed agentmsg should not have
// left: any, where its files are anonymous; else any that is not empty
// (a temp file is unlinked as it is made, and written only after).
func leftFiles(dir string) ([]string, error) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	var left []string
	for _, e := range entries {
		info, err := e.Info()
		if err != nil {
			continue // gone as we looked
		}
		if !anonymousFiles && info.Mode().IsRegular() && info.Size() == 0 && strings.HasPrefix(e.Name(), "agentmsg-") {
			continue
		}
		left = append(left, fmt.Sprintf("%s (%d bytes)", e.Name(), info.Size()))
	}
	return left, nil
}
