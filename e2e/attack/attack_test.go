//go:build linux

// Package attack tries agentmsg's local doors as another local user would
// (issue 29; docs/security.md): uid 65534 (nobody) plants a daemon where a
// client looks, reads every process's command line during spawn, floods
// the daemon's TCP port, knocks on its Unix socket and reads its files.
// Each attack must get nothing, and the owner's agentmsg must keep working.
// It needs root (to run the intruder as another user and to lower the
// daemon's descriptor limit) and skips otherwise, saying so.
package attack

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/agentmsg/agentmsg/e2e/harness"
)

// intruderUID is the other local user: nobody, on every Linux.
const intruderUID = 65534

var intruder string // the intruder's binary, in a directory it may read

func TestMain(m *testing.M) {
	code := run(m)
	harness.Cleanup()
	os.Exit(code)
}

func run(m *testing.M) int {
	if os.Geteuid() != 0 {
		fmt.Println("e2e/attack: skipped: these tests act as a second local user (uid 65534) and need root; CI runs them as root")
		return 0
	}
	dir, err := os.MkdirTemp("", "atk")
	if err != nil {
		fmt.Println(err)
		return 1
	}
	defer os.RemoveAll(dir)
	os.Chmod(dir, 0o755)
	intruder = filepath.Join(dir, "intruder")
	if out, err := exec.Command("go", "build", "-o", intruder, "github.com/agentmsg/agentmsg/e2e/attack/intruder").CombinedOutput(); err != nil {
		fmt.Printf("building the intruder: %v\n%s", err, out)
		return 1
	}
	return m.Run()
}

// finding is one line the intruder printed.
type finding struct {
	Kind      string   `json:"kind"`
	Error     string   `json:"error"`
	Path      string   `json:"path"`
	Body      string   `json:"body"`
	Cmdline   string   `json:"cmdline"`
	Open      int      `json:"open"`
	Opened    int      `json:"opened"`
	StillOpen int      `json:"still_open"`
	Connected bool     `json:"connected"`
	Answer    string   `json:"answer"`
	Readable  []string `json:"readable"`
	Refused   int      `json:"refused"`
	Status    int      `json:"status"`
}

// attack is one run of the intruder, as uid 65534.
type attack struct {
	cmd  *exec.Cmd
	mu   sync.Mutex
	seen []finding
	done chan struct{}
	up   chan struct{} // closed at its first line
}

// start runs the intruder with args as the other user, collecting what it
// prints.
func start(t *testing.T, args ...string) *attack {
	t.Helper()
	cmd := exec.Command(intruder, args...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: intruderUID, Gid: intruderUID, Groups: []uint32{}}}
	cmd.Env = []string{"PATH=/usr/bin:/bin"}
	cmd.Dir = "/"
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	a := &attack{cmd: cmd, done: make(chan struct{}), up: make(chan struct{})}
	go func() {
		defer close(a.done)
		sc := bufio.NewScanner(out)
		sc.Buffer(make([]byte, 1<<20), 1<<20)
		first := true
		for sc.Scan() {
			var f finding
			if json.Unmarshal(sc.Bytes(), &f) == nil {
				a.mu.Lock()
				a.seen = append(a.seen, f)
				a.mu.Unlock()
			}
			if first {
				close(a.up)
				first = false
			}
		}
		if first {
			close(a.up)
		}
	}()
	t.Cleanup(func() {
		_ = cmd.Process.Kill() // our own child, by its pid
		<-a.done
		_ = cmd.Wait()
	})
	return a
}

// wait waits for the intruder to end and returns what it found.
func (a *attack) wait(t *testing.T, within time.Duration) []finding {
	t.Helper()
	select {
	case <-a.done:
	case <-time.After(within):
		t.Fatalf("the intruder did not end within %s", within)
	}
	_ = a.cmd.Wait()
	return a.findings()
}

func (a *attack) findings() []finding {
	a.mu.Lock()
	defer a.mu.Unlock()
	return append([]finding(nil), a.seen...)
}

func (a *attack) ready(t *testing.T) {
	t.Helper()
	select {
	case <-a.up:
	case <-time.After(10 * time.Second):
		t.Fatal("the intruder said nothing within 10s")
	}
	for _, f := range a.findings() {
		if f.Kind == "error" {
			t.Fatalf("the intruder failed: %s", f.Error)
		}
	}
}

func of(fs []finding, kind string) []finding {
	var out []finding
	for _, f := range fs {
		if f.Kind == kind {
			out = append(out, f)
		}
	}
	return out
}

// shortDir is a temp dir with a short path (Unix socket paths are short).
func shortDir(t *testing.T, mode os.FileMode) string {
	t.Helper()
	dir, err := os.MkdirTemp("/tmp", "ak")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	if err := os.Chmod(dir, mode); err != nil {
		t.Fatal(err)
	}
	return dir
}

