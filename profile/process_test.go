package profile

import (
	"strings"
	"testing"

	"github.com/agentmsg/agentmsg/internal/procs"
)

func TestIdentify(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		argv string // NUL-free: arguments separated by spaces
		want string
	}{
		{"node /root/.cache/agentmsg/gemini/node_modules/.bin/gemini", "gemini"},
		{"node /usr/lib/node_modules/@google/gemini-cli/bundle/gemini.js --yolo", "gemini"},
		{"node --no-warnings=DEP0040 /home/u/.npm/bin/gemini", "gemini"},
		{"node /root/.cache/agentmsg/codex/node_modules/.bin/codex --no-daemon", "codex"},
		{"/root/.cache/agentmsg/codex/node_modules/@openai/codex-linux-x64/vendor/x86_64-unknown-linux-musl/bin/codex --no-daemon", "codex"},
		{"node /usr/local/lib/node_modules/@qwen-code/qwen-code/cli.js", "qwen"},
		{"node /usr/bin/qwen", "qwen"},
		{"/usr/local/bin/claude --permission-mode default", "claude"},
		{"node /usr/lib/node_modules/@anthropic-ai/claude-code/cli.js", "claude"},
		{"node /root/.cache/agentmsg/droid/node_modules/.bin/droid", "droid"},
		{"/root/.cache/agentmsg/droid/node_modules/@factory/cli-linux-x64/bin/droid", "droid"},
		{"/usr/local/bin/droid --resume", "droid"},
		{"python3 /usr/local/bin/aider --model x", "aider"},
		{"node /srv/app/server.js", ""},
		{"node /srv/cli.js", ""},
		{"bash --norc -c \"$@\"; exec bash bash /root/.cache/agentmsg/codex/node_modules/.bin/codex", ""},
		{"vim gemini.md", ""},
		{"", ""},
	} {
		var argv []string
		if tt.argv != "" {
			argv = strings.Split(tt.argv, " ")
		}
		if got := Identify(argv); got != tt.want {
			t.Errorf("Identify(%q) = %q, want %q", tt.argv, got, tt.want)
		}
	}
}

// fakeTable is a process table: pid -> (ppid, pgrp, tpgid, argv). With
// lists, it lists children as Linux's kernel does; without, only All
// tells them, as on Darwin.
type fakeTable struct {
	procs map[int]proc
	lists bool
}

func (f fakeTable) Get(pid int) (procs.Proc, error) {
	p, ok := f.procs[pid]
	if !ok {
		return procs.Proc{}, procs.ErrNoProcess
	}
	return procs.Proc{PID: pid, PPID: p.ppid, PGID: p.pgrp, SID: p.pgrp, TPGID: p.tpgid, State: 'S', Comm: "a (b) c"}, nil
}

func (f fakeTable) All() ([]procs.Proc, error) {
	var out []procs.Proc
	for pid := range f.procs {
		p, _ := f.Get(pid)
		out = append(out, p)
	}
	return out, nil
}

func (f fakeTable) Children(pid int) ([]int, error) {
	if !f.lists {
		return nil, procs.ErrUnsupported
	}
	if _, ok := f.procs[pid]; !ok {
		return nil, procs.ErrNoProcess
	}
	var out []int
	for c, p := range f.procs {
		if p.ppid == pid {
			out = append(out, c)
		}
	}
	return out, nil
}

func (f fakeTable) Argv(pid int) ([]string, error) {
	p, ok := f.procs[pid]
	if !ok {
		return nil, procs.ErrNoProcess
	}
	return p.argv, nil
}

type proc = struct {
	ppid, pgrp, tpgid int
	argv              []string
}

// TestForeground reads the same trees with the kernel's lists of
// children (Linux) and from the whole table (Darwin).
func TestForeground(t *testing.T) {
	t.Parallel()
	for _, lists := range []bool{true, false} {
		testForeground(t, lists)
	}
}

