package claudeharness

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/agentmsg/agentmsg/e2e/fakeapi"
	"github.com/agentmsg/agentmsg/e2e/harness"
)

// These tests run the built agentmsg against the real Claude Code, offline
// (see NOTES.md). The fake API's request log, and the hooks' receipts,
// decide pass or fail: never the screen.

// live is a private tmux server with one real Claude Code in session
// agent-e2e-claude (team e2e, agent claude), and the agentmsg under test.
type live struct {
	*rig
	bin   string // agentmsg
	state string // agentmsg's state dir (mailbox, receipts)
	sock  string
}

func newLive(t *testing.T, hooks bool) *live { return newLiveShell(t, hooks, false) }

// newLiveShell starts Claude Code; keepShell runs it under a shell that
// stays after it exits (as in a person's pane), which makes the shell the
// pane's foreground command, and not Claude's.
func newLiveShell(t *testing.T, hooks, keepShell bool) *live {
	t.Helper()
	claude := claudeFor(t)
	bins, err := harness.Build()
	if err != nil {
		t.Fatal(err)
	}
	dir, err := os.MkdirTemp("", "amc")
	if err != nil {
		t.Fatal(err)
	}
	l := &live{rig: &rig{t: t, dir: dir}, bin: bins.Agentmsg, state: filepath.Join(dir, "state"), sock: filepath.Join(dir, "s")}
	t.Cleanup(func() {
		if l.agent != nil {
			_ = l.agent.Close()
			_, _ = l.agent.Tmux("kill-server")
		}
		if l.api != nil {
			_ = l.api.Close()
		}
		_ = harness.RemoveSettled(dir)
	})
	if l.api, err = fakeapi.New(fakeapi.Config{LogPath: filepath.Join(dir, "api.jsonl")}); err != nil {
		t.Fatal(err)
	}
	if err := l.api.Start(); err != nil {
		t.Fatal(err)
	}
	work := filepath.Join(dir, "work")
	if hooks {
		// Our own hook log beside agentmsg's, to compare the two.
		if err := WriteHookSettings(work, filepath.Join(dir, "hooks.jsonl")); err != nil {
			t.Fatal(err)
		}
		if res := l.run("hooks", "install", "claude", "--dir", work); res.code != 0 {
			t.Fatalf("hooks install: %s", res)
		}
	}
	// Its hooks lock where this test's agentmsg does (runStdin).
	l.agent, err = Start(Options{Claude: claude, Socket: l.sock, Root: dir, APIURL: l.api.URL(), KeepShell: keepShell,
		RuntimeDir: filepath.Join(dir, "run")})
	if err != nil {
		_ = exec.Command(harness.TmuxBin(), "-S", l.sock, "kill-server").Run()
		t.Fatal(err)
	}
	return l
}

type result struct {
	stdout, stderr string
	code           int
	took           time.Duration
}

func (r result) String() string {
	return fmt.Sprintf("exit %d after %v\nstdout:\n%s\nstderr:\n%s", r.code, r.took.Round(time.Millisecond), r.stdout, r.stderr)
}

// run runs agentmsg -S SOCK args with its state inside the test's dir.
func (l *live) run(args ...string) result {
	l.t.Helper()
	return l.runStdin("", args...)
}

func (l *live) runStdin(stdin string, args ...string) result {
	l.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, l.bin, append([]string{"-S", l.sock}, args...)...)
	var env []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "TMUX") && !strings.HasPrefix(kv, "AGENTMSG_") && !strings.HasPrefix(kv, "XDG_") {
			env = append(env, kv)
		}
	}
	cmd.Env = append(env, "AGENTMSG_FROM=tester", "XDG_STATE_HOME="+l.state,
		"XDG_CONFIG_HOME="+filepath.Join(l.dir, "config"), "XDG_RUNTIME_DIR="+filepath.Join(l.dir, "run"))
	var out, errOut bytes.Buffer
	cmd.Stdin = strings.NewReader(stdin)
	cmd.Stdout, cmd.Stderr = &out, &errOut
	start := time.Now()
	err := cmd.Run()
	res := result{stdout: out.String(), stderr: errOut.String(), took: time.Since(start)}
	var ee *exec.ExitError
	switch {
	case err == nil:
	case errors.As(err, &ee):
		res.code = ee.ExitCode()
	default:
		l.t.Fatalf("agentmsg %v: %v", args, err)
	}
	return res
}

// send runs `--json send FLAGS... e2e claude TEXT` (TEXT the last
// argument) and decodes the report.
func (l *live) send(flagsAndText ...string) (harness.SendReport, result) {
	l.t.Helper()
	n := len(flagsAndText)
	args := append([]string{"--json", "send"}, flagsAndText[:n-1]...)
	res := l.run(append(args, "e2e", "claude", flagsAndText[n-1])...)
	rep, err := harness.Decode[harness.SendReport](res.stdout)
	if err != nil {
		l.t.Fatalf("%v\n%s", err, res)
	}
	return rep, res
}

