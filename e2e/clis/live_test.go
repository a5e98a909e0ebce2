package clisharness

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/agentmsg/agentmsg/delivery"
	"github.com/agentmsg/agentmsg/e2e/fakeapi"
	"github.com/agentmsg/agentmsg/e2e/harness"
	"github.com/agentmsg/agentmsg/internal/shell"
)

// These tests run the built agentmsg against the real Claude Code, Codex,
// Gemini CLI and Qwen Code, offline. The fake API's log of prompts decides pass or fail, never the
// screen. They run one CLI at a time (Node CLIs are heavy).

// exeFor returns the CLI's executable, or skips: the live tests run only
// with AGENTMSG_E2E_CLIS=1 (installing through scripts/clis.sh if needed),
// AGENTMSG_<CLI> set to an executable, or for Claude Code also
// AGENTMSG_E2E_CLAUDE=1 (as e2e/claude); then only a missing npm skips.
func exeFor(t *testing.T, cli string) string {
	t.Helper()
	asked := os.Getenv("AGENTMSG_E2E_CLIS") == "1" || os.Getenv(envName(cli)) != "" ||
		(cli == Claude && os.Getenv("AGENTMSG_E2E_CLAUDE") == "1")
	if !asked {
		t.Skipf("set AGENTMSG_E2E_CLIS=1 to run against the real %s", cli)
	}
	if _, err := exec.LookPath("tmux"); err != nil {
		t.Skip("tmux not installed")
	}
	p, err := Executable(cli)
	if errors.Is(err, ErrNoNPM) {
		t.Skip(err)
	}
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// live is a private tmux server with one real CLI in session
// agent-e2e-CLI (team e2e, agent CLI), the fake API and the agentmsg under
// test.
type live struct {
	t     *testing.T
	cli   string
	dir   string
	api   *fakeapi.Server
	agent *Agent
	bin   string
	state string
	sock  string
}

func newLive(t *testing.T, cli string, set func(*Options)) *live {
	t.Helper()
	exe := exeFor(t, cli)
	bins, err := harness.Build()
	if err != nil {
		t.Fatal(err)
	}
	v, err := Version(exe)
	if err != nil {
		t.Fatalf("%s --version: %v", cli, err)
	}
	t.Logf("%s %s", cli, v)
	dir, err := os.MkdirTemp("", "amn") // short: socket paths are limited
	if err != nil {
		t.Fatal(err)
	}
	l := &live{t: t, cli: cli, dir: dir, bin: bins.Agentmsg, state: filepath.Join(dir, "state"), sock: filepath.Join(dir, "s")}
	t.Cleanup(func() {
		if l.agent != nil {
			if t.Failed() {
				s, _ := l.agent.Capture()
				t.Logf("screen at the end:\n%s", s)
				// What the fake API made of each request (a prompt is
				// delayed in slow mode, an internal call never is).
				if l.api != nil {
					var b strings.Builder
					for _, r := range l.api.Records() {
						fmt.Fprintf(&b, "%s %s kind=%s mode=%s tools=%d %.60q\n", r.T.Format("15:04:05.000"), r.Path, r.Kind, r.Mode, r.Tools, r.Text)
					}
					t.Logf("the fake API's requests:\n%s", b.String())
				}
			}
			_ = l.agent.Close()
		}
		_ = exec.Command("tmux", "-S", l.sock, "kill-server").Run()
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
	// The agent's hooks lock where this test's agentmsg does (AgentmsgEnv).
	o := Options{CLI: cli, Exe: exe, Socket: l.sock, Root: dir, APIURL: l.api.URL(), RuntimeDir: filepath.Join(dir, "runtime")}
	if set != nil {
		set(&o)
	}
	if l.agent, err = Start(o); err != nil {
		t.Fatal(err)
	}
	t.Logf("start to ready: %v", l.agent.Ready.Sub(l.agent.Started).Round(time.Millisecond))
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

func (l *live) run(args ...string) result { l.t.Helper(); return l.runStdin("", args...) }

// runStdin runs agentmsg -S SOCK args with its state in the test's dir.
func (l *live) runStdin(stdin string, args ...string) result {
	l.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 120*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, l.bin, append([]string{"-S", l.sock}, args...)...)
	cmd.Env = harness.AgentmsgEnv(l.dir, "tester") // its state in l.state
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

// choose answers a menu as a person would: it moves the cursor (a row
// starting with ❯ or ›) to the choice that holds want, then presses Enter.
// Where the cursor starts differs between versions: Claude Code 2.1.197's
// trust menu starts on "1. Yes, I trust this folder", 2.1.332's on "No,
// exit". A want that holds the cursor itself is found only once selected.
func (l *live) choose(want string) {
	l.t.Helper()
	screen, err := l.agent.Capture()
	for try := 0; try < 8 && err == nil; try++ {
		key, selected := menuKey(screen, want)
		if selected {
			err = l.agent.Enter()
			if err == nil {
				return
			}
			break
		}
		if err = l.agent.Keys(key); err != nil {
			break
		}
		before := screen
		// No change within the deadline (a key the menu dropped): try again.
		screen, _ = l.agent.WaitFor(3*time.Second, func(s string) bool { return s != before })
	}
	if err == nil {
		err = errors.New("the cursor never reached it")
	}
	s, _ := l.agent.Capture()
	l.t.Fatalf("choosing %q: %v\n%s", want, err, s)
}

// menuKey reads a menu on screen: whether the cursor is on the choice that
// holds want, else the key that moves it there (Down unless the cursor is
// below the choice).
func menuKey(screen, want string) (key string, selected bool) {
	lines := strings.Split(screen, "\n")
	at := -1
	for i, line := range lines {
		if strings.Contains(line, want) {
			at = i
		}
	}
	if at < 0 {
		return "Down", false
	}
	if isCursorRow(lines[at]) {
		return "", true
	}
	for _, line := range lines[at+1:] {
		if isCursorRow(line) {
			return "Up", false
		}
	}
	return "Down", false
}

// isCursorRow reports a menu row the cursor is on. The input box's ❯ is
// followed by a no-break space, a choice's by a plain one.
func isCursorRow(line string) bool {
	t := strings.TrimLeft(line, " ")
	return strings.HasPrefix(t, "❯ ") || strings.HasPrefix(t, "› ")
}

// checkDetected checks that doctor knows the CLI by its process: the Node
// CLIs run as "node" (their process's arguments name them), Claude Code as
// its own native binary (its command is "claude").
func (l *live) checkDetected() {
	l.t.Helper()
	doc := l.run("doctor", "e2e", l.cli)
	by := "foreground process " + l.cli
	if l.cli == Claude {
		by = "foreground "
	}
	if !strings.Contains(doc.stdout, "profile   "+l.cli+" ("+by) {
		l.t.Errorf("doctor does not know %s by its process:\n%s", l.cli, doc.stdout)
	}
}

// sendReport is `send --json`, with the profile and pointer fields.
type sendReport struct {
	harness.SendReport
	Profile string `json:"profile"`
	Pointer bool   `json:"pointer"`
}

// send runs `--json send FLAGS... e2e CLI` with the text on stdin.
func (l *live) send(text string, flags ...string) (sendReport, result) {
	l.t.Helper()
	args := append(append([]string{"--json", "send"}, flags...), "e2e", l.cli)
	res := l.runStdin(text, args...)
	rep, err := harness.Decode[sendReport](res.stdout)
	if err != nil {
		l.t.Fatalf("%v\n%s", err, res)
	}
	return rep, res
}

// prompts are the logged prompts.
func (l *live) prompts() []fakeapi.Record {
	var out []fakeapi.Record
	for _, r := range l.api.Records() {
		if r.Kind == fakeapi.KindPrompt {
			out = append(out, r)
		}
	}
	return out
}

// with returns the prompts that hold id.
func (l *live) with(id string) []fakeapi.Record {
	var out []fakeapi.Record
	for _, r := range l.prompts() {
		if strings.Contains(r.Text, id) {
			out = append(out, r)
		}
	}
	return out
}

// waitArrived waits until a prompt holding id reached the API, then until
// the agent is idle again, and checks that it arrived exactly once.
func (l *live) waitArrived(id string) fakeapi.Record {
	l.t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for len(l.with(id)) == 0 {
		if time.Now().After(deadline) {
			s, _ := l.agent.Capture()
			l.t.Fatalf("%s never reached the API; prompts %q\nscreen:\n%s", id, l.api.Prompts(), s)
		}
		time.Sleep(20 * time.Millisecond)
	}
	l.waitState("idle again", delivery.Ready)
	got := l.with(id)
	if len(got) != 1 {
		l.t.Errorf("%s reached the API %d times: %+v", id, len(got), got)
	}
	return got[0]
}

func (l *live) waitState(what string, st delivery.State) string {
	l.t.Helper()
	s, err := l.agent.WaitState(60*time.Second, st)
	if err != nil {
		l.t.Fatalf("waiting for %s (%s): %v\nscreen:\n%s", what, st, err, s)
	}
	return s
}

func (l *live) set(c fakeapi.Control) {
	l.t.Helper()
	if err := l.api.Set(c); err != nil {
		l.t.Fatal(err)
	}
}

// text makes a message of n lines.
func text(n int) string {
	var b strings.Builder
	for i := 1; i <= n; i++ {
		if i > 1 {
			b.WriteByte('\n')
		}
		fmt.Fprintf(&b, "line %d of %d: keep the id short and early", i, n)
	}
	return b.String()
}

// short makes a message of n short lines (about 10 bytes each).
func short(n int) string {
	var b strings.Builder
	for i := 1; i <= n; i++ {
		if i > 1 {
			b.WriteByte('\n')
		}
		fmt.Fprintf(&b, "short %d", i)
	}
	return b.String()
}

func fiveKB() string {
	var b strings.Builder
	for i := 0; b.Len() < 5000; i++ {
		fmt.Fprintf(&b, "line %d of the design notes: keep the id short and early\n", i)
	}
	return strings.TrimRight(b.String(), "\n")
}

// checkArrived checks what reached the API for one send: the whole text
// after the id, or the pointer line and `agentmsg read` giving it whole.
func (l *live) checkArrived(rep sendReport, msg string, got fakeapi.Record) {
	l.t.Helper()
	if rep.Pointer {
		want := rep.ID + ": " + strings.SplitN(msg, "\n", 2)[0]
		if !strings.HasPrefix(got.Text, want) || !strings.Contains(got.Text, "agentmsg read "+rep.ID) {
			l.t.Errorf("pointer arrived as %q", got.Text)
		}
		res := l.run("read", rep.ID)
		if res.code != 0 || strings.TrimRight(res.stdout, "\n") != msg {
			l.t.Errorf("agentmsg read %s gave %d bytes (exit %d), want the %d-byte text", rep.ID, len(res.stdout), res.code, len(msg))
		}
		return
	}
	if want := rep.ID + ": " + msg; got.Text != want {
		l.t.Errorf("the API got %q, want %q", got.Text, want)
	}
}

var clis = All

// terminal is a pane shape a case runs in.
type terminal struct {
	name      string
	h         int
	truecolor bool
}

// terminals: every case runs in 24 rows with 256 colours and in 50 rows
// with truecolor; the messages, where height and colours change most of
// what a reader sees, in all four.
var (
	terminals    = []terminal{{"24-256", 24, false}, {"50-truecolor", 50, true}}
	allTerminals = []terminal{{"24-256", 24, false}, {"24-truecolor", 24, true}, {"50-256", 50, false}, {"50-truecolor", 50, true}}
)

func (tm terminal) set(o *Options) { o.Width, o.Height, o.Truecolor = 100, tm.h, tm.truecolor }

// Messages of 1, 2, 12, 30 and 60 lines and of 5 KB each arrive exactly
// once, whole or as a pointer, at heights 24 and 50, with 256 colours and
// with truecolor, with the CLI started directly (its command is node) and
// known by its process. At the end a person's draft is kept.
func TestLiveMessages(t *testing.T) {
	for _, cli := range clis {
		for _, tm := range allTerminals {
			t.Run(cli+"/"+tm.name, func(t *testing.T) {
				l := newLive(t, cli, tm.set)
				if cmd, _ := l.agent.Command(); cmd != "node" {
					t.Logf("pane command %q", cmd)
				}
				l.checkDetected()
				list, err := harness.Decode[harness.ListReport](l.run("--json", "list").stdout)
				if err != nil || len(list.Agents) != 1 || list.Agents[0].State != "ready" {
					t.Errorf("list reads the idle %s as %+v (%v)", cli, list, err)
				}
				for _, m := range []struct {
					name, text string
				}{
					{"1 line", "review PR 12"},
					{"2 lines", text(2)},
					{"12 lines", text(12)},
					{"30 lines", text(30)},
					{"60 lines", text(60)},
					{"5 KB", fiveKB()},
					// Under Codex's 1,000-byte fold: typed whole, its
					// composer grows past 14 rows, then scrolls.
					{"24 short lines", short(24)},
					{"45 short lines", short(45)},
				} {
					rep, res := l.send(m.text)
					// Queued: Gemini takes prompts while it initialises
					// ("Prompts will be queued") and runs them after.
					if res.code != 0 || (rep.Verdict != "submitted" && rep.Verdict != "queued") {
						t.Errorf("%s: want submitted, got %q: %s", m.name, rep.Verdict, res)
						continue
					}
					got := l.waitArrived(rep.ID)
					l.checkArrived(rep, m.text, got)
					t.Logf("%s: %s, pointer %v, profile %s, %d presses, %v", m.name, rep.Verdict, rep.Pointer, rep.Profile, rep.Presses, res.took.Round(time.Millisecond))
				}
				// A person's draft: never touched, nothing sent.
				n := len(l.prompts())
				if err := l.agent.Type("I was typing this by hand"); err != nil {
					t.Fatal(err)
				}
				l.waitState("the draft", delivery.Draft)
				_, res := l.send("do not touch the draft", "--no-queue", "--ready-timeout", "1s")
				if res.code != 4 {
					t.Errorf("draft: want exit 4: %s", res)
				}
				rd, screen, _ := l.agent.Read()
				if rd.Box != "I was typing this by hand" {
					t.Errorf("the draft changed to %q:\n%s", rd.Box, screen)
				}
				if got := len(l.prompts()); got != n {
					t.Errorf("a prompt reached the API over the draft: %q", l.api.Prompts())
				}
			})
		}
	}
}

// Busy: with --while-busy a message sent during a turn is typed and taken (Gemini queues it,
// Codex steers the running turn with it) and arrives once; by default (--wait-idle)
// a send waits for the turn instead.
func TestLiveBusy(t *testing.T) {
	for _, cli := range clis {
		for _, tm := range terminals {
			t.Run(cli+"/"+tm.name, func(t *testing.T) { liveBusy(t, cli, tm) })
		}
	}
}

// longPhrase is the longest of Qwen Code 0.24.4's loading phrases: at 100
// columns its busy row's "esc to cancel" wraps onto the next row, which
// the reader once missed (1 phrase in 127; CI saw TestLiveBusy/qwen fail
// twice in 11 runs). The busy case always shows it.
const longPhrase = "I've seen things you people wouldn't believe... like a user who reads loading messages."

func liveBusy(t *testing.T, cli string, tm terminal) {
	l := newLive(t, cli, func(o *Options) {
		tm.set(o)
		o.LoadingPhrases = []string{longPhrase}
	})
	l.set(fakeapi.Control{Mode: fakeapi.ModeSlow, SlowSeconds: 8})
	first, res := l.send("a long task")
	if res.code != 0 || (first.Verdict != "submitted" && first.Verdict != "queued") {
		t.Fatalf("first: %s", res)
	}
	l.waitState("busy", delivery.Busy)
	rep, res := l.send("next, when you are done", "--while-busy")
	if res.code != 0 || (rep.Verdict != "queued" && rep.Verdict != "submitted") {
		t.Fatalf("want queued or submitted while busy (--while-busy): %s", res)
	}
	t.Logf("while busy: verdict %s after %v (%s)", rep.Verdict, res.took.Round(time.Millisecond), rep.Profile)
	l.set(fakeapi.Control{Mode: fakeapi.ModeInstant})
	got := l.waitArrived(rep.ID)
	if !strings.Contains(got.Text, rep.ID+": next, when you are done") {
		t.Errorf("the message arrived as %q", got.Text)
	}
	if len(l.with(first.ID)) != 1 {
		t.Errorf("the first message arrived %d times", len(l.with(first.ID)))
	}

	l.set(fakeapi.Control{Mode: fakeapi.ModeSlow, SlowSeconds: 4})
	third, res := l.send("another long one")
	if res.code != 0 {
		t.Fatalf("%s", res)
	}
	l.waitState("busy", delivery.Busy)
	rep, res = l.send("after the turn", "--wait-idle")
	// Qwen Code runs its memory subagent after each turn, with no
	// sign on screen, and queues what comes meanwhile.
	if res.code != 0 || (rep.Verdict != "submitted" && !(cli == Qwen && rep.Verdict == "queued")) {
		t.Fatalf("--wait-idle: want submitted after the turn, got %q: %s", rep.Verdict, res)
	}
	l.set(fakeapi.Control{Mode: fakeapi.ModeInstant})
	l.waitArrived(rep.ID)
	if got := l.with(third.ID); len(got) != 1 {
		t.Errorf("the third message arrived %d times", len(got))
	}
}

// A dialog or startup menu is never answered: the message is deferred,
// nothing is pressed, and deliver types it once the person has closed it.
// Each CLI's permission dialog opens for a shell command its (fake) model
// asks to run; Codex, whose tools offer no shell command to the fake model,
// shows its startup menu and its approval of an MCP tool call instead. The
// folder-trust menus at start are startup menus too.
func TestLiveDialogDeferred(t *testing.T) {
	for _, cli := range clis {
		for _, tm := range terminals {
			t.Run(cli+"/"+tm.name, func(t *testing.T) { liveDialog(t, cli, tm, "") })
		}
	}
	for _, tm := range terminals {
		t.Run(Codex+"/mcp-approval-"+tm.name, func(t *testing.T) { liveDialog(t, Codex, tm, "mcp") })
	}
	// Claude Code, Gemini CLI and Droid ask at their first start in a
	// folder whether to trust it. (Codex 0.169 and Qwen Code 0.24.4 started
	// in an untrusted folder without asking.) Gemini CLI is left out: once
	// trusted it restarts, and for a moment draws its box before it turns
	// bracketed paste on; a message typed then arrived as keystrokes (its
	// "?" opened the shortcuts help) and was left unsubmitted (NOTES.md).
	for _, cli := range []string{Claude, Droid} {
		t.Run(cli+"/trust-menu", func(t *testing.T) { liveDialog(t, cli, terminals[0], "trust") })
	}
}

// codexWithMCP is a pane command that registers agentmsg's MCP server with
// Codex as `mcp install codex` does, less its approval of agentmsg's tools
// (so Codex asks a person before each call), then runs Codex.
func codexWithMCP(t *testing.T, o *Options) {
	t.Helper()
	bins, err := harness.Build()
	if err != nil {
		t.Fatal(err)
	}
	script := filepath.Join(o.Root, "codex-with-mcp.sh")
	body := fmt.Sprintf(`#!/bin/sh
%s -S %s --team e2e --from codex mcp install codex --home "$HOME" >/dev/null 2>&1 || exit 1
sed -i '/^default_tools_approval_mode/d' "$CODEX_HOME/config.toml"
exec %s "$@"
`, shell.Quote(bins.Agentmsg), shell.Quote(o.Socket), shell.Quote(o.Exe))
	if err := os.WriteFile(script, []byte(body), 0o755); err != nil {
		t.Fatal(err)
	}
	o.Exe = script
}

func liveDialog(t *testing.T, cli string, tm terminal, kind string) {
	dialogReady := func(lines []string) bool { return Reader(cli).Read(lines).State == delivery.Dialog }
	var l *live
	ran := ""
	switch {
	case kind == "trust":
		l = newLive(t, cli, func(o *Options) { tm.set(o); o.Untrusted = true; o.Ready = dialogReady })
		t.Logf("the trust menu:\n%s", l.waitState("the trust menu", delivery.Dialog))
	case kind == "mcp":
		l = newLive(t, cli, func(o *Options) { tm.set(o); codexWithMCP(t, o) })
		l.set(fakeapi.Control{Scripts: []fakeapi.Script{{Marker: "check your messages",
			Calls: []fakeapi.Call{{Tool: "agentmsg__check_messages"}}, Reply: "checked"}}})
		if _, res := l.send("please check your messages"); res.code != 0 {
			t.Fatalf("%s", res)
		}
		t.Logf("the approval:\n%s", l.waitState("the approval", delivery.Dialog))
	case cli == Codex:
		// An older model: Codex opens its "Try new model" menu,
		// where Enter and Esc both answer.
		l = newLive(t, cli, func(o *Options) { tm.set(o); o.Model = "gpt-5.6-sol"; o.Ready = dialogReady })
	default:
		l = newLive(t, cli, tm.set)
		ran = filepath.Join(l.dir, "ran")
		l.set(fakeapi.Control{Mode: fakeapi.ModeBash, BashCommand: "touch " + ran})
		if _, res := l.send("please run the script"); res.code != 0 {
			t.Fatalf("%s", res)
		}
		l.waitState("the confirmation", delivery.Dialog)
		l.set(fakeapi.Control{Mode: fakeapi.ModeInstant})
	}
	before, _ := l.agent.Capture()
	n := len(l.prompts())
	rep, res := l.send("are you there?", "--ready-timeout", "2s")
	if res.code != 0 || rep.Verdict != "deferred" {
		t.Fatalf("want deferred: %s", res)
	}
	rd, screen, _ := l.agent.Read()
	if rd.State != delivery.Dialog {
		t.Fatalf("the dialog is gone (%+v):\nbefore:\n%s\nnow:\n%s", rd, before, screen)
	}
	if ran != "" {
		if _, err := os.Stat(ran); err == nil {
			t.Fatal("the command the agent asked permission for has run")
		}
	}
	if len(l.prompts()) != n {
		t.Fatalf("a prompt reached the API through the dialog: %q", l.api.Prompts())
	}
	// Still a dialog: a deliver pass presses nothing.
	if res := l.run("deliver", "--ready-timeout", "500ms"); res.code != 0 {
		t.Fatalf("deliver: %s", res)
	}
	if rd, _, _ := l.agent.Read(); rd.State != delivery.Dialog || len(l.prompts()) != n {
		t.Fatalf("deliver touched the dialog: %+v, prompts %q", rd, l.api.Prompts())
	}
	// The person closes it; deliver then types the message once.
	if kind == "trust" && cli == Claude {
		l.choose("Yes, I trust this folder")
	} else if kind == "trust" {
		// Droid's first choice trusts the folder.
		if err := l.agent.Enter(); err != nil {
			t.Fatal(err)
		}
	} else if cli == Codex && kind == "" {
		l.choose("› 2. Use existing model")
	} else if err := l.agent.Keys("Escape"); err != nil {
		t.Fatal(err)
	}
	l.waitState("ready after the dialog", delivery.Ready)
	if res := l.run("deliver"); res.code != 0 {
		t.Fatalf("deliver: %s", res)
	}
	got := l.waitArrived(rep.ID)
	if !strings.Contains(got.Text, rep.ID+": are you there?") {
		t.Errorf("delivered as %q", got.Text)
	}
	if res := l.run("deliver"); res.code != 0 {
		t.Fatalf("deliver: %s", res)
	}
	if got := l.with(rep.ID); len(got) != 1 {
		t.Errorf("delivered %d times", len(got))
	}
}

// Started through a shell wrapper (the pane's command is bash) the CLI is
// still known by its process; after it quits, the pane shows a shell
// prompt and a message is refused.
func TestLiveWrapperThenExited(t *testing.T) {
	for _, cli := range clis {
		t.Run(cli, func(t *testing.T) {
			l := newLive(t, cli, func(o *Options) { o.Wrapper = true; o.Width, o.Height = 80, 24 })
			if cmd, _ := l.agent.Command(); cmd != "bash" {
				t.Logf("pane command %q", cmd)
			}
			l.checkDetected()
			rep, res := l.send("through the wrapper")
			if res.code != 0 || (rep.Verdict != "submitted" && rep.Verdict != "queued") {
				t.Fatalf("want submitted (or queued while Gemini initialises): %s", res)
			}
			l.waitArrived(rep.ID)

			if err := l.agent.Type("/quit"); err != nil {
				t.Fatal(err)
			}
			// Claude Code opens its command list over it (/exit (quit)).
			if _, err := l.agent.WaitFor(5*time.Second, func(s string) bool { return strings.Contains(s, "/quit") }); err != nil {
				t.Fatal(err)
			}
			time.Sleep(300 * time.Millisecond) // past the paste-burst guard: a person's pace
			if err := l.agent.Enter(); err != nil {
				t.Fatal(err)
			}
			if s, err := l.agent.WaitFor(30*time.Second, func(s string) bool {
				return strings.Contains(s, "["+cli+" exited") && Reader(cli).Read(strings.Split(s, "\n")).Shell
			}); err != nil {
				t.Fatalf("no shell prompt after /quit: %v\n%s", err, s)
			}
			n := len(l.prompts())
			ran := filepath.Join(l.dir, "ran")
			_, res = l.send("; touch "+ran, "--no-queue", "--ready-timeout", "2s")
			if res.code != 4 || !strings.Contains(res.stdout+res.stderr, "shell prompt") {
				t.Fatalf("want exit 4 naming the shell prompt: %s", res)
			}
			if _, err := os.Stat(ran); err == nil {
				t.Fatal("the message ran as a shell command")
			}
			if len(l.prompts()) != n {
				t.Errorf("prompts after exit: %q", l.api.Prompts())
			}
		})
	}
}
