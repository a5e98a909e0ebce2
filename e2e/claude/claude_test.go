package claudeharness

import (
	"bufio"
	"encoding/json"
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

// claudeFor returns the claude executable, or skips: the live test runs
// only with AGENTMSG_E2E_CLAUDE=1 (installing Claude Code through
// scripts/claude.sh if needed) or AGENTMSG_CLAUDE set to an executable.
func claudeFor(t *testing.T) string {
	t.Helper()
	if os.Getenv("AGENTMSG_E2E_CLAUDE") != "1" && os.Getenv("AGENTMSG_CLAUDE") == "" {
		t.Skip("set AGENTMSG_E2E_CLAUDE=1 to run against the real Claude Code")
	}
	if _, err := exec.LookPath(harness.TmuxBin()); err != nil {
		t.Skip("tmux not installed")
	}
	p, err := Find()
	if err != nil {
		p, err = Ensure()
	}
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// rig is one private tmux server, one fake API and one Claude Code.
type rig struct {
	t     *testing.T
	dir   string
	api   *fakeapi.Server
	agent *Agent
}

func newRig(t *testing.T) *rig {
	claude := claudeFor(t)
	v, err := Version(claude)
	if err != nil {
		t.Fatalf("claude --version: %v", err)
	}
	t.Logf("Claude Code %s", v)
	// A short dir: socket paths are limited to about 108 bytes.
	dir, err := os.MkdirTemp("", "amc")
	if err != nil {
		t.Fatal(err)
	}
	r := &rig{t: t, dir: dir}
	sock := filepath.Join(dir, "s")
	t.Cleanup(func() {
		if r.agent != nil {
			_ = r.agent.Close()
			_, _ = r.agent.Tmux("kill-server")
		}
		if r.api != nil {
			_ = r.api.Close()
		}
		_ = harness.RemoveSettled(dir)
	})
	r.api, err = fakeapi.New(fakeapi.Config{LogPath: filepath.Join(dir, "api.jsonl")})
	if err != nil {
		t.Fatal(err)
	}
	if err := r.api.Start(); err != nil {
		t.Fatal(err)
	}
	r.agent, err = Start(Options{
		Claude: claude, Socket: sock, Root: dir, APIURL: r.api.URL(),
		HookLog: filepath.Join(dir, "hooks.jsonl"), KeepShell: true,
	})
	if err != nil {
		// Start killed its session; make sure the server goes too.
		_ = exec.Command(harness.TmuxBin(), "-S", sock, "kill-server").Run()
		t.Fatal(err)
	}
	t.Logf("start to ready input box: %v", r.agent.Ready.Sub(r.agent.Started).Round(time.Millisecond))
	return r
}

func (r *rig) wait(what string, cond func(string) bool) string {
	r.t.Helper()
	s, err := r.agent.WaitFor(15*time.Second, cond)
	if err != nil {
		r.t.Fatalf("waiting for %s: %v\nscreen:\n%s", what, err, s)
	}
	return s
}

// waitPrompt waits until the fake API has logged n prompts and returns the
// nth.
func (r *rig) waitPrompt(n int) fakeapi.Record {
	r.t.Helper()
	deadline := time.Now().Add(15 * time.Second)
	for {
		var prompts []fakeapi.Record
		for _, rec := range r.api.Records() {
			if rec.Kind == fakeapi.KindPrompt {
				prompts = append(prompts, rec)
			}
		}
		if len(prompts) >= n {
			return prompts[n-1]
		}
		if time.Now().After(deadline) {
			s, _ := r.agent.Capture()
			r.t.Fatalf("prompt %d never reached the API; records %+v\nscreen:\n%s", n, r.api.Records(), s)
		}
		time.Sleep(2 * time.Millisecond)
	}
}

func (r *rig) paste(text string) {
	r.t.Helper()
	if err := r.agent.Paste(text); err != nil {
		r.t.Fatal(err)
	}
}

func (r *rig) enter() time.Time {
	r.t.Helper()
	at := time.Now()
	if err := r.agent.Enter(); err != nil {
		r.t.Fatal(err)
	}
	return at
}

// answer presses Enter in a dialog until it closes, as a person presses a
// key again that seemed not taken: Claude Code 2.1.332 drops the keys of a
// moment after a dialog shows, and an Enter pressed at once was lost.
func (r *rig) answer(what string) {
	r.t.Helper()
	for try := 0; try < 5; try++ {
		r.enter()
		if _, err := r.agent.WaitFor(2*time.Second, func(s string) bool { return !IsDialog(s) }); err == nil {
			return
		}
	}
	s, _ := r.agent.Capture()
	r.t.Fatalf("%s stayed after Enter was pressed 5 times:\n%s", what, s)
}

func (r *rig) set(c fakeapi.Control) {
	r.t.Helper()
	if err := r.api.Set(c); err != nil {
		r.t.Fatal(err)
	}
}

func boxIs(text string) func(string) bool {
	return func(s string) bool { b, ok := FindBox(s); return ok && b.Text == text }
}

// TestClaudeCodeLive walks the real Claude Code through the states agentmsg
// meets, checking the screen helpers and the fake API's log against each
// other, and logs the timings.
func TestClaudeCodeLive(t *testing.T) {
	r := newRig(t)
	n := 0

	// Submit to an idle agent, a few times, timing Enter -> API.
	var lat []time.Duration
	for i := 1; i <= 5; i++ {
		msg := fmt.Sprintf("MSG_%04d: hello %d", i, i)
		r.paste(msg)
		r.wait("the text in the box", boxIs(msg))
		at := r.enter()
		n++
		rec := r.waitPrompt(n)
		if rec.Text != msg {
			t.Fatalf("API got %q, want %q", rec.Text, msg)
		}
		lat = append(lat, rec.T.Sub(at))
		r.wait("ready again", IsReady)
	}
	slices.Sort(lat)
	t.Logf("Enter to prompt at the API: min %v median %v max %v", lat[0], lat[len(lat)/2], lat[len(lat)-1])

	// The UserPromptSubmit hook ran, offline, with the prompt.
	hooks := readHooks(t, filepath.Join(r.dir, "hooks.jsonl"))
	var submits []string
	for _, h := range hooks {
		if h["hook_event_name"] == "UserPromptSubmit" {
			submits = append(submits, fmt.Sprint(h["prompt"]))
		}
	}
	if len(submits) != 5 || submits[0] != "MSG_0001: hello 1" {
		t.Errorf("UserPromptSubmit hook saw %q", submits)
	}

	// Busy, then a message queued behind the running turn.
	r.set(fakeapi.Control{Mode: fakeapi.ModeSlow, SlowSeconds: 3})
	r.paste("MSG_0100: slow")
	r.wait("the text in the box", boxIs("MSG_0100: slow"))
	r.enter()
	n++
	r.waitPrompt(n)
	r.wait("busy", IsBusy)
	r.paste("MSG_0101: while busy")
	r.wait("the text in the box while busy", func(s string) bool { return boxIs("MSG_0101: while busy")(s) && IsBusy(s) })
	r.enter()
	r.wait("queued", IsQueued)
	if p := r.api.Prompts(); len(p) != n {
		t.Errorf("the queued message reached the API early: %q", p)
	}
	n++
	if rec := r.waitPrompt(n); rec.Text != "MSG_0101: while busy" {
		t.Errorf("queued prompt arrived as %q", rec.Text)
	}
	r.set(fakeapi.Control{Mode: fakeapi.ModeInstant})
	r.wait("ready after the queue ran", IsReady)

	// A permission dialog for a Bash command; Enter answers "1. Yes" (2.1.332
	// adds "3. Yes, and switch to auto mode" and a Tip line above).
	ran := filepath.Join(r.dir, "ran")
	r.set(fakeapi.Control{Mode: fakeapi.ModeBash, BashCommand: "touch " + ran})
	r.paste("MSG_0200: run it")
	r.wait("the text in the box", boxIs("MSG_0200: run it"))
	r.enter()
	n++
	r.waitPrompt(n)
	r.wait("the permission dialog", IsDialog)
	if _, err := os.Stat(ran); err == nil {
		t.Fatal("the command ran before it was approved")
	}
	r.answer("the permission dialog")
	r.wait("ready after the tool ran", IsReady)
	if _, err := os.Stat(ran); err != nil {
		t.Errorf("approved command did not run: %v", err)
	}
	r.set(fakeapi.Control{Mode: fakeapi.ModeInstant})

	// A long paste folds to a label; the API gets it whole.
	long := "MSG_0300: long" + strings.Repeat("\nline of a long message", 11)
	r.paste(long)
	r.wait("the paste label", func(s string) bool {
		b, ok := FindBox(s)
		return ok && strings.HasPrefix(b.Text, PastedLabel) && strings.HasSuffix(b.Text, "+11 lines]")
	})
	r.enter()
	n++
	if rec := r.waitPrompt(n); rec.Text != long {
		t.Errorf("long paste arrived as %q", rec.Text)
	}
	r.wait("ready", IsReady)

	// A person's draft survives a message when stashed with C-s: it comes
	// back into the box after the submit.
	if err := r.agent.Type("a draft"); err != nil {
		t.Fatal(err)
	}
	r.wait("the draft", boxIs("a draft"))
	if err := r.agent.Keys("C-s"); err != nil {
		t.Fatal(err)
	}
	// 2.1.197's status line then ends with "› stashed"; 2.1.332 showed
	// it only for a moment (once not within 15 s), so the empty box tells.
	r.wait("the draft stashed", func(s string) bool {
		b, ok := FindBox(s)
		return ok && b.Text == ""
	})
	r.paste("MSG_0400: over a stash")
	r.wait("the text in the box", boxIs("MSG_0400: over a stash"))
	r.enter()
	n++
	if rec := r.waitPrompt(n); rec.Text != "MSG_0400: over a stash" {
		t.Errorf("got %q", rec.Text)
	}
	// The draft is back at once, while the turn still runs (an Esc now
	// would interrupt the turn, not clear the box); the person can submit
	// it afterwards.
	r.wait("the draft back", boxIs("a draft"))
	r.wait("the turn over", func(s string) bool { return boxIs("a draft")(s) && !IsBusy(s) })
	r.enter()
	n++
	if rec := r.waitPrompt(n); rec.Text != "a draft" {
		t.Errorf("the draft arrived as %q", rec.Text)
	}
	r.wait("ready", IsReady)

	// /exit goes back to the shell.
	r.paste("/exit")
	r.wait("/exit in the box", boxIs("/exit"))
	r.enter()
	r.wait("the shell", func(s string) bool { return strings.Contains(s, "[claude exited 0]") })
	if p := r.api.Prompts(); len(p) != n {
		t.Errorf("the API got %d prompts, want %d: %q", len(p), n, p)
	}
}

func readHooks(t *testing.T, path string) []map[string]any {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatalf("hook log: %v", err)
	}
	defer f.Close()
	var out []map[string]any
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		if strings.TrimSpace(sc.Text()) == "" {
			continue
		}
		var m map[string]any
		if err := json.Unmarshal(sc.Bytes(), &m); err != nil {
			t.Fatalf("hook log line %q: %v", sc.Text(), err)
		}
		out = append(out, m)
	}
	return out
}