func (l *live) prompts() []string { return l.api.Prompts() }

func TestLiveIdleIsSubmitted(t *testing.T) {
	l := newLive(t, false)
	rep, res := l.send("review PR 12")
	if res.code != 0 || rep.Verdict != "submitted" {
		t.Fatalf("want submitted: %s", res)
	}
	got := l.waitPrompt(1)
	if want := rep.ID + ": review PR 12"; got.Text != want {
		t.Errorf("the API got %q, want %q", got.Text, want)
	}
	// Known by its command, so trusted to queue while busy.
	if doc := l.run("doctor", "e2e", "claude"); !strings.Contains(doc.stdout, "profile   claude (foreground command claude)") {
		t.Errorf("doctor:\n%s", doc.stdout)
	}
}

func TestLiveBusyIsQueuedThenRun(t *testing.T) {
	l := newLive(t, false)
	l.set(fakeapi.Control{Mode: fakeapi.ModeSlow, SlowSeconds: 3})
	first, res := l.send("a long task")
	if res.code != 0 || first.Verdict != "submitted" {
		t.Fatalf("first: %s", res)
	}
	l.waitPrompt(1)
	l.wait("busy", IsBusy)
	rep, res := l.send("--while-busy", "next, when you are done")
	if res.code != 0 || rep.Verdict != "queued" {
		t.Fatalf("want queued while busy (--while-busy): %s", res)
	}
	if n := len(l.prompts()); n != 1 {
		t.Errorf("the queued message reached the API before the turn ended (%d prompts)", n)
	}
	got := l.waitPrompt(2)
	if !strings.Contains(got.Text, rep.ID+": next, when you are done") {
		t.Errorf("second prompt %q, want the queued message", got.Text)
	}
	// By default (and with --wait-idle) a send waits for the turn to end.
	l.set(fakeapi.Control{Mode: fakeapi.ModeSlow, SlowSeconds: 2})
	if _, res := l.send("another long one"); res.code != 0 {
		t.Fatalf("%s", res)
	}
	l.waitPrompt(3)
	l.wait("busy", IsBusy)
	rep, res = l.send("after the turn")
	if res.code != 0 || rep.Verdict != "submitted" {
		t.Fatalf("want submitted after the turn: %s", res)
	}
}

// The safety the whole project exists for: a permission dialog is never
// answered. The command the agent asked to run does not run.
func TestLivePermissionDialogIsNeverAnswered(t *testing.T) {
	l := newLive(t, false)
	ran := filepath.Join(l.dir, "ran")
	l.set(fakeapi.Control{Mode: fakeapi.ModeBash, BashCommand: "touch " + ran})
	if _, res := l.send("please run the script"); res.code != 0 {
		t.Fatalf("%s", res)
	}
	l.wait("the permission dialog", IsDialog)
	l.set(fakeapi.Control{Mode: fakeapi.ModeInstant})

	_, res := l.send("--no-queue", "--ready-timeout", "2s", "are you there?")
	if res.code != 4 {
		_, statErr := os.Stat(ran)
		screen, _ := l.agent.Capture()
		t.Fatalf("want exit 4 (not ready: a dialog): %s\nthe command ran: %v; prompts the API saw: %q\nscreen now:\n%s",
			res, statErr == nil, l.prompts(), screen)
	}
	// The default keeps it for later instead, and still presses nothing.
	rep, res := l.send("--ready-timeout", "1s", "are you there?")
	if res.code != 0 || rep.Verdict != "deferred" {
		t.Fatalf("want deferred: %s", res)
	}
	time.Sleep(500 * time.Millisecond)
	if _, err := os.Stat(ran); err == nil {
		t.Fatal("the command the agent asked permission for has run")
	}
	screen, _ := l.agent.Capture()
	if !IsDialog(screen) {
		t.Fatalf("the dialog is gone:\n%s", screen)
	}
	for _, p := range l.prompts()[1:] {
		if strings.Contains(p, "are you there") {
			t.Errorf("a message reached the agent through the dialog: %q", p)
		}
	}
}

