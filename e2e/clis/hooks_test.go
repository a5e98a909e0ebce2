package clisharness

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/agentmsg/agentmsg/delivery"
	"github.com/agentmsg/agentmsg/e2e/fakeapi"
	"github.com/agentmsg/agentmsg/e2e/harness"
)

// newHooked starts the CLI with agentmsg's hooks installed in its project
// (agentmsg hooks install CLI --dir WORK, before the CLI starts: it reads
// its hooks at start). Codex then asks a person to review the new hooks:
// agentmsg never answers that, the test does, as the person would.
func newHooked(t *testing.T, cli string) *live {
	t.Helper()
	l := newLive(t, cli, func(o *Options) {
		bins, err := harness.Build()
		if err != nil {
			t.Fatal(err)
		}
		// The same agentmsg, state and server as the live one newLive makes.
		pre := &live{t: t, cli: cli, dir: o.Root, bin: bins.Agentmsg, state: filepath.Join(o.Root, "state"), sock: o.Socket}
		if res := pre.run("hooks", "install", cli, "--dir", filepath.Join(o.Root, "work")); res.code != 0 {
			t.Fatalf("hooks install %s: %s", cli, res)
		}
		if cli == Codex {
			o.Ready = func(lines []string) bool { return strings.Contains(strings.Join(lines, "\n"), "Hooks need review") }
		}
	})
	if cli == Codex {
		if rd, screen, _ := l.agent.Read(); rd.State != delivery.Dialog {
			t.Fatalf("Codex's hook review is not read as a dialog (%+v):\n%s", rd, screen)
		}
		// The person trusts the hooks; Codex records that in its config.
		l.choose("› 2. Trust all and continue")
		l.waitState("ready after the review", delivery.Ready)
		cfg, _ := os.ReadFile(filepath.Join(l.agent.Home, ".codex", "config.toml"))
		if strings.Count(string(cfg), "trusted_hash") != 2 {
			t.Errorf("Codex did not record trust for both hooks:\n%s", cfg)
		}
	}
	return l
}

// receipts are the ids the prompt-submit hook recorded (each line: the
// id, then the pane and server it was recorded in).
func (l *live) receipts() []string {
	data, _ := os.ReadFile(filepath.Join(l.state, "agentmsg", "receipts.log"))
	var ids []string
	for line := range strings.SplitSeq(strings.TrimSpace(string(data)), "\n") {
		if id, _, _ := strings.Cut(line, " "); id != "" {
			ids = append(ids, id)
		}
	}
	return ids
}

func (l *live) waitReceipt(id string) {
	l.t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !slices.Contains(l.receipts(), id) {
		if time.Now().After(deadline) {
			l.t.Fatalf("no receipt for %s: %q", id, l.receipts())
		}
		time.Sleep(20 * time.Millisecond)
	}
}

var leadingID = regexp.MustCompile(`^MSG_[A-Z0-9_]+_[0-9a-f]{8}`)

// With agentmsg's hooks installed, each CLI's prompt-submit hook records a
// receipt for exactly the messages that reached the model, and its
// turn-end hook delivers a message kept while the agent was busy, with no
// one running agentmsg deliver.
func TestLiveHooks(t *testing.T) {
	for _, cli := range []string{Codex, Gemini, Qwen} { // Claude Code's: e2e/claude
		t.Run(cli, func(t *testing.T) {
			l := newHooked(t, cli)

			rep, res := l.send("with receipts")
			if res.code != 0 || (rep.Verdict != "submitted" && rep.Verdict != "queued") {
				t.Fatalf("want submitted (or queued while Gemini initialises): %s", res)
			}
			l.waitArrived(rep.ID)
			l.waitReceipt(rep.ID)

			// A turn that lasts; a message that will not wait for it.
			l.set(fakeapi.Control{Mode: fakeapi.ModeSlow, SlowSeconds: 6})
			long, res := l.send("a long task")
			if res.code != 0 {
				t.Fatalf("%s", res)
			}
			l.waitState("busy", delivery.Busy)
			kept, res := l.send("kept until the turn ends", "--wait-idle", "--ready-timeout", "1s")
			if res.code != 0 || kept.Verdict != "deferred" {
				t.Fatalf("want deferred while busy: %s", res)
			}
			l.set(fakeapi.Control{Mode: fakeapi.ModeInstant})
			// Nobody runs deliver here: the turn-end hook does.
			got := l.waitArrived(kept.ID)
			if !strings.HasPrefix(got.Text, kept.ID+": kept until the turn ends") {
				t.Errorf("arrived as %q", got.Text)
			}
			l.waitReceipt(kept.ID)
			if n := len(l.with(long.ID)); n != 1 {
				t.Errorf("the long task arrived %d times", n)
			}

			// Receipts: exactly the messages the model got, each once.
			var sent []string
			for _, p := range l.prompts() {
				if id := leadingID.FindString(p.Text); id != "" {
					sent = append(sent, id)
				}
			}
			got2 := l.receipts()
			slices.Sort(sent)
			slices.Sort(got2)
			if !slices.Equal(sent, got2) {
				t.Errorf("receipts %q, want the ids that reached the API %q", got2, sent)
			}
			// The hooks' agentmsg took its locks where the senders take
			// theirs (the CLI passed XDG_RUNTIME_DIR on), never under the
			// agent's own TMPDIR.
			if _, err := os.Stat(filepath.Join(l.agent.Home, "tmp", fmt.Sprintf("agentmsg-%d", os.Getuid()))); err == nil {
				t.Errorf("the hooks' agentmsg locked under the agent's TMPDIR, not the senders' XDG_RUNTIME_DIR")
			}
		})
	}
}
