package cmd

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/agentmsg/agentmsg/app"
	"github.com/agentmsg/agentmsg/courier"
	"github.com/agentmsg/agentmsg/delivery"
	"github.com/agentmsg/agentmsg/dispatch"
	"github.com/agentmsg/agentmsg/profile"
	"github.com/agentmsg/agentmsg/target"
	"github.com/agentmsg/agentmsg/tmux"
)

// A message to another host's agent is described by what that host said,
// with no pane and no time of ours ("(pane , 0ms)").
func TestDescribeARemoteResult(t *testing.T) {
	tg, _ := target.New("alpha", "ana")
	for _, v := range []delivery.Verdict{delivery.Submitted, delivery.Queued} {
		r := courier.Result{Outcome: dispatch.Outcome{Target: tg, ID: "MSG_LEAD_0000000a", Verdict: v}, Host: "build-1"}
		got := describeResult(r)
		if strings.Contains(got, "pane ,") || strings.Contains(got, "0ms") || !strings.Contains(got, "build-1") {
			t.Errorf("%s on host build-1: %q; want the host named, no empty pane or time", v, got)
		}
	}
}

// agentmsg config shows every table a user can set: [serve], [alerts] and
// [hosts] as well as the settings.
func TestConfigShowsEveryTable(t *testing.T) {
	dir := t.TempDir()
	if err := os.MkdirAll(filepath.Join(dir, "agentmsg"), 0o755); err != nil {
		t.Fatal(err)
	}
	file := "[serve]\ntcp = \"127.0.0.1:7676\"\ntoken_file = \"" + filepath.Join(dir, "token") + "\"\n\n[alerts]\nmessage_wait = \"15m\"\n\n[hosts]\nname = \"build-1\"\n"
	if err := os.WriteFile(filepath.Join(dir, "agentmsg", "config.toml"), []byte(file), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, json := range []bool{false, true} {
		f, out, errOut := testFactory(map[string]string{"XDG_CONFIG_HOME": dir})
		args := []string{"config"}
		if json {
			args = append([]string{"--json"}, args...)
		}
		if code := Run(context.Background(), f, args); code != ExitOK {
			t.Fatalf("exit code %d: %s", code, errOut)
		}
		for _, want := range []string{"serve", "127.0.0.1:7676", "alerts", "15m", "hosts", "build-1"} {
			if !strings.Contains(out.String(), want) {
				t.Errorf("config (json %v) does not show %q:\n%s", json, want, out)
			}
		}
	}
}

// doctor's advice for a program with its own prompt run by an interpreter
// names the script, as the docs' myrepl does: commands = ["python3"]
// would read every python3 pane as that program.
func TestPromptAdviceNamesTheScript(t *testing.T) {
	py, err := exec.LookPath("python3")
	if err != nil || runtime.GOOS != "linux" {
		t.Skip("no python3, or no /proc to see it start")
	}
	script := filepath.Join(t.TempDir(), "myrepl.py")
	if err := os.WriteFile(script, []byte("while True:\n    input('my> ')\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(py, script)
	stdin, _ := cmd.StdinPipe()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { stdin.Close(); _ = cmd.Process.Kill(); _ = cmd.Wait() })
	// python3 may be a launcher (pyenv's) that execs the interpreter:
	// looked at once the script runs.
	deadline := time.Now().Add(10 * time.Second)
	for {
		b, _ := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", cmd.Process.Pid))
		argv0, _, _ := strings.Cut(string(b), "\x00")
		if strings.HasPrefix(filepath.Base(argv0), "python") || time.Now().After(deadline) {
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	in := dispatch.Inspection{Found: true, Pane: tmux.Pane{ID: "%1", Command: "python3", PID: cmd.Process.Pid},
		Profile: profile.Profile{Name: "python"}, Reading: delivery.Reading{State: delivery.Unknown}, Screen: []string{"my> "}}
	advice := strings.Join(promptAdvice(in), "\n")
	if !strings.Contains(advice, `commands = ["myrepl.py"]`) {
		t.Errorf("doctor's advice for python3 running myrepl.py:\n%s\nwant commands = [\"myrepl.py\"]", advice)
	}
}

// The serve start line names every place the daemon listens: the TCP
// listener too.
func TestServeSaysWhereItListens(t *testing.T) {
	dir := t.TempDir()
	f, _, errOut := testFactory(map[string]string{"AGENTMSG_HOME": dir})
	f.Serve = func(_ context.Context, _ app.Env, o ServeOptions) error {
		o.Ready(filepath.Join(dir, "serve.sock"), "127.0.0.1:7676")
		return nil
	}
	if code := Run(context.Background(), f, []string{"serve", "--tcp", "127.0.0.1:7676", "--token-file", filepath.Join(dir, "token")}); code != ExitOK {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	if !strings.Contains(errOut.String(), "serve.sock") || !strings.Contains(errOut.String(), "127.0.0.1:7676") {
		t.Errorf("the start line does not say both listeners:\n%s", errOut)
	}
}
