// Package mcplive runs agentmsg's MCP server inside real agent CLIs: a real
// Claude Code (agent-mcp-ana) and a real Codex (agent-mcp-bob) on one
// private tmux server, each registered with `agentmsg mcp install`, each
// talking to its own fake model API (e2e/fakeapi) whose scripts make the
// "model" call send_message, check_messages and wait_for_message. The fake
// APIs' logs are the ground truth: what each agent was prompted with, and
// what each tool call returned.
//
// Run: AGENTMSG_E2E_CLAUDE=1 AGENTMSG_E2E_CLIS=1 go test -count=1 ./e2e/mcplive/
// (AGENTMSG_CLAUDE / AGENTMSG_CODEX name other executables).
package mcplive

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	claudeharness "github.com/agentmsg/agentmsg/e2e/claude"
	clisharness "github.com/agentmsg/agentmsg/e2e/clis"
	"github.com/agentmsg/agentmsg/e2e/fakeapi"
	"github.com/agentmsg/agentmsg/e2e/harness"
)

const team = "mcp"

// Generous: two cores, other live tests may run at once, Node starts slowly.
const (
	stepTimeout  = 150 * time.Second
	startTimeout = 120 * time.Second
)

// executables returns Claude Code's and Codex's, or skips.
func executables(t *testing.T) (claude, codex string) {
	t.Helper()
	if os.Getenv("AGENTMSG_E2E_CLAUDE") != "1" || os.Getenv("AGENTMSG_E2E_CLIS") != "1" {
		t.Skip("set AGENTMSG_E2E_CLAUDE=1 and AGENTMSG_E2E_CLIS=1 to run the real Claude Code and Codex with agentmsg's MCP server")
	}
	if _, err := exec.LookPath("tmux"); err != nil {
		t.Skip("tmux not installed")
	}
	exe := func(cli string) string {
		p, err := clisharness.Executable(cli)
		if errors.Is(err, clisharness.ErrNoNPM) {
			t.Skip(err)
		}
		if err != nil {
			t.Fatal(err)
		}
		return p
	}
	return exe(clisharness.Claude), exe(clisharness.Codex)
}

// scene is the private tmux server with both agents and their fake APIs.
type scene struct {
	t       *testing.T
	dir     string // short: the socket lives here
	sock    string
	bin     string // the agentmsg under test
	mailbox string // the one mailbox both MCP servers use
	tmp     string // the one TMPDIR everyone uses: the pane locks are under it
	anaAPI  *fakeapi.Server
	bobAPI  *fakeapi.Server
	ana     *claudeharness.Agent
	bob     *clisharness.Agent
}