// agentmsg runs the binary with exactly env (no HOME, no XDG dirs unless
// given): the environment of cron, env -i or a service manager.
func agentmsg(t *testing.T, env []string, args ...string) harness.Result {
	t.Helper()
	bins, err := harness.Build()
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, bins.Agentmsg, args...)
	cmd.Env = append([]string{"PATH=/usr/local/bin:/usr/bin:/bin", "AGENTMSG_TMUX=" + harness.TmuxBin()}, env...)
	var stdout, stderr strings.Builder
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	cmd.WaitDelay = 2 * time.Second
	err = cmd.Run()
	res := harness.Result{Stdout: stdout.String(), Stderr: stderr.String()}
	if ee, ok := err.(*exec.ExitError); ok {
		res.Code = ee.ExitCode()
	} else if err != nil {
		t.Fatalf("agentmsg %v: %v", args, err)
	}
	return res
}

// Finding 1: with HOME, AGENTMSG_HOME and XDG_STATE_HOME unset, the
// mailbox root is TMPDIR/agentmsg-UID/state, in a directory every user
// shares. Another user who makes it first and listens at its serve.sock
// must receive nothing: not the command line, not the environment (API
// keys), and its answer must not be printed as a verdict.
func TestAPlantedDaemonInASharedTMPDIRHearsNothing(t *testing.T) {
	s := harness.NewTestServer(t)
	bob := s.StartAgent("agent-t-bob")
	shared := shortDir(t, 0o1777)
	sock := filepath.Join(shared, fmt.Sprintf("agentmsg-%d", os.Geteuid()), "state", "serve.sock")
	spy := start(t, "listen", sock, "5")
	spy.ready(t)
	res := agentmsg(t, []string{"TMPDIR=" + shared, "ANTHROPIC_API_KEY=sk-ant-victim-secret", "AGENTMSG_FROM=lead"},
		"-S", s.Socket, "send", "t", "bob", "the plan: step 1")
	found := spy.wait(t, 10*time.Second)
	if heard := of(found, "heard"); len(heard) > 0 {
		t.Errorf("the planted daemon heard %d requests, first: %s", len(heard), heard[0].Body)
	}
	if strings.Contains(res.Stdout, "forged") {
		t.Errorf("the planted daemon's answer was printed as the verdict: %s", res)
	}
	if res.Code == 0 || !strings.Contains(res.Stderr, "owned by uid 65534") {
		t.Errorf("want a refusal naming the other user's directory, got %s", res)
	}
	if got := bob.Received(); len(got) > 0 {
		t.Errorf("bob received %q through a mailbox root another user controls", got)
	}
}

// The same when the socket file and its directory look like the owner's
// but another user's process is the one listening (a socket made while
// the directory was open, then chowned): only the listener's uid, asked
// of the kernel (SO_PEERCRED), tells; the command then runs here.
func TestAnImpostorOnTheOwnersSocketHearsNothing(t *testing.T) {
	s := harness.NewTestServer(t)
	bob := s.StartAgent("agent-t-bob")
	root := filepath.Join(shortDir(t, 0o755), "state")
	if err := os.Mkdir(root, 0o777); err != nil {
		t.Fatal(err)
	}
	os.Chmod(root, 0o777)
	sock := filepath.Join(root, "serve.sock")
	spy := start(t, "plant", sock, "5")
	spy.ready(t)
	for _, step := range []error{os.Chmod(root, 0o700), os.Chown(sock, 0, 0), os.Chmod(sock, 0o600)} {
		if step != nil {
			t.Fatal(step)
		}
	}
	res := agentmsg(t, []string{"AGENTMSG_HOME=" + root, "XDG_RUNTIME_DIR=" + filepath.Join(s.Dir, "runtime"),
		"XDG_CONFIG_HOME=" + filepath.Join(s.Dir, "config"), "AGENTMSG_FROM=lead", "ANTHROPIC_API_KEY=sk-ant-victim-secret"},
		"-S", s.Socket, "send", "t", "bob", "the plan: step 2")
	found := spy.wait(t, 10*time.Second)
	if heard := of(found, "heard"); len(heard) > 0 {
		t.Errorf("the impostor heard %d requests, first: %s", len(heard), heard[0].Body)
	}
	if res.Code != 0 || !strings.Contains(res.Stderr, "runs as uid 65534") {
		t.Errorf("want the send done here after a warning naming the impostor's uid, got %s", res)
	}
	bob.WaitReceived(1, 10*time.Second)
}

