package e2e

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/agentmsg/agentmsg/dispatch"
	"github.com/agentmsg/agentmsg/e2e/harness"
	"github.com/agentmsg/agentmsg/message"
)

// Issue 21, "Any REPL": programs that read lines after a prompt (python3,
// a bash read -p loop, node), run for real in tmux panes. What each program
// read is its own record (a log it writes for every line it reads), never
// its screen; every send must be submitted and read exactly once. The
// worked examples of docs/agents.md are these constants, word for word
// (TestReplDocExamples).

// docMyrepl is the read -p loop of docs/agents.md: it logs every line it reads.
const docMyrepl = `#!/bin/bash
# myrepl: reads lines after the prompt "my> " and logs each one
while IFS= read -r -p "my> " line; do
  printf '%s\n' "$line" >> ~/myrepl.log
done
`

// docMyreplProfile picks it by the script's name: tmux shows the
// pane's command as bash, agentmsg looks at its processes.
const docMyreplProfile = `[profiles.myrepl]
base = "generic"
commands = ["myrepl"]       # the script's name (tmux shows bash; agentmsg reads the processes)
prompt = 'my> '             # the prompt at the start of the last row
`

// docPythonProfile is what the builtin python profile amounts to, as
// a config table to start another REPL's profile from.
const docPythonProfile = `[profiles.py]
base = "generic"
commands = ["python3"]
prompt = '(>>>|\.\.\.) '    # ">>> ", or "... " while a statement goes on
`

// docNodeProfile has no commands: Codex, Gemini CLI and others show
// node too. spawn --agent node names it.
const docNodeProfile = `[profiles.node]
base = "generic"
prompt = '(>|\.\.\.) '      # "> ", or "... " while a statement goes on
`

const docNodeSpawn = `agentmsg spawn alpha js --agent node --env NODE_NO_READLINE=1 -- node`

// pythonRecorder is a PYTHONSTARTUP file: python3's own REPL, which logs
// each line it read (readline's history) when it shows its next prompt.
const pythonRecorder = `import os, readline, sys

class _Prompt:
    seen = None

    def __init__(self, text):
        self.text = text

    def __str__(self):
        n = readline.get_current_history_length()
        if _Prompt.seen is not None:
            with open(os.environ["REPL_LOG"], "a", encoding="utf-8") as f:
                for i in range(_Prompt.seen + 1, n + 1):
                    f.write(readline.get_history_item(i) + "\n")
        _Prompt.seen = n
        return self.text

sys.ps1, sys.ps2 = _Prompt(">>> "), _Prompt("... ")
`

// nodeRecorder is preloaded into node (node -r): its own REPL, which logs
// each line it reads.
const nodeRecorder = `const repl = require('repl');
const fs = require('fs');
const start = repl.start;
repl.start = function (...args) {
  const r = start.apply(this, args);
  r.on('line', (l) => fs.appendFileSync(process.env.REPL_LOG, l + '\n'));
  return r;
};
`

// replTexts are sent to every program: quotes, shell and tmux syntax, a
// leading dash, unicode, a tab, a line that leaves a statement open (the
// REPLs go on with a continuation prompt) and one of several lines. None
// of these programs turns bracketed paste on, so every pasted character
// is a key: a tab goes as spaces (python3's readline would complete on
// it), and several lines as one pointer line.
var replTexts = []string{
	"please review PR 12",
	`quotes "double" and 'single'; $HOME #{pane_id} \n`,
	"-n starts with a dash",
	"unicode: héllo → 世界",
	"a\ttab",
	"opens a statement (",
	"closes it )",
	"first line\nsecond line",
}

// sendAll sends each text to team/name and returns the lines the program
// should have read, in order.
func sendAll(t *testing.T, s *harness.TestServer, team, name string, texts []string, extra ...string) []string {
	t.Helper()
	var want []string
	for _, text := range texts {
		rep, res := sendJSON(t, s, nil, append(append([]string{}, extra...), team, name, "--", text)...)
		if res.Code != 0 || rep.Verdict != "submitted" {
			t.Fatalf("send %q to %s/%s: verdict %s\n%s\nscreen:\n%s", text, team, name, rep.Verdict, res, s.Capture(rep.Pane))
		}
		typed := strings.ReplaceAll(text, "\t", "    ")
		if strings.Contains(text, "\n") {
			if !rep.Pointer {
				t.Errorf("%q went whole to a program without bracketed paste", text)
			}
			typed = dispatch.Pointer(message.ID(rep.ID), text)
		}
		want = append(want, harness.Submitted(rep.ID, typed))
	}
	return want
}