func TestMCPToolsFromRealClaudeAndCodex(t *testing.T) {
	claude, codex := executables(t)
	bins, err := harness.Build()
	if err != nil {
		t.Fatal(err)
	}
	for _, exe := range []string{claude, codex} {
		v, _ := exec.Command(exe, "--version").Output()
		t.Logf("%s: %s", filepath.Base(exe), strings.TrimSpace(string(v)))
	}
	n := nonce(t)
	kick, ping, pong := "KICK-"+n, "PING-"+n, "PONG-"+n
	hold, kick2, second := "HOLD-"+n, "KICK2-"+n, "SECOND-"+n

	s := newScene(t, bins.Agentmsg)
	// The scripts: what each "model" does on a prompt holding a marker.
	must(t, s.anaAPI.Set(fakeapi.Control{Scripts: []fakeapi.Script{
		{Marker: kick, Calls: []fakeapi.Call{{Tool: "agentmsg__send_message",
			Args: map[string]any{"to": "bob", "content": ping + " from ana, please answer"}}}, Reply: "sent"},
		{Marker: pong, Calls: []fakeapi.Call{{Tool: "agentmsg__check_messages"}}, Reply: "read"},
		// A request is put into the inboxes only: news to bob's wait.
		{Marker: kick2, Calls: []fakeapi.Call{{Tool: "agentmsg__request_task",
			Args: map[string]any{"description": second + " while you wait"}}}, Reply: "requested"},
	}}))
	must(t, s.bobAPI.Set(fakeapi.Control{Scripts: []fakeapi.Script{
		// wait_for_message passes over ana's message, typed into bob's
		// pane already; the answer goes back as a reply to the message id
		// in the prompt.
		{Marker: ping, Calls: []fakeapi.Call{
			{Tool: "agentmsg__wait_for_message", Args: map[string]any{"from": "ana", "timeout_seconds": 2}},
			{Tool: "agentmsg__send_message", Args: map[string]any{"to": "ana", "content": pong + " from bob", "reply_to": "$MSG_ID"}},
		}, Reply: "replied"},
		// wait_for_message blocks until ana's next message arrives.
		{Marker: hold, Calls: []fakeapi.Call{
			{Tool: "agentmsg__wait_for_message", Args: map[string]any{"from": "ana", "timeout_seconds": 110}},
		}, Reply: "got it"},
	}}))
	s.start(claude, codex)

	// (a) ana's model sends bob a message; bob is prompted with it once.
	s.send("ana", kick)
	anaSend := s.waitResult(s.anaAPI, "ana", "mcp__agentmsg__send_message", 1, "")
	pingID := field(t, anaSend.Result, "message_id")
	s.waitPrompts(s.bobAPI, "bob", ping, 1)
	// (b) bob's wait_for_message does not return it again (it was typed
	// into his pane: no news), and his model answers the id in its
	// prompt; the reply is typed into ana's pane, so ana's check_messages
	// leaves it out too (the inbox lists what is news to its reader: an
	// agent following the README saw every message twice).
	bobWait := s.waitResult(s.bobAPI, "bob", "mcp__agentmsg__wait_for_message", 1, `"timed_out":true`)
	if strings.Contains(bobWait.Result, pingID) {
		t.Errorf("bob's wait_for_message returned %s, the message already typed into his pane", bobWait.Result)
	}
	bobSend := s.waitResult(s.bobAPI, "bob", "mcp__agentmsg__send_message", 1, "")
	pongID := field(t, bobSend.Result, "message_id")
	s.waitPrompts(s.anaAPI, "ana", pong, 1)
	if anaCheck := s.waitResult(s.anaAPI, "ana", "mcp__agentmsg__check_messages", 1, ""); strings.Contains(anaCheck.Result, pongID) {
		t.Errorf("ana's check_messages returned %s, the reply already typed into her pane", anaCheck.Result)
	}
	s.waitReply(s.anaAPI, "ana", "read")

	// (c) bob's model blocks in wait_for_message until ana's model posts
	// a request (a message typed into his pane meanwhile would be no news
	// to it: he sees it there).
	s.send("bob", hold)
	s.waitPrompts(s.bobAPI, "bob", hold, 1)
	// Only once Codex shows the call running is the wait really blocking.
	if screen, err := s.bob.WaitFor(stepTimeout, func(sc string) bool {
		return strings.Contains(sc, "Calling agentmsg.wait_for_message")
	}); err != nil {
		t.Fatalf("bob's screen never showed wait_for_message running: %v\n%s", err, screen)
	}
	s.send("ana", kick2)
	anaRequest := s.waitResult(s.anaAPI, "ana", "mcp__agentmsg__request_task", 1, "")
	secondID := field(t, anaRequest.Result, "message_id")
	bobWait2 := s.waitResult(s.bobAPI, "bob", "mcp__agentmsg__wait_for_message", 2, second)
	if !strings.Contains(bobWait2.Result, secondID) || strings.Contains(bobWait2.Result, `"timed_out":true`) {
		t.Errorf("bob's blocking wait_for_message returned %s, want message %s", bobWait2.Result, secondID)
	}
	s.waitReply(s.bobAPI, "bob", "got it")

	// Exactly once, from the logs, after everything settled.
	s.settle()
	t.Logf("ana's fake API log:\n%s\nbob's fake API log:\n%s", dump(s.anaAPI), dump(s.bobAPI))
	s.exactlyOnce(s.bobAPI, "bob", fakeapi.KindPrompt, ping, pingID)
	s.exactlyOnce(s.anaAPI, "ana", fakeapi.KindPrompt, pong, pongID)
	if got := matching(s.bobAPI, fakeapi.KindPrompt, second); len(got) != 0 {
		t.Errorf("the request, in bob's inbox only, reached his model as a prompt: %+v", got)
	}
	s.exactlyOnce(s.bobAPI, "bob", fakeapi.KindToolResult, second, secondID)
	for _, api := range []*fakeapi.Server{s.anaAPI, s.bobAPI} {
		for _, r := range api.Records() {
			if r.Error != "" {
				t.Errorf("fake API error: %+v", r)
			}
		}
	}
	// Both MCP servers take their pane locks where the senders take
	// theirs: under the one TMPDIR (Codex passes it on through env_vars).
	servers := mcpServers(s.bin)
	if len(servers) != 2 {
		t.Errorf("found %d agentmsg MCP servers running, want 2", len(servers))
	}
	for pid, env := range servers {
		if !slices.Contains(env, "TMPDIR="+s.tmp) {
			t.Errorf("MCP server %d runs without the shared TMPDIR: %q", pid, env)
		}
	}
}

