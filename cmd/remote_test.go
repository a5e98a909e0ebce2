package cmd

import (
	"bytes"
	"context"
	"net"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/agentmsg/agentmsg/app"
)

// Every variable the product reads by name reaches a forwarded command,
// or is named here with the reason it does not: a variable left out would
// make a command act differently in the daemon than it does here.
func TestForwardedEnvCoversWhatCommandsRead(t *testing.T) {
	notForwarded := map[string]string{
		"AGENTMSG_MCP_TOKEN": "a secret; the daemon's own MCP endpoint reads it from the request, and no forwarded command does",
	}
	read := regexp.MustCompile(`(?:LookupEnv|lookupEnv|Getenv|lookup)\("([A-Z][A-Z0-9_]*)"\)`)
	root := ".."
	found := map[string]string{}
	err := filepath.WalkDir(root, func(path string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && (d.Name() == "e2e" || d.Name() == "scripts" || strings.HasPrefix(d.Name(), ".")) && path != root {
			return filepath.SkipDir
		}
		if d.IsDir() || !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return nil
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		for _, m := range read.FindAllSubmatch(b, -1) {
			found[string(m[1])] = path
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"USER", "LOGNAME"} { // read in a loop over names (cmd/identity.go)
		found[k] = "cmd/identity.go"
	}
	if len(found) < 10 {
		t.Fatalf("found only %d variables read: %v", len(found), found)
	}
	for k, where := range found {
		if _, ok := notForwarded[k]; ok {
			if forwardedVar(k) {
				t.Errorf("%s is forwarded, but should not be: %s", k, notForwarded[k])
			}
			continue
		}
		if !forwardedVar(k) {
			t.Errorf("%s (read in %s) does not reach a forwarded command: add it to forwardedVars, or to notForwarded here with why", k, where)
		}
	}
}

// A forwarded command gets what agentmsg reads and nothing else: never
// the API keys and tokens of the caller's other programs.
func TestForwardedEnvLeavesTheRestBehind(t *testing.T) {
	env := []string{"HOME=/h", "TMUX=/tmp/tmux-0/default,1,0", "TMUX_PANE=%3", "AGENTMSG_FROM=ana",
		"ANTHROPIC_API_KEY=sk-ant-secret", "OPENAI_API_KEY=sk-secret", "AWS_SECRET_ACCESS_KEY=x",
		"AGENTMSG_MCP_TOKEN=amt_secret", "PATH=/usr/bin", "SSH_AUTH_SOCK=/tmp/ssh-x/agent.1"}
	got := forwardedEnv(env)
	want := []string{"HOME=/h", "TMUX=/tmp/tmux-0/default,1,0", "TMUX_PANE=%3", "AGENTMSG_FROM=ana"}
	if !slices.Equal(got, want) {
		t.Errorf("forwardedEnv = %q, want %q", got, want)
	}
}

// A socket in a mailbox root that is not the user's own, or one others
// may use, gets nothing: the command runs here (where the store refuses
// an unsafe root and says why), and the listener hears not one byte.
func TestForwardSendsNothingToASocketItCannotTrust(t *testing.T) {
	for _, tc := range []struct {
		name     string
		rootMode os.FileMode
		sockMode os.FileMode
		says     string
	}{
		{"a root others can write to", 0o777, 0o600, ""},
		{"a socket others may use", 0o700, 0o666, "may be used by other users"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir, err := os.MkdirTemp("", "fw")
			if err != nil {
				t.Fatal(err)
			}
			defer os.RemoveAll(dir)
			root := filepath.Join(dir, "r")
			if err := os.Mkdir(root, 0o700); err != nil {
				t.Fatal(err)
			}
			sock := app.DaemonSocket(root)
			l, err := net.Listen("unix", sock)
			if err != nil {
				t.Fatal(err)
			}
			defer l.Close()
			os.Chmod(sock, tc.sockMode)
			os.Chmod(root, tc.rootMode)
			heard := make(chan int, 16)
			go func() {
				for {
					c, err := l.Accept()
					if err != nil {
						return
					}
					c.SetReadDeadline(time.Now().Add(time.Second))
					n, _ := c.Read(make([]byte, 4096))
					heard <- n
					c.Close()
				}
			}()
			var errOut bytes.Buffer
			ios := &IOStreams{In: strings.NewReader(""), Out: &bytes.Buffer{}, ErrOut: &errOut}
			env := map[string]string{"AGENTMSG_HOME": root}
			lookup := func(k string) (string, bool) { v, ok := env[k]; return v, ok }
			if _, ok := forward(context.Background(), ios, lookup, []string{"AGENTMSG_HOME=" + root}, []string{"send", "t", "bob", "hi"}); ok {
				t.Fatal("the command was forwarded")
			}
			if !strings.Contains(errOut.String(), tc.says) {
				t.Errorf("stderr %q, want it to say %q", errOut.String(), tc.says)
			}
			select {
			case n := <-heard:
				if n > 0 {
					t.Errorf("the listener heard %d bytes", n)
				}
			case <-time.After(200 * time.Millisecond):
			}
		})
	}
}

// A daemon started on demand from an agent's pane is no agent: it gets
// neither that pane's identity nor the command's other secrets.
func TestAutoStartedDaemonLeavesThePanesIdentityBehind(t *testing.T) {
	got := daemonEnv([]string{"PATH=/usr/bin", "HOME=/h", "XDG_STATE_HOME=/h/s", "LC_ALL=C", "TMUX=/tmp/tmux-0/default,1,0",
		"TMUX_PANE=%3", "AGENTMSG_FROM=ana", "AGENTMSG_TEAM=alpha", "AGENTMSG_MCP_TOKEN=amt_x", "AGENTMSG_HOME=/h/m",
		"ANTHROPIC_API_KEY=sk-ant-x", "SSH_AUTH_SOCK=/tmp/ssh/agent"})
	want := []string{"PATH=/usr/bin", "HOME=/h", "XDG_STATE_HOME=/h/s", "LC_ALL=C", "TMUX=/tmp/tmux-0/default,1,0",
		"AGENTMSG_HOME=/h/m", "SSH_AUTH_SOCK=/tmp/ssh/agent"}
	if !slices.Equal(got, want) {
		t.Errorf("daemonEnv = %q, want %q", got, want)
	}
}