// wantRead fails the test unless the program's record holds exactly want.
// Every program writes a line before it shows its next prompt, and that
// prompt is the send's proof, so it is there when the send has returned.
func wantRead(t *testing.T, record string, want []string) {
	t.Helper()
	got := readLines(t, record)
	if !slices.Equal(got, want) {
		t.Fatalf("the program read %d line(s):\n%q\nwant each message once, %d:\n%q", len(got), got, len(want), want)
	}
}

// doctorDoc is what the REPL tests read of doctor --json.
type doctorDoc struct {
	Profile    string `json:"profile"`
	ProfileWhy string `json:"profile_why"`
	State      string `json:"state"`
	Detail     string `json:"detail"`
}

// waitReady polls doctor until team/name's screen reads ready as profile.
func waitReady(t *testing.T, s *harness.TestServer, team, name, profile string) doctorDoc {
	t.Helper()
	deadline := time.Now().Add(15 * time.Second)
	for {
		res := s.Run("--json", "doctor", team, name)
		var doc doctorDoc
		if err := json.Unmarshal([]byte(res.Stdout), &doc); err != nil {
			t.Fatalf("doctor: %v\n%s", err, res)
		}
		if doc.State == "ready" && doc.Profile == profile {
			return doc
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s/%s did not read ready as %s within 15s: %+v\nscreen:\n%s", team, name, profile, doc, s.Capture("=agent-"+team+"-"+name+":"))
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// waitScreen polls a pane until its screen shows want.
func waitScreen(t *testing.T, s *harness.TestServer, pane, want string) {
	t.Helper()
	deadline := time.Now().Add(15 * time.Second)
	for !strings.Contains(s.Capture(pane), want) {
		if time.Now().After(deadline) {
			t.Fatalf("%s never showed %q:\n%s", pane, want, s.Capture(pane))
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// writeFile writes a file of the test's, executable when mode says so.
func writeFile(t *testing.T, path, content string, mode os.FileMode) string {
	t.Helper()
	if err := os.WriteFile(path, []byte(content), mode); err != nil {
		t.Fatal(err)
	}
	return path
}

func needProgram(t *testing.T, name string) string {
	t.Helper()
	path, err := exec.LookPath(name)
	if err != nil {
		t.Skipf("%s is not installed: %v", name, err)
	}
	return path
}

// python3's own REPL, read by the builtin profile and by docs/agents.md's
// table: on main it read "unknown program python3: generic" and every
// send waited 30 s and was deferred.
func TestReplPython(t *testing.T) {
	t.Parallel()
	python := needProgram(t, "python3")
	for _, tt := range []struct{ name, config, profile string }{
		{"builtin", "", "python"},
		{"docs table", docPythonProfile, "py"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			s := harness.NewTestServer(t)
			writeConfig(t, s, tt.config)
			startup := writeFile(t, filepath.Join(s.Dir, "startup.py"), pythonRecorder, 0o600)
			record := filepath.Join(s.Dir, "python.log")
			s.Tmux("new-session", "-d", "-s", "agent-alpha-py", "-x", "120", "-y", "40", "--",
				"env", "HOME="+s.Dir, "PYTHONSTARTUP="+startup, "REPL_LOG="+record, python, "-q")
			doc := waitReady(t, s, "alpha", "py", tt.profile)
			if doc.ProfileWhy != "foreground command python3" {
				t.Errorf("profile %s, why %q", doc.Profile, doc.ProfileWhy)
			}
			wantRead(t, record, sendAll(t, s, "alpha", "py", replTexts))
		})
	}
}

// The read -p loop of docs/agents.md, picked by its script's name although tmux
// shows bash: on main it read as a shell ("a shell is in the foreground
// (no prompt on screen)") and every send waited 30 s.
func TestReplReadLoop(t *testing.T) {
	t.Parallel()
	needProgram(t, "bash")
	s := harness.NewTestServer(t)
	writeConfig(t, s, docMyreplProfile)
	script := writeFile(t, filepath.Join(s.Dir, "myrepl"), docMyrepl, 0o700)
	s.Tmux("new-session", "-d", "-s", "agent-alpha-my", "-x", "120", "-y", "40", "--", "env", "HOME="+s.Dir, script)
	doc := waitReady(t, s, "alpha", "my", "myrepl")
	if !strings.HasPrefix(doc.ProfileWhy, "foreground process myrepl (") {
		t.Errorf("why %q", doc.ProfileWhy)
	}
	wantRead(t, filepath.Join(s.Dir, "myrepl.log"), sendAll(t, s, "alpha", "my", replTexts))
}

// The node of docs/agents.md: its REPL with its line editor off (NODE_NO_READLINE:
// no previews drawn under the prompt), spawned as that page says, so
// that spawn --agent names the profile.
func TestReplNode(t *testing.T) {
	t.Parallel()
	node := needProgram(t, "node")
	s := harness.NewTestServer(t)
	writeConfig(t, s, docNodeProfile)
	hook := writeFile(t, filepath.Join(s.Dir, "record.js"), nodeRecorder, 0o600)
	record := filepath.Join(s.Dir, "node.log")
	// The page's command line, and the recorder: its own log, no
	// history file, the recorder preloaded.
	spawn, _, _ := strings.Cut(strings.TrimPrefix(docNodeSpawn, "agentmsg "), " -- ")
	args := append(strings.Fields(spawn), "--env", "REPL_LOG="+record, "--env", "NODE_REPL_HISTORY=", "--", node, "-r", hook)
	wantCode(t, s.Run(args...), 0)
	doc := waitReady(t, s, "alpha", "js", "node")
	if doc.ProfileWhy != "registered as node when spawned" {
		t.Errorf("why %q", doc.ProfileWhy)
	}
	wantRead(t, record, sendAll(t, s, "alpha", "js", replTexts))
}

// loopProfile describes the read loop by its empty prompt row alone (a
// ready pattern, which main knows too) and names no commands: only
// spawn --agent or --agent can pick it.
const loopProfile = "[profiles.loop]\nbase = \"generic\"\nready = '^my>$'\n"

// What spawn --agent registered reads the pane everywhere: list, doctor,
// send, broadcast and deliver (which the turn-end hook runs). On main all
// of them read the pane as bash, a shell, and typed nothing.
func TestSpawnAgentKindIsUsedEverywhere(t *testing.T) {
	t.Parallel()
	needProgram(t, "bash")
	s := harness.NewTestServer(t)
	writeConfig(t, s, loopProfile)
	script := writeFile(t, filepath.Join(s.Dir, "myrepl"), docMyrepl, 0o700)
	record := filepath.Join(s.Dir, "myrepl.log")
	wantCode(t, s.Run("spawn", "alpha", "lo", "--agent", "loop", "--env", "HOME="+s.Dir, "--", script), 0)
	doc := waitReady(t, s, "alpha", "lo", "loop")
	if doc.ProfileWhy != "registered as loop when spawned" {
		t.Errorf("doctor: why %q", doc.ProfileWhy)
	}

	res := s.Run("--json", "list", "alpha")
	wantCode(t, res, 0)
	var list struct {
		Agents []struct{ Agent, State, Profile string }
	}
	if err := json.Unmarshal([]byte(res.Stdout), &list); err != nil {
		t.Fatal(err)
	}
	if len(list.Agents) != 1 || list.Agents[0].Profile != "loop" || list.Agents[0].State != "ready" {
		t.Errorf("list: %+v", list.Agents)
	}

	want := sendAll(t, s, "alpha", "lo", []string{"one by send"})
	res = s.Run("--json", "broadcast", "alpha", "two by broadcast")
	wantCode(t, res, 0)
	bc, err := harness.Decode[harness.BroadcastReport](res.Stdout)
	if err != nil || len(bc.Results) != 1 || bc.Results[0].Verdict != "submitted" {
		t.Fatalf("broadcast: %+v, %v\n%s", bc, err, res)
	}
	want = append(want, harness.Submitted(bc.ID, "two by broadcast"))

	// A person's half-typed line keeps a send waiting (deferred); once it
	// is gone, deliver types the message.
	pane := s.Run("--json", "doctor", "alpha", "lo")
	var at struct{ Pane string }
	if err := json.Unmarshal([]byte(pane.Stdout), &at); err != nil {
		t.Fatal(err)
	}
	if err := s.TypeLiteral(at.Pane, "half"); err != nil {
		t.Fatal(err)
	}
	rep, res := sendJSON(t, s, nil, "--ready-timeout", "300ms", "alpha", "lo", "three by deliver")
	if res.Code != 0 || rep.Verdict != "deferred" || rep.State != "draft" {
		t.Fatalf("send over a draft: %s (state %s)\n%s", rep.Verdict, rep.State, res)
	}
	if err := s.PressKeys(at.Pane, "C-u"); err != nil { // the line's kill character: the draft is gone
		t.Fatal(err)
	}
	waitReady(t, s, "alpha", "lo", "loop")
	res = s.Run("--json", "deliver", "alpha")
	wantCode(t, res, 0)
	if !strings.Contains(res.Stdout, `"submitted"`) {
		t.Fatalf("deliver: %s", res)
	}
	want = append(want, harness.Submitted(rep.ID, "three by deliver"))
	wantRead(t, record, want)
}

// deliver --agent reads every pane of its pass as that profile: a loop
// started by hand, whose profile names no commands.
func TestDeliverAgentFlag(t *testing.T) {
	t.Parallel()
	needProgram(t, "bash")
	s := harness.NewTestServer(t)
	writeConfig(t, s, loopProfile)
	script := writeFile(t, filepath.Join(s.Dir, "myrepl"), docMyrepl, 0o700)
	s.Tmux("new-session", "-d", "-s", "agent-alpha-lo", "-x", "120", "-y", "40", "--", "env", "HOME="+s.Dir, script)
	waitScreen(t, s, "=agent-alpha-lo:", "my>")
	rep, res := sendJSON(t, s, nil, "--ready-timeout", "300ms", "alpha", "lo", "kept for deliver")
	if res.Code != 0 || rep.Verdict != "deferred" {
		t.Fatalf("send without --agent: %s\n%s", rep.Verdict, res)
	}
	res = s.Run("--json", "deliver", "--agent", "loop", "alpha")
	wantCode(t, res, 0)
	wantRead(t, filepath.Join(s.Dir, "myrepl.log"), []string{harness.Submitted(rep.ID, "kept for deliver")})
}

// A send to a program whose prompt no profile knows says at once which
// profile read it and how to describe the prompt, and doctor suggests the
// pattern from the screen. On main: "waiting ...: unknown" and nothing more.
func TestReplUnknownPromptSaysHowToAddOne(t *testing.T) {
	t.Parallel()
	needProgram(t, "bash")
	s := harness.NewTestServer(t)
	script := writeFile(t, filepath.Join(s.Dir, "ask"), "#!/bin/bash\nwhile IFS= read -r -p 'ask? ' line; do :; done\n", 0o700)
	s.Tmux("new-session", "-d", "-s", "agent-alpha-ask", "-x", "120", "-y", "40", "--", script)
	waitScreen(t, s, "=agent-alpha-ask:", "ask?")
	res := s.Run("send", "--ready-timeout", "500ms", "alpha", "ask", "hello")
	for _, want := range []string{"alpha/ask is read as profile shell (foreground command ",
		"[profiles.NAME]", `commands = ["SCRIPT"]`, "agentmsg doctor alpha ask suggests one", "--agent NAME"} {
		if !strings.Contains(res.Stderr, want) {
			t.Errorf("send's stderr does not say %q:\n%s", want, res)
		}
	}
	res = s.Run("--json", "doctor", "alpha", "ask")
	var doc struct {
		Suggested string `json:"suggested_prompt"`
	}
	if err := json.Unmarshal([]byte(res.Stdout), &doc); err != nil || doc.Suggested != `ask\? ` {
		t.Errorf("doctor suggests %q (%v)\n%s", doc.Suggested, err, res)
	}
}

// The worked examples of docs/agents.md are the ones these tests run.
func TestReplDocExamples(t *testing.T) {
	b, err := os.ReadFile(filepath.Join("..", "docs", "agents.md"))
	if err != nil {
		t.Fatal(err)
	}
	for _, snippet := range []string{docMyrepl, docMyreplProfile, docPythonProfile, docNodeProfile, docNodeSpawn} {
		if !strings.Contains(string(b), snippet) {
			t.Errorf("docs/agents.md does not hold, word for word:\n%s", snippet)
		}
	}
}