func TestLiveLongMessageIsSpooled(t *testing.T) {
	l := newLive(t, false)
	var b strings.Builder
	for i := 0; b.Len() < 5000; i++ {
		fmt.Fprintf(&b, "line %d of the design notes: keep the id short and early\n", i)
	}
	long := strings.TrimRight(b.String(), "\n")
	res := l.runStdin(long, "--json", "send", "e2e", "claude")
	rep, err := harness.Decode[harness.SendReport](res.stdout)
	if err != nil || rep.Verdict != "submitted" {
		t.Fatalf("want submitted: %v\n%s", err, res)
	}
	got := l.waitPrompt(1).Text
	wantLine := rep.ID + ": line 0 of the design notes: keep the id short and early … (full text: agentmsg read " + rep.ID + ")"
	if got != wantLine {
		t.Errorf("the agent got %q, want the pointer line %q", got, wantLine)
	}
	res = l.run("read", rep.ID)
	if res.code != 0 || strings.TrimRight(res.stdout, "\n") != long {
		t.Errorf("agentmsg read gave %d bytes (exit %d), want the %d-byte text", len(res.stdout), res.code, len(long))
	}
}

func TestLivePersonsDraftIsKept(t *testing.T) {
	l := newLive(t, false)
	if err := l.agent.Type("I was typing this by hand"); err != nil {
		t.Fatal(err)
	}
	l.wait("the draft", boxIs("I was typing this by hand"))
	_, res := l.send("--no-queue", "--ready-timeout", "1s", "do not touch the draft")
	if res.code != 4 {
		t.Fatalf("want exit 4: %s", res)
	}
	screen, _ := l.agent.Capture()
	if b, ok := FindBox(screen); !ok || b.Text != "I was typing this by hand" {
		t.Fatalf("the draft changed:\n%s", screen)
	}
	if p := l.prompts(); len(p) != 0 {
		t.Errorf("prompts reached the API: %q", p)
	}
}

func TestLiveHookReceipts(t *testing.T) {
	l := newLive(t, true)
	rep, res := l.send("with receipts")
	if res.code != 0 || rep.Verdict != "submitted" {
		t.Fatalf("%s", res)
	}
	l.waitPrompt(1)
	deadline := time.Now().Add(10 * time.Second)
	receipts := filepath.Join(l.state, "agentmsg", "receipts.log")
	for {
		data, _ := os.ReadFile(receipts)
		if slices.ContainsFunc(strings.Split(string(data), "\n"), func(line string) bool { return strings.HasPrefix(line, rep.ID+" %") }) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("no receipt for %s in %s: %q", rep.ID, receipts, data)
		}
		time.Sleep(20 * time.Millisecond)
	}
	// The settings kept our own hook beside agentmsg's.
	data, err := os.ReadFile(filepath.Join(l.dir, "work", ".claude", "settings.json"))
	if err != nil {
		t.Fatal(err)
	}
	var settings struct{ Hooks map[string][]any }
	if err := json.Unmarshal(data, &settings); err != nil || len(settings.Hooks["UserPromptSubmit"]) != 2 {
		t.Errorf("settings.json hooks: %s (%v)", data, err)
	}
}

// After /exit the pane shows a shell prompt under Claude's last frame: a
// message typed there would run as a command. Refused unless --force.
func TestLiveExitedAgentIsRefused(t *testing.T) {
	l := newLiveShell(t, false, true)
	if err := l.agent.Type("/exit"); err != nil {
		t.Fatal(err)
	}
	l.wait("the slash command in the box", boxIs("/exit"))
	l.enter()
	l.wait("the shell", func(s string) bool { return strings.Contains(s, "[claude exited") })
	time.Sleep(300 * time.Millisecond) // the shell's prompt
	ran := filepath.Join(l.dir, "ran")
	_, res := l.send("--no-queue", "--ready-timeout", "2s", "; touch "+ran)
	if res.code != 4 || !strings.Contains(res.stdout+res.stderr, "shell prompt") {
		t.Fatalf("want exit 4 naming the shell prompt: %s", res)
	}
	if _, err := os.Stat(ran); err == nil {
		t.Fatal("the message ran as a shell command")
	}
}

// A message quoting a dialog's choice sits in the transcript, above the
// box: the next message is submitted, not deferred as if a dialog were
// open (issue 17, item 11).
func TestLiveQuotedDialogIsNoDialog(t *testing.T) {
	l := newLive(t, false)
	quote, res := l.send("hi\n❯ 1. Yes")
	if res.code != 0 || quote.Verdict != "submitted" {
		t.Fatalf("the quoting message: %s", res)
	}
	l.waitPrompt(1)
	l.wait("ready after the reply", IsReady)
	next, res := l.send("--ready-timeout", "3s", "the next one")
	if res.code != 0 || next.Verdict != "submitted" {
		s, _ := l.agent.Capture()
		t.Fatalf("want submitted: %s\nscreen:\n%s", res, s)
	}
	if got := l.waitPrompt(2); got.Text != next.ID+": the next one" {
		t.Errorf("the API got %q", got.Text)
	}
}