// mcpServers are the running `agentmsg mcp` processes of bin, with their
// environments (from /proc).
func mcpServers(bin string) map[int][]string {
	found := map[int][]string{}
	cmdlines, _ := filepath.Glob("/proc/[0-9]*/cmdline")
	for _, c := range cmdlines {
		b, err := os.ReadFile(c)
		if err != nil {
			continue
		}
		argv := strings.Split(strings.TrimRight(string(b), "\x00"), "\x00")
		if argv[0] != bin || !slices.Contains(argv, "mcp") || slices.Contains(argv, "install") {
			continue
		}
		env, err := os.ReadFile(filepath.Join(filepath.Dir(c), "environ"))
		if err != nil {
			continue
		}
		pid, _ := strconv.Atoi(filepath.Base(filepath.Dir(c)))
		found[pid] = strings.Split(strings.TrimRight(string(env), "\x00"), "\x00")
	}
	return found
}

func newScene(t *testing.T, bin string) *scene {
	t.Helper()
	dir, err := os.MkdirTemp("", "amm") // short: socket paths are limited
	if err != nil {
		t.Fatal(err)
	}
	s := &scene{t: t, dir: dir, sock: filepath.Join(dir, "s"), bin: bin}
	// One mailbox for both, as two agents of one person share theirs: each
	// pane's command exports AGENTMSG_HOME, and each CLI must pass it on to
	// its MCP server (Codex only passes what env_vars, written by mcp
	// install, names).
	s.mailbox = filepath.Join(dir, "mailbox")
	// One TMPDIR for all, as one person's processes share theirs: with no
	// XDG_RUNTIME_DIR the pane locks live under it, so the senders and
	// both MCP servers (Codex passes it on through env_vars) must agree.
	s.tmp = filepath.Join(dir, "tmp")
	must(t, os.MkdirAll(s.tmp, 0o700))
	t.Cleanup(s.close)
	for _, name := range []string{"ana", "bob"} {
		api, err := fakeapi.New(fakeapi.Config{LogPath: filepath.Join(dir, name+"-api.jsonl")})
		if err == nil {
			err = api.Start()
		}
		if err != nil {
			t.Fatal(err)
		}
		if name == "ana" {
			s.anaAPI = api
		} else {
			s.bobAPI = api
		}
	}
	return s
}