// Finding 2: no secret on a command line. Every process's command line is
// readable by every local user; the intruder reads them all, again and
// again, while agents are spawned with their MCP tokens ([serve] tcp). A
// tmux that takes its time (a wrapper that waits 300 ms before it runs
// tmux) gives a reader every chance.
func TestSpawnPutsNoTokenOnACommandLine(t *testing.T) {
	s := harness.NewTestServer(t)
	if _, err := s.ServeTCP(); err != nil {
		t.Fatal(err)
	}
	defer s.StopDaemon()
	slow := filepath.Join(shortDir(t, 0o755), "tmux")
	script := "#!/bin/sh\nsleep 0.3\nexec " + harness.TmuxBin() + " \"$@\"\n"
	if err := os.WriteFile(slow, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	scan := start(t, "scan", "amt_", "6")
	time.Sleep(200 * time.Millisecond)
	for _, name := range []string{"ana", "bea", "cy"} {
		res, err := s.Server.RunEnv([]string{"AGENTMSG_TMUX=" + slow}, "spawn", "t", name, "--", "sleep", "300")
		if err != nil || res.Code != 0 {
			t.Fatalf("spawn %s: %v %s", name, err, res)
		}
	}
	found := scan.wait(t, 20*time.Second)
	for _, f := range of(found, "found") {
		t.Errorf("an MCP token on a command line another user can read: %s", f.Cmdline)
	}
	// The token did reach each agent, in its environment (which only its
	// owner can read).
	for _, name := range []string{"ana", "bea", "cy"} {
		pid := strings.TrimSpace(s.Tmux("display-message", "-p", "-t", "=agent-t-"+name+":", "#{pane_pid}"))
		env, err := os.ReadFile("/proc/" + pid + "/environ")
		if err != nil || !strings.Contains(string(env), "AGENTMSG_MCP_TOKEN=amt_") {
			t.Errorf("agent %s (pid %s) has no token in its environment (%v)", name, pid, err)
		}
	}
}

// Finding 3: another user holding thousands of TCP connections (no
// token, no request) must not stop the daemon: with its descriptors
// limited to 1024, the owner's Unix socket keeps answering, and so does a
// TCP client with the token.
func TestATCPFloodLeavesTheOwnersDoorsOpen(t *testing.T) {
	s := harness.NewTestServer(t)
	addr, err := s.ServeTCP()
	if err != nil {
		t.Fatal(err)
	}
	defer s.StopDaemon()
	pid := s.DaemonPID()
	if err := unix.Prlimit(pid, unix.RLIMIT_NOFILE, &unix.Rlimit{Cur: 1024, Max: 1024}, nil); err != nil {
		t.Fatal(err)
	}
	token, err := os.ReadFile(filepath.Join(s.Dir, "serve-token"))
	if err != nil {
		t.Fatal(err)
	}
	flood := start(t, "flood", addr, "3000", "8")
	flood.ready(t)
	unixClient := &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{
		DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
			var d net.Dialer
			return d.DialContext(ctx, "unix", s.DaemonSocket())
		}}}
	for i := range 5 {
		resp, err := unixClient.Get("http://agentmsg/v1/version")
		if err != nil {
			t.Fatalf("the owner's Unix socket, %d: %v", i, err)
		}
		resp.Body.Close()
		req, _ := http.NewRequest(http.MethodGet, "http://"+addr+"/v1/version", nil)
		req.Header.Set("Authorization", "Bearer "+strings.TrimSpace(string(token)))
		resp, err = (&http.Client{Timeout: 5 * time.Second}).Do(req)
		if err != nil {
			t.Fatalf("TCP with the token, %d: %v", i, err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("TCP with the token, %d: %d", i, resp.StatusCode)
		}
		if n := openFiles(t, pid); n > 1000 {
			t.Errorf("the daemon holds %d descriptors", n)
		}
		time.Sleep(500 * time.Millisecond)
	}
	found := flood.wait(t, 30*time.Second)
	for _, f := range of(found, "flooded") {
		t.Logf("the intruder opened %d connections; %d still open after 8 s", f.Opened, f.StillOpen)
		if f.StillOpen > 256 {
			t.Errorf("%d of the intruder's connections were kept open", f.StillOpen)
		}
	}
	// A guess at the token is answered 401, and the connection closed.
	guess := start(t, "get", "http://"+addr+"/v1/version", "0123456789abcdef0123456789abcdef")
	for _, f := range of(guess.wait(t, 10*time.Second), "got") {
		if f.Status != http.StatusUnauthorized {
			t.Errorf("a wrong token: %+v", f)
		}
	}
}

func openFiles(t *testing.T, pid int) int {
	ents, err := os.ReadDir("/proc/" + strconv.Itoa(pid) + "/fd")
	if err != nil {
		t.Fatal(err)
	}
	return len(ents)
}