func testForeground(t *testing.T, lists bool) {
	fakeProc := func(_ *testing.T, m map[int]proc) Procs { return Procs{Table: fakeTable{procs: m, lists: lists}} }
	codex := []string{"node", "/c/node_modules/.bin/codex", "--no-daemon"}
	native := []string{"/c/node_modules/@openai/codex-linux-x64/vendor/x/bin/codex", "--no-daemon"}
	// A wrapper without job control: bash -c runs node in its own group.
	wrapped := fakeProc(t, map[int]proc{
		100: {1, 100, 100, []string{"bash", "-c", "\"$@\"; exec bash", "bash", "/c/node_modules/.bin/codex"}},
		101: {100, 100, 100, codex},
		102: {101, 100, 100, native},
		200: {1, 200, 200, []string{"other"}}, // another pane
	})
	got := wrapped.Foreground(100)
	if len(got) != 3 || got[1][1] != codex[1] || got[2][0] != native[0] {
		t.Fatalf("lists %v: Foreground = %q", lists, got)
	}
	if name, argv := IdentifyAll(got); name != "codex" || argv[0] != native[0] {
		t.Errorf("IdentifyAll = %s %q", name, argv)
	}
	// An interactive shell ran gemini as a job: only the job's group is
	// in the foreground, not the shell, nor a background job.
	job := fakeProc(t, map[int]proc{
		300: {1, 300, 301, []string{"-bash"}},
		301: {300, 301, 301, []string{"node", "/g/bin/gemini"}},
		302: {301, 301, 301, []string{"node", "--max-old-space-size=8192", "/g/bin/gemini"}},
		303: {300, 303, 301, []string{"node", "/c/bin/codex"}}, // a background job
	})
	got = job.Foreground(300)
	if len(got) != 2 {
		t.Fatalf("lists %v: Foreground = %q", lists, got)
	}
	if name, _ := IdentifyAll(got); name != "gemini" {
		t.Errorf("IdentifyAll = %s", name)
	}
	// Back at the shell: nothing identified.
	shell := fakeProc(t, map[int]proc{400: {1, 400, 400, []string{"bash", "--norc", "-i"}}})
	if name, _ := IdentifyAll(shell.Foreground(400)); name != "" {
		t.Errorf("a bare shell identified as %s", name)
	}
	if got := fakeProc(t, nil).Foreground(1); got != nil {
		t.Errorf("no such process: %q", got)
	}
}

func TestDetectPaneByProcess(t *testing.T) {
	t.Parallel()
	idle := readScreen(t, "testdata/gemini/0.61.0/80x24-256/idle.txt")
	procs := func(argv ...string) func() [][]string {
		return func() [][]string { return [][]string{{"bash"}, argv} }
	}
	for _, tt := range []struct {
		pane   Pane
		want   string
		why    string
		queues bool
	}{
		{Pane{Command: "node", Procs: procs("node", "/g/node_modules/.bin/gemini")}, "gemini",
			"foreground process gemini (node /g/node_modules/.bin/gemini)", true},
		{Pane{Command: "bash", Procs: procs("node", "/c/node_modules/.bin/codex", "--no-daemon")}, "codex",
			"foreground process codex (node /c/node_modules/.bin/codex --no-daemon)", true},
		// The command still decides first.
		{Pane{Command: "claude", Procs: procs("node", "/g/bin/gemini")}, "claude", "foreground command claude", true},
		// No process known: the screen, not trusted to queue.
		{Pane{Command: "node", Procs: procs("node", "/srv/app.js")}, "gemini",
			"screen shows Gemini CLI's input box (not its command, so it is not trusted to queue while busy)", false},
		{Pane{Command: "bash", Procs: procs("bash", "-i")}, "gemini",
			"foreground command bash, but the screen shows Gemini CLI's input box (not its command, so it is not trusted to queue while busy)", false},
	} {
		p, why := DetectPane(Builtin(), tt.pane, idle)
		if p.Name != tt.want || why != tt.why || p.Queues != tt.queues {
			t.Errorf("DetectPane(%s) = %s, %q, queues %v; want %s, %q, %v", tt.pane.Command, p.Name, why, p.Queues, tt.want, tt.why, tt.queues)
		}
	}
	// A profile the config adds for a CLI's command wins over the builtin.
	ps, err := Apply(Builtin(), map[string]Override{"mygemini": {Base: "gemini", Commands: []string{"gemini"}}})
	if err != nil {
		t.Fatal(err)
	}
	if p, _ := DetectPane(ps, Pane{Command: "node", Procs: procs("node", "/g/bin/gemini")}, nil); p.Name != "mygemini" {
		t.Errorf("config profile: %s", p.Name)
	}
}