// start registers agentmsg's MCP server with each CLI through `agentmsg mcp
// install` and starts them: ana (Claude Code), then bob (Codex).
func (s *scene) start(claude, codex string) {
	t := s.t
	t.Helper()
	// Claude Code: .mcp.json in the project, approved (no "new MCP server"
	// dialog) and its tools allowed (no permission dialog per call) by the
	// project's settings.
	anaRoot := filepath.Join(s.dir, "ana")
	anaWork := filepath.Join(anaRoot, "work")
	must(t, os.MkdirAll(filepath.Join(anaWork, ".claude"), 0o755))
	must(t, os.WriteFile(filepath.Join(anaWork, ".claude", "settings.json"),
		[]byte(`{"enabledMcpjsonServers": ["agentmsg"], "permissions": {"allow": ["mcp__agentmsg"]}}`+"\n"), 0o644))
	if out, err := s.agentmsg(anaRoot, "-S", s.sock, "--team", team, "--from", "ana",
		"mcp", "install", "claude", "--dir", anaWork); err != nil {
		t.Fatalf("mcp install claude: %v\n%s", err, out)
	}
	// Claude Code gives its MCP servers its own environment: the wrapper
	// adds the mailbox.
	anaExe := s.script("ana-claude.sh", "export AGENTMSG_HOME="+q(s.mailbox)+" TMPDIR="+q(s.tmp)+"\nexec "+q(claude)+` "$@"`)
	var err error
	s.ana, err = claudeharness.Start(claudeharness.Options{Claude: anaExe, Socket: s.sock, Root: anaRoot,
		APIURL: s.anaAPI.URL(), Session: "agent-" + team + "-ana", StartTimeout: startTimeout})
	if err != nil {
		t.Fatal(err)
	}
	// Codex: the harness writes config.toml when it starts the agent, so
	// the pane's command registers the server first, then runs Codex. What
	// mcp install writes must be enough: the server's tools approved (Codex
	// asks a person before each call otherwise) and the mailbox passed on.
	install := filepath.Join(s.dir, "bob-install.log")
	bobExe := s.script("bob-codex.sh", fmt.Sprintf(`%s -S %s --team %s --from bob mcp install codex --home "$HOME" >%s 2>&1 || exit 1
export AGENTMSG_HOME=%s TMPDIR=%s
exec %s "$@"`, q(s.bin), q(s.sock), team, q(install), q(s.mailbox), q(s.tmp), q(codex)))
	s.bob, err = clisharness.Start(clisharness.Options{CLI: clisharness.Codex, Exe: bobExe, Socket: s.sock,
		Root: filepath.Join(s.dir, "bob"), APIURL: s.bobAPI.URL(), Session: "agent-" + team + "-bob", StartTimeout: startTimeout})
	if err != nil {
		log, _ := os.ReadFile(install)
		t.Fatalf("%v\nmcp install codex:\n%s", err, log)
	}
	cfg, _ := os.ReadFile(filepath.Join(s.dir, "bob", "home", ".codex", "config.toml"))
	if !strings.Contains(string(cfg), "[mcp_servers.agentmsg]\ncommand = "+strconv.Quote(s.bin)) {
		t.Fatalf("bob's config.toml has no agentmsg server:\n%s", cfg)
	}
	t.Logf("ready: ana in %v, bob in %v", s.ana.Ready.Sub(s.ana.Started).Round(time.Millisecond),
		s.bob.Ready.Sub(s.bob.Started).Round(time.Millisecond))
}

// script writes an executable shell script into the scene's dir.
func (s *scene) script(name, body string) string {
	p := filepath.Join(s.dir, name)
	must(s.t, os.WriteFile(p, []byte("#!/bin/sh\n"+body+"\n"), 0o755))
	return p
}

// agentmsg runs the agentmsg under test with a clean environment: HOME in
// root, the shared mailbox, no $TMUX.
func (s *scene) agentmsg(root string, args ...string) (string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, s.bin, args...)
	cmd.Env = []string{"PATH=/usr/local/bin:/usr/bin:/bin", "HOME=" + filepath.Join(root, "home"),
		"LANG=C.UTF-8", "AGENTMSG_HOME=" + s.mailbox, "TMPDIR=" + s.tmp}
	cmd.WaitDelay = 2 * time.Second
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	err := cmd.Run()
	return out.String(), err
}

