package tmux

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/agentmsg/agentmsg/lock"
)

// The tests below SIGKILL a process that owns a control client, as the
// daemon may be killed: the test binary itself, started again as that
// owner (TestMain).
const (
	ownerSocketEnv = "AGENTMSG_TEST_CONTROL_OWNER"       // the server's socket
	ownerLocksEnv  = "AGENTMSG_TEST_CONTROL_OWNER_LOCKS" // the lock directory
	ownerPaneEnv   = "AGENTMSG_TEST_CONTROL_OWNER_PANE"  // the pane it works on
	ownerHoldEnv   = "AGENTMSG_TEST_CONTROL_OWNER_HOLD"  // see runOwner
)

func TestMain(m *testing.M) {
	if sock := os.Getenv(ownerSocketEnv); sock != "" {
		os.Exit(runOwner(sock))
	}
	os.Exit(m.Run())
}

// runOwner starts a Control, says "started PID" when its client process
// starts and "attached PID" once it is attached, then runs commands
// through it until it is killed. With ownerHoldEnv set to a duration, a
// process of ours keeps the client's input open that long after we die,
// so that the client stays attached past its owner's death.
func runOwner(sock string) int {
	e, err := NewExec(Server{Socket: sock}, os.Getenv("AGENTMSG_TMUX"))
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	ctl := newControl(e.Server(), e.Bin(), lock.Dir{Path: os.Getenv(ownerLocksEnv)})
	ctl.started = func(pid int) { fmt.Printf("started %d\n", pid) }
	go ctl.supervise()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if err := ctl.WaitAttached(ctx); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	if hold := os.Getenv(ownerHoldEnv); hold != "" {
		cmd := exec.Command("sleep", hold)
		cmd.ExtraFiles = []*os.File{ctl.conn.Load().stdin}
		if err := cmd.Start(); err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 2
		}
	}
	fmt.Printf("attached %d\n", ctl.conn.Load().pid)
	if err := e.UseControl(ctl); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	pane := os.Getenv(ownerPaneEnv)
	for i := 0; ; i++ {
		_, _ = e.LeaveModeCapture(ctx, pane)
		_ = e.Paste(ctx, pane, fmt.Sprintf("owner %d", i))
		_ = e.SendBytes(ctx, pane, '\r')
		_, _ = e.ListPanes(ctx)
	}
}

// owner is a running owner process.
type owner struct {
	cmd   *exec.Cmd
	lines chan string
}

func startOwner(t *testing.T, e *Exec, locks, pane string, env ...string) *owner {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), ownerSocketEnv+"="+e.Server().Socket, ownerLocksEnv+"="+locks, ownerPaneEnv+"="+pane, "AGENTMSG_TMUX="+e.Bin())
	cmd.Env = append(cmd.Env, env...)
	cmd.Stderr = os.Stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	o := &owner{cmd: cmd, lines: make(chan string, 16)}
	go func() {
		defer close(o.lines)
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			o.lines <- sc.Text()
		}
	}()
	return o
}

// await waits for the owner's line starting with word and returns its pid.
func (o *owner) await(t *testing.T, word string) int {
	t.Helper()
	timeout := time.After(20 * time.Second)
	for {
		select {
		case line, ok := <-o.lines:
			if !ok {
				t.Fatalf("the owner ended before saying %q", word)
			}
			if rest, found := strings.CutPrefix(line, word+" "); found {
				pid, _ := strconv.Atoi(rest)
				return pid
			}
		case <-timeout:
			t.Fatalf("the owner did not say %q in 20s", word)
		}
	}
}

// kill SIGKILLs the owner (never its tmux client: that runs in a process
// group of its own and is never signalled) and reaps it.
func (o *owner) kill() {
	_ = o.cmd.Process.Kill()
	_ = o.cmd.Wait()
}

// lockHeld reports whether someone holds the flock on path.
func lockHeld(t *testing.T, path string) bool {
	t.Helper()
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	err = unix.Flock(int(f.Fd()), unix.LOCK_EX|unix.LOCK_NB)
	if errors.Is(err, unix.EWOULDBLOCK) {
		return true
	}
	if err != nil {
		t.Fatal(err)
	}
	return false // closing f lets it go
}

// gone reports whether process pid has exited (a zombie has let go of
// its files).
func gone(pid int) bool {
	s := lock.ProcessState(pid)
	return s == 0 || s == 'Z'
}