// The daemon's Unix socket lets no other user in: its mode refuses the
// connection, and with a mode opened wide, the peer check closes it
// before a byte is read.
func TestTheDaemonSocketIsTheOwnersAlone(t *testing.T) {
	s := harness.NewTestServer(t)
	if !harness.DaemonMode() {
		if err := s.StartDaemon(); err != nil {
			t.Fatal(err)
		}
		defer s.StopDaemon()
	}
	// The owner's home: others may pass through, as most homes allow.
	for _, d := range []string{s.Dir, filepath.Join(s.Dir, "state")} {
		os.Chmod(d, 0o755)
	}
	sock := s.DaemonSocket()
	for _, f := range of(start(t, "knock", sock).wait(t, 10*time.Second), "knocked") {
		if f.Connected {
			t.Errorf("another user connected to the daemon's socket: %q", f.Answer)
		}
	}
	os.Chmod(filepath.Dir(sock), 0o755)
	os.Chmod(sock, 0o666)
	for _, f := range of(start(t, "knock", sock).wait(t, 10*time.Second), "knocked") {
		if f.Answer != "" {
			t.Errorf("the daemon answered another user: %q", f.Answer)
		}
	}
}

// Nothing agentmsg keeps (mailbox, tokens, events, locks, logs) can be
// read by another user, even when the directories above it let others
// through.
func TestOtherUsersReadNothingAgentmsgKeeps(t *testing.T) {
	s := harness.NewTestServer(t)
	s.StartAgent("agent-t-bob")
	if _, err := s.ServeTCP(); err != nil {
		t.Fatal(err)
	}
	defer s.StopDaemon()
	if res := s.Run("send", "t", "bob", "a private plan"); res.Code != 0 {
		t.Fatal(res)
	}
	if res := s.Run("spawn", "t", "ana", "--", "sleep", "300"); res.Code != 0 {
		t.Fatal(res)
	}
	if res := s.Run("mcp", "token", "t", "cy"); res.Code != 0 {
		t.Fatal(res)
	}
	for _, d := range []string{s.Dir, filepath.Join(s.Dir, "state"), filepath.Join(s.Dir, "runtime"), filepath.Join(s.Dir, "config")} {
		os.Chmod(d, 0o755)
	}
	for _, f := range of(start(t, "read", s.Dir).wait(t, 20*time.Second), "read") {
		t.Logf("the intruder could read %d files and was refused %d", len(f.Readable), f.Refused)
		if f.Refused == 0 {
			t.Error("the intruder was refused nothing: did it look?")
		}
		for _, p := range f.Readable {
			if strings.Contains(p, "agentmsg") {
				t.Errorf("another user read %s", p)
			}
		}
	}
}

// Another user who makes tmux's socket directory first under a shared
// TMUX_TMPDIR (or /tmp) and runs a server there with the owner's agents'
// session names gets no message: agentmsg names servers by path (-S),
// with which tmux checks nothing, so agentmsg checks the directory as
// tmux would.
func TestAnotherUsersTmuxServerGetsNoMessage(t *testing.T) {
	shared := shortDir(t, 0o1777)
	dir := filepath.Join(shared, fmt.Sprintf("tmux-%d", os.Geteuid()))
	got := filepath.Join(shared, "got")
	tmux := exec.Command(harness.TmuxBin(), "-S", filepath.Join(dir, "default"), "-f", "/dev/null",
		"new-session", "-d", "-s", "agent-t-bob", "-x", "120", "-y", "30", "cat >"+got)
	tmux.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: intruderUID, Gid: intruderUID, Groups: []uint32{}}}
	tmux.Env = []string{"PATH=/usr/bin:/bin", "HOME=/", "SHELL=/bin/sh"} // nobody's own shell is nologin
	if err := os.Mkdir(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	os.Chown(dir, intruderUID, intruderUID)
	if out, err := tmux.CombinedOutput(); err != nil {
		t.Fatalf("the intruder's tmux: %v: %s", err, out)
	}
	t.Cleanup(func() {
		out, _ := exec.Command(harness.TmuxBin(), "-S", filepath.Join(dir, "default"), "display-message", "-p", "#{pid}").Output()
		if pid, err := strconv.Atoi(strings.TrimSpace(string(out))); err == nil {
			_ = syscall.Kill(pid, syscall.SIGTERM) // the intruder's server, started by this test
		}
	})
	home := shortDir(t, 0o700)
	for _, args := range [][]string{{"send", "--force", "t", "bob", "the secret plan"}, {"-L", "default", "send", "--force", "t", "bob", "the secret plan"}} {
		res := agentmsg(t, []string{"HOME=" + home, "TMUX_TMPDIR=" + shared, "AGENTMSG_FROM=lead"}, args...)
		if res.Code == 0 || !strings.Contains(res.Stderr, "unsafe tmux socket directory") {
			t.Errorf("agentmsg %v: want a refusal of the other user's socket directory, got %s", args, res)
		}
	}
	time.Sleep(300 * time.Millisecond)
	if b, _ := os.ReadFile(got); len(b) > 0 {
		t.Errorf("the other user's pane received %q", b)
	}
}