// send has a person ("tester") send text to an agent of the team with
// agentmsg send: typed into its box, submitted and confirmed.
func (s *scene) send(to, text string) {
	s.t.Helper()
	out, err := s.agentmsg(s.dir, "-S", s.sock, "--from", "tester", "send", team, to, text)
	if err != nil {
		s.t.Fatalf("agentmsg send %s %s: %v\n%s%s", to, text, err, out, s.screens())
	}
}

// waitFor polls api's log until cond holds for one record, and returns it.
func (s *scene) waitFor(api *fakeapi.Server, who, what string, cond func(fakeapi.Record) bool) fakeapi.Record {
	s.t.Helper()
	deadline := time.Now().Add(stepTimeout)
	for {
		for _, r := range api.Records() {
			if cond(r) {
				return r
			}
		}
		if time.Now().After(deadline) {
			s.t.Fatalf("%s's fake API never logged %s within %v\nlog:\n%s%s", who, what, stepTimeout, dump(api), s.screens())
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// waitResult waits for the nth (from 1) result of a call of tool, and
// checks that it holds text.
func (s *scene) waitResult(api *fakeapi.Server, who, tool string, nth int, text string) fakeapi.Record {
	s.t.Helper()
	var r fakeapi.Record
	s.waitFor(api, who, fmt.Sprintf("result %d of %s", nth, tool), func(fakeapi.Record) bool {
		var got []fakeapi.Record
		for _, r := range api.Records() {
			if r.Kind == fakeapi.KindToolResult && r.Tool == tool {
				got = append(got, r)
			}
		}
		if len(got) < nth {
			return false
		}
		r = got[nth-1]
		return true
	})
	s.t.Logf("%s: %s returned %s", who, tool, r.Result)
	if !strings.Contains(r.Result, text) || strings.Contains(r.Result, `"delivered":false`) {
		s.t.Fatalf("%s's call %d of %s returned %s, want it to hold %q (and no delivered false)\nlog:\n%s", who, nth, tool, r.Result, text, dump(api))
	}
	return r
}

// waitPrompts waits until n prompts holding text were logged.
func (s *scene) waitPrompts(api *fakeapi.Server, who, text string, n int) {
	s.t.Helper()
	s.waitFor(api, who, fmt.Sprintf("%d prompt(s) holding %s", n, text), func(fakeapi.Record) bool {
		return len(matching(api, fakeapi.KindPrompt, text)) >= n
	})
}

// waitReply waits until a request was answered with the text reply (a
// script's last answer: the agent's turn is ending).
func (s *scene) waitReply(api *fakeapi.Server, who, reply string) {
	s.t.Helper()
	s.waitFor(api, who, "the reply "+reply, func(r fakeapi.Record) bool { return r.Reply == reply })
}

// settle waits until neither fake API logged anything for a while, so
// that a duplicate on its way would have arrived.
func (s *scene) settle() {
	quiet := 3 * time.Second
	deadline := time.Now().Add(stepTimeout)
	last := -1
	since := time.Now()
	for time.Now().Before(deadline) {
		n := len(s.anaAPI.Records()) + len(s.bobAPI.Records())
		if n != last {
			last, since = n, time.Now()
		}
		if time.Since(since) >= quiet {
			return
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// exactlyOnce checks that exactly one record of kind holds text, and that
// it holds the message id.
func (s *scene) exactlyOnce(api *fakeapi.Server, who, kind, text, id string) {
	s.t.Helper()
	got := matching(api, kind, text)
	if len(got) != 1 {
		s.t.Errorf("%s's fake API logged %d %s records holding %s, want exactly 1:\n%s", who, len(got), kind, text, dump(api))
		return
	}
	if body := got[0].Text + got[0].Result; !strings.Contains(body, id) {
		s.t.Errorf("%s's %s record holding %s does not hold the message id %s: %q", who, kind, text, id, body)
	}
}

func matching(api *fakeapi.Server, kind, text string) []fakeapi.Record {
	var out []fakeapi.Record
	for _, r := range api.Records() {
		if r.Kind == kind && strings.Contains(r.Text+r.Result, text) {
			out = append(out, r)
		}
	}
	return out
}

// close ends the agents, the server and the fake APIs, makes sure that no
// process of this scene is left (an agentmsg mcp an agent started, say:
// ended by pid) and removes the dir.
func (s *scene) close() {
	t := s.t
	if t.Failed() {
		t.Log(s.screens())
	}
	if s.ana != nil {
		_ = s.ana.Close()
	}
	if s.bob != nil {
		_ = s.bob.Close()
	}
	_ = exec.Command("tmux", "-S", s.sock, "kill-server").Run()
	for _, api := range []*fakeapi.Server{s.anaAPI, s.bobAPI} {
		if api != nil {
			_ = api.Close()
		}
	}
	if left := leftovers(s.dir); len(left) > 0 {
		// Give them a moment: a CLI's children exit after it.
		time.Sleep(2 * time.Second)
		for _, pid := range leftovers(s.dir) {
			cmdline, _ := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
			t.Errorf("process %d was left running: %s", pid, bytes.ReplaceAll(cmdline, []byte{0}, []byte{' '}))
			_ = syscall.Kill(pid, syscall.SIGKILL)
		}
	}
	if err := harness.RemoveSettled(s.dir); err != nil {
		t.Errorf("removing %s: %v", s.dir, err)
	}
}

// leftovers are the live processes whose command line names dir (every
// one this scene started does: the CLIs' wrappers, agentmsg -S dir/s, the
// tmux server); not this test process.
func leftovers(dir string) []int {
	var out []int
	entries, _ := os.ReadDir("/proc")
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || pid == os.Getpid() {
			continue
		}
		cmdline, err := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		if err != nil || !bytes.Contains(cmdline, []byte(dir+"/")) {
			continue
		}
		stat, _ := os.ReadFile(filepath.Join("/proc", e.Name(), "stat"))
		if i := bytes.LastIndexByte(stat, ')'); i >= 0 && bytes.HasPrefix(bytes.TrimSpace(stat[i+1:]), []byte("Z")) {
			continue // a zombie: its parent (not us) reaps it
		}
		out = append(out, pid)
	}
	return out
}

// screens shows both panes, for a failure message.
func (s *scene) screens() string {
	var b strings.Builder
	if s.ana != nil {
		sc, _ := s.ana.Capture()
		fmt.Fprintf(&b, "\nana's screen:\n%s", sc)
	}
	if s.bob != nil {
		sc, _ := s.bob.Capture()
		fmt.Fprintf(&b, "\nbob's screen:\n%s", sc)
	}
	return b.String()
}

func dump(api *fakeapi.Server) string {
	var b strings.Builder
	for _, r := range api.Records() {
		if r.Kind == fakeapi.KindInternal {
			continue
		}
		fmt.Fprintf(&b, "  %s %s tool=%s text=%q result=%q reply=%q err=%q\n", r.T.Format("15:04:05.000"), r.Kind, r.Tool,
			clip(r.Text), clip(r.Result), clip(r.Reply), r.Error)
	}
	return b.String()
}

func clip(s string) string {
	if len(s) > 300 {
		return s[:300] + "…"
	}
	return s
}

// field reads a string field of a tool result's JSON text ("message_id").
func field(t *testing.T, result, name string) string {
	t.Helper()
	_, rest, ok := strings.Cut(result, `"`+name+`":"`)
	if !ok {
		t.Fatalf("no %s in %s", name, result)
	}
	v, _, _ := strings.Cut(rest, `"`)
	return v
}

func nonce(t *testing.T) string {
	b := make([]byte, 3)
	if _, err := rand.Read(b); err != nil {
		t.Fatal(err)
	}
	return hex.EncodeToString(b)
}

func q(s string) string { return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'" }

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}