// The lock is the client process's, not its owner's: an owner SIGKILLed
// while its client is still attached leaves the lock held until that
// client has left and exited.
func TestControlLockOutlivesItsOwner(t *testing.T) {
	e, raw := testServer(t)
	needControl(t, e.Bin())
	locks := t.TempDir()
	o := startOwner(t, e, locks, "=agent-alpha-ana-2:", ownerHoldEnv+"=3")
	client := o.await(t, "attached")
	lockPath := newControl(e.Server(), e.Bin(), lock.Dir{Path: locks}).lockPath()
	o.kill()
	held := lockHeld(t, lockPath)
	if gone(client) {
		t.Fatalf("the client left within 3s of its owner's death: nothing to tell")
	}
	if !held {
		t.Fatalf("the owner was killed and the lock was free while its tmux client (pid %d) still ran", client)
	}
	// Output for it while its owner is dead: tmux lets it go only once
	// that is written, and no one but its drainer reads it now.
	raw("rename-window", "-t", "=agent-alpha-ana-2:", "renamed")
	raw("new-window", "-d", "-t", "=agent-alpha-ana-2:", "cat")
	// Once its input ends (the holder exits), it leaves; then the lock is
	// free, and a new client attaches.
	waitFor(t, func() bool { return !lockHeld(t, lockPath) })
	waitFor(t, func() bool { return gone(client) })
	raw("has-session", "-t", "=agent-alpha-ana-2")
	ctl := startControl(t, e)
	if res, ok := ctl.run([][]string{{"display-message", "-p", "again"}}, nil, false); !ok || string(res.stdout) != "again\n" {
		t.Fatalf("a new client after the old one left: %+v", res)
	}
}

// The hazard of issue 18, repeated: an owner SIGKILLed at a random moment
// (during its client's attach, or while commands run through it) while
// the next owner is already waiting to attach (it must wait for the lock
// until the killed owner's client has gone), two loops of ordinary
// commands beside them throughout. The server must be alive after every
// kill, and never list two control clients at once. 30 rounds; set
// AGENTMSG_CONTROL_CHAOS=N for more.
func TestControlChaos(t *testing.T) {
	if testing.Short() {
		t.Skip("kills processes for a while")
	}
	rounds := 30
	if v := os.Getenv("AGENTMSG_CONTROL_CHAOS"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil {
			t.Fatalf("AGENTMSG_CONTROL_CHAOS=%q", v)
		}
		rounds = n
	}
	e, raw := testServer(t)
	needControl(t, e.Bin())
	ctx := context.Background()
	pane, err := sessionPane(ctx, e, "agent-alpha-ana-2")
	if err != nil {
		t.Fatal(err)
	}
	segfaults := kernelSegfaults()
	locks := t.TempDir()

	var wg sync.WaitGroup
	stop := make(chan struct{})
	var ordinary, maxControl atomic.Int64
	running := func(f func()) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				select {
				case <-stop:
					return
				default:
				}
				f()
			}
		}()
	}
	running(func() {
		_ = e.SendBytes(ctx, pane.ID, 'x', '\r')
		ordinary.Add(1)
	})
	running(func() {
		_, _ = e.Capture(ctx, pane.ID, 0)
		ordinary.Add(1)
	})
	running(func() {
		out, _ := exec.Command(e.Bin(), "-S", e.Server().Socket, "list-clients", "-F", "#{client_control_mode}").Output()
		if n := int64(strings.Count(string(out), "1")); n > maxControl.Load() {
			maxControl.Store(n)
		}
	})
	next := startOwner(t, e, locks, pane.ID)
	defer func() {
		next.kill()
		close(stop)
		wg.Wait()
	}()

	duringAttach, midCommand := 0, 0
	for i := range rounds {
		cur := next
		var at time.Time
		var pause time.Duration
		if i%2 == 0 {
			cur.await(t, "started")
			at, pause = time.Now(), time.Duration(rand.IntN(30_000))*time.Microsecond
			duringAttach++
		} else {
			cur.await(t, "attached")
			at, pause = time.Now(), time.Duration(50+rand.IntN(750))*time.Millisecond
			midCommand++
		}
		next = startOwner(t, e, locks, pane.ID) // waits for cur's client to go
		time.Sleep(time.Until(at.Add(pause)))
		cur.kill()
		if out, err := exec.Command(e.Bin(), "-S", e.Server().Socket, "has-session", "-t", "=agent-alpha-ana-2").CombinedOutput(); err != nil {
			t.Fatalf("round %d: the server is gone after its control client's owner was killed: %v %s (kernel: %d tmux segfaults before, %d now)",
				i, err, out, segfaults, kernelSegfaults())
		}
	}
	raw("has-session")
	if n := maxControl.Load(); n > 1 {
		t.Errorf("the server listed %d control clients at once", n)
	}
	t.Logf("%d owners killed (%d during attach, %d while commands ran), the next one waiting each time, %d ordinary commands beside them; server alive; at most %d control client at once; kernel tmux segfaults %d before, %d after",
		rounds, duringAttach, midCommand, ordinary.Load(), maxControl.Load(), segfaults, kernelSegfaults())
}

// kernelSegfaults counts the kernel's "tmux ... segfault" lines; -1 when
// the kernel log cannot be read.
func kernelSegfaults() int {
	out, err := exec.Command("dmesg").Output()
	if err != nil {
		return -1
	}
	n := 0
	for line := range strings.SplitSeq(string(out), "\n") {
		if strings.Contains(line, "tmux") && strings.Contains(line, "segfault") {
			n++
		}
	}
	return n
}
