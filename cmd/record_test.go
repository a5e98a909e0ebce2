package cmd

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/agentmsg/agentmsg/delivery"
	"github.com/agentmsg/agentmsg/dispatch"
	"github.com/agentmsg/agentmsg/lock"
	"github.com/agentmsg/agentmsg/mailbox"
	"github.com/agentmsg/agentmsg/tmux"
	"github.com/agentmsg/agentmsg/tmux/tmuxtest"
)

type fakeServer = tmuxtest.Server

// fullDisk is a fake tmux server on a machine whose disk fills up as the
// agent is told to submit: from then on the inbox cannot be written (its
// lock file becomes a directory, which stops root too).
type fullDisk struct {
	*fakeServer
	lockFile string
	full     bool
}

func (f *fullDisk) SendBytes(ctx context.Context, pane string, b ...byte) error {
	if !f.full {
		f.full = true
		if err := os.Remove(f.lockFile); err != nil && !os.IsNotExist(err) {
			return err
		}
		if err := os.Mkdir(f.lockFile, 0o700); err != nil {
			return err
		}
	}
	return f.fakeServer.SendBytes(ctx, pane, b...)
}

// A send whose last record fails (a full disk) exits non-zero and says in
// --json what the inbox really holds (typing), never "submitted".
func TestSendReportsAFailedRecord(t *testing.T) {
	root := t.TempDir()
	f, out, errOut := testFactory(map[string]string{
		"AGENTMSG_FROM": "lead", "AGENTMSG_HOME": root, "XDG_CONFIG_HOME": t.TempDir(),
	})
	disk := &fullDisk{fakeServer: tmuxtest.New("agent-alpha-ana"), lockFile: filepath.Join(root, "teams", "alpha", "mailbox", "ana.lock")}
	f.Dispatcher = func() (*dispatch.Dispatcher, error) {
		opts := delivery.DefaultOptions()
		opts.Settle, opts.Poll = time.Millisecond, time.Millisecond
		return &dispatch.Dispatcher{Tmux: disk, Locks: lock.Dir{Path: t.TempDir()}, Clock: tmuxtest.Clock{}, Opts: opts}, nil
	}
	f.Mailbox = func() (*mailbox.Store, error) { return mailbox.New(root), nil }
	code := Run(context.Background(), f, []string{"--json", "send", "alpha", "ana", "hello"})
	var rep struct {
		Verdict  string `json:"verdict"`
		Stored   string `json:"stored"`
		ExitCode int    `json:"exit_code"`
		Error    string `json:"error"`
	}
	if err := json.Unmarshal(out.Bytes(), &rep); err != nil {
		t.Fatalf("%v\nstdout: %s\nstderr: %s", err, out, errOut)
	}
	if code != ExitError || rep.ExitCode != ExitError || rep.Stored != "typing" || !strings.Contains(rep.Error, "recording that in the inbox failed") {
		t.Fatalf("exit %d, report %+v; want exit 1, stored typing, and the error\nstderr: %s", code, rep, errOut)
	}
	if !strings.Contains(errOut.String(), "recording that in the inbox failed") {
		t.Errorf("stderr does not say the record failed:\n%s", errOut)
	}
}

func (f *fullDisk) Pinned(tmux.Pane) tmux.Client { return f }
