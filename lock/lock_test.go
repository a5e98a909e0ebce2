package lock

import (
	"bufio"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/agentmsg/agentmsg/internal/safedir"
)

// One holder of a pane at a time, also beside holders that remove the
// lock file as they let go (an agentmsg from before it was kept).
func TestPaneExcludes(t *testing.T) {
	d := Dir{Path: t.TempDir()}
	sum := sha256.Sum256([]byte("/tmp/s"))
	name := hex.EncodeToString(sum[:8]) + "-1" // pane %1's lock, as PaneHandoff names it
	var mu sync.Mutex
	inside, maxInside := 0, 0
	var wg sync.WaitGroup
	for i := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range 20 {
				var unlock func()
				var err error
				if i%2 == 0 {
					unlock, err = d.Pane(context.Background(), "/tmp/s", "%1")
				} else {
					var h held
					h, _, err = d.take(context.Background(), name, "pane %1", false, unix.LOCK_EX)
					unlock = h.release
				}
				if err != nil {
					t.Error(err)
					return
				}
				mu.Lock()
				inside++
				maxInside = max(maxInside, inside)
				mu.Unlock()
				time.Sleep(100 * time.Microsecond)
				mu.Lock()
				inside--
				mu.Unlock()
				unlock()
			}
		}()
	}
	wg.Wait()
	if maxInside != 1 {
		t.Fatalf("%d holders at once, want 1", maxInside)
	}
}

func TestPaneKeys(t *testing.T) {
	d := Dir{Path: t.TempDir()}
	u1, err := d.Pane(context.Background(), "/tmp/s", "%1")
	if err != nil {
		t.Fatal(err)
	}
	defer u1()
	// Another pane, and the same pane on another server, are free.
	for _, k := range [][2]string{{"/tmp/s", "%2"}, {"/tmp/other", "%1"}} {
		u, err := d.Pane(context.Background(), k[0], k[1])
		if err != nil {
			t.Fatalf("lock %v: %v", k, err)
		}
		u()
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer cancel()
	if _, err := d.Pane(ctx, "/tmp/s", "%1"); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("second lock of a held pane: %v, want a deadline error", err)
	}
	u1()
	u2, err := d.Pane(context.Background(), "/tmp/s", "%1")
	if err != nil {
		t.Fatalf("lock after release: %v", err)
	}
	u2()
}

// A waiter whose time runs out is told who holds the lock: pid, command
// and since when, as the holder wrote them into the lock file.
func TestHeldNamesTheHolder(t *testing.T) {
	d := Dir{Path: t.TempDir(), Owner: "agentmsg send"}
	unlock, err := d.Pane(context.Background(), "/tmp/s", "%3")
	if err != nil {
		t.Fatal(err)
	}
	defer unlock()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Millisecond)
	defer cancel()
	_, err = Dir{Path: d.Path}.Pane(ctx, "/tmp/s", "%3")
	var held *HeldError
	if !errors.As(err, &held) || !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("err %v, want a HeldError wrapping the deadline", err)
	}
	if h := held.Holder; h == nil || h.PID != os.Getpid() || h.Command != "agentmsg send" || time.Since(h.Since) > time.Minute || held.Stopped {
		t.Fatalf("holder %+v (stopped %v), want this process, agentmsg send, just now", held.Holder, held.Stopped)
	}
	if msg := err.Error(); !strings.Contains(msg, "pane %3 is held by pid") || !strings.Contains(msg, "agentmsg send") {
		t.Errorf("error %q does not say who holds the pane", msg)
	}
}

// Waits that time out leave nothing behind: no goroutine (and thread)
// blocked in flock until the holder lets go, which for a stopped holder
// is never.
func TestTimedOutWaitsLeaveNothingBehind(t *testing.T) {
	d := Dir{Path: t.TempDir()}
	unlock, err := d.Named(context.Background(), "busy")
	if err != nil {
		t.Fatal(err)
	}
	defer unlock()
	before := runtime.NumGoroutine()
	for range 20 {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Millisecond)
		if _, err := d.Named(ctx, "busy"); err == nil {
			t.Fatal("took a held lock")
		}
		cancel()
	}
	if after := runtime.NumGoroutine(); after > before+5 {
		t.Errorf("%d goroutines after 20 timed-out waits, %d before", after, before)
	}
}

// A stopped holder (SIGSTOP) keeps its lock, but blocks no one past their
// own deadline, and is named as stopped. Killed, it frees the lock.
func TestStoppedHolderIsNamedNotWaitedFor(t *testing.T) {
	d := Dir{Path: t.TempDir()}
	holder := exec.Command(os.Args[0])
	holder.Env = append(os.Environ(), "LOCK_HELPER_DIR="+d.Path)
	out, err := holder.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := holder.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = holder.Process.Kill(); _ = holder.Wait() }()
	if _, err := bufio.NewReader(out).ReadString('\n'); err != nil {
		t.Fatalf("the helper did not take the lock: %v", err)
	}
	if err := holder.Process.Signal(syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	// The helper is stopped once /proc says so.
	for ProcessState(holder.Process.Pid) != 'T' {
		time.Sleep(time.Millisecond)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	start := time.Now()
	_, err = d.Pane(ctx, "/tmp/s", "%1")
	var held *HeldError
	if !errors.As(err, &held) || !held.Stopped || held.Holder == nil || held.Holder.PID != holder.Process.Pid {
		t.Fatalf("err %v (%+v), want a HeldError naming the stopped helper", err, held)
	}
	if took := time.Since(start); took > 5*time.Second {
		t.Errorf("waited %s for a 100ms deadline", took)
	}
	if !strings.Contains(err.Error(), "stopped") {
		t.Errorf("error %q does not say the holder is stopped", err)
	}
	_ = holder.Process.Kill()
	_ = holder.Wait()
	unlock, err := d.Pane(context.Background(), "/tmp/s", "%1")
	if err != nil {
		t.Fatalf("after the holder died: %v", err)
	}
	unlock()
}

// TestMain runs the lock holder for TestStoppedHolderIsNamedNotWaitedFor
// when started as one (LOCK_HELPER_DIR set), else the tests.
func TestMain(m *testing.M) {
	if dir := os.Getenv("LOCK_HELPER_DIR"); dir != "" {
		if _, err := (Dir{Path: dir, Owner: "helper"}).Pane(context.Background(), "/tmp/s", "%1"); err != nil {
			os.Stderr.WriteString(err.Error() + "\n")
			os.Exit(1)
		}
		os.Stdout.WriteString("held\n")
		time.Sleep(time.Hour) // until the test kills it
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// Without XDG_RUNTIME_DIR the locks live in the shared TMPDIR. A
// directory another user made there first (mode 0777) is refused, with a
// clear error, and nothing is created in it.
func TestSharedLockDirOthersControlIsRefused(t *testing.T) {
	tmp := t.TempDir()
	t.Setenv("TMPDIR", tmp)
	d := DefaultDir(func(string) (string, bool) { return "", false })
	if !strings.HasPrefix(d.Path, tmp) {
		t.Fatalf("lock dir %s, want it under TMPDIR %s", d.Path, tmp)
	}
	shared := filepath.Dir(d.Path) // agentmsg-<uid>
	if err := os.Mkdir(shared, 0o777); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(shared, 0o777); err != nil {
		t.Fatal(err)
	}
	_, err := d.Pane(context.Background(), "/tmp/s", "%1")
	if !errors.Is(err, safedir.ErrUnsafe) || !strings.Contains(err.Error(), shared) {
		t.Fatalf("err %v, want it to refuse %s", err, shared)
	}
	if _, err := os.Lstat(d.Path); err == nil {
		t.Errorf("%s was made inside it", d.Path)
	}
	// Made by us, it is used.
	if err := os.Remove(shared); err != nil {
		t.Fatal(err)
	}
	unlock, err := d.Named(context.Background(), "x")
	if err != nil {
		t.Fatal(err)
	}
	unlock()
}

// A symbolic link at a lock's name is never followed: no file of someone
// else's choosing is created or locked.
func TestSymlinkAtALockNameIsRefused(t *testing.T) {
	d := Dir{Path: t.TempDir()}
	victim := filepath.Join(t.TempDir(), "pwned")
	if err := os.Symlink(victim, filepath.Join(d.Path, "named-x.lock")); err != nil {
		t.Fatal(err)
	}
	_, err := d.Named(context.Background(), "x")
	if !errors.Is(err, safedir.ErrUnsafe) || !strings.Contains(err.Error(), "symbolic link") {
		t.Fatalf("err %v, want a refusal of the symbolic link", err)
	}
	if _, err := os.Lstat(victim); err == nil {
		t.Errorf("the link's target %s was created", victim)
	}
}

// A holder's last look reaches the next holder, whether it waited or took
// the lock free (a pass typing one message after another into the pane),
// and only that holder: one that comes after a holder that left no look,
// or after someone else held it since, gets none.
func TestHandoffGoesToTheNextHolder(t *testing.T) {
	d := Dir{Path: t.TempDir()}
	ctx := context.Background()
	prior, release, err := d.PaneHandoff(ctx, "/tmp/s", "%1")
	if err != nil || prior != nil {
		t.Fatalf("a new lock: prior %v, err %v", prior, err)
	}
	release(&Look{At: time.Now(), Screen: []string{"left while nobody waited"}})
	prior, release, err = d.PaneHandoff(ctx, "/tmp/s", "%1")
	if err != nil || prior == nil || prior.Screen[0] != "left while nobody waited" {
		t.Fatalf("a lock nobody waited for: prior %v, err %v", prior, err)
	}
	release(nil)
	if prior, release, err = d.PaneHandoff(ctx, "/tmp/s", "%1"); err != nil || prior != nil {
		t.Fatalf("after a holder that left no look: prior %v, err %v", prior, err)
	}
	got := waiter(t, d, "%1")
	at := time.Now().UTC().Truncate(time.Microsecond)
	release(&Look{At: at, Screen: []string{"╭──╮", "│ > │", "MSG_LEAD_1: done"}})
	if p := <-got; p == nil || !p.At.Equal(at) || len(p.Screen) != 3 || p.Screen[2] != "MSG_LEAD_1: done" {
		t.Fatalf("the waiter got %+v", p)
	}
	// The waiter above released with no look: the next one gets none.
	if _, release, err = d.PaneHandoff(ctx, "/tmp/s", "%1"); err != nil {
		t.Fatal(err)
	}
	got = waiter(t, d, "%1")
	release(nil)
	if p := <-got; p != nil {
		t.Errorf("a holder that left no look handed over %+v", p)
	}
}

// A pane's lock file stays between holders: a broadcast to a hundred
// agents made and removed a hundred of them, and on ext4 a file made
// costs the allocation of an inode (0.2 to 1 ms of CPU here, more the
// more were removed recently), a quarter of the daemon's time. Named
// locks, one per inbox or message, are still removed.
func TestPaneLockFileIsKept(t *testing.T) {
	d := Dir{Path: t.TempDir()}
	ctx := context.Background()
	var inodes []uint64
	for range 3 {
		_, release, err := d.PaneHandoff(ctx, "/tmp/s", "%1")
		if err != nil {
			t.Fatal(err)
		}
		release(&Look{At: time.Now(), Screen: []string{"a look"}})
		ents, _ := os.ReadDir(d.Path)
		if len(ents) != 1 {
			t.Fatalf("after a release: lock files %v, want the pane's one", ents)
		}
		info, err := ents[0].Info()
		if err != nil {
			t.Fatal(err)
		}
		inodes = append(inodes, info.Sys().(*syscall.Stat_t).Ino)
	}
	if inodes[0] != inodes[1] || inodes[1] != inodes[2] {
		t.Errorf("inodes %v: a new lock file for each holder", inodes)
	}
	unlock, err := d.Named(ctx, "typing-x")
	if err != nil {
		t.Fatal(err)
	}
	unlock()
	if ents, _ := os.ReadDir(d.Path); len(ents) != 1 {
		t.Errorf("after a named lock: lock files %v, want the pane's one", ents)
	}
	// An inbox's deliverer lock, taken by every deliver pass, stays too.
	for range 2 {
		unlock, err := d.Kept(ctx, "deliver-t-a")
		if err != nil {
			t.Fatal(err)
		}
		unlock()
	}
	if ents, _ := os.ReadDir(d.Path); len(ents) != 2 {
		t.Errorf("after a kept lock: lock files %v, want the pane's and the inbox's", ents)
	}
}

// waiter starts waiting for pane's lock on socket /tmp/s and, once it is
// waiting, returns where the look it gets will come (it lets the lock go
// at once, leaving none).
func waiter(t *testing.T, d Dir, pane string) <-chan *Look {
	t.Helper()
	got := make(chan *Look, 1)
	go func() {
		p, release, err := d.PaneHandoff(context.Background(), "/tmp/s", pane)
		if err != nil {
			t.Error(err)
			got <- nil
			return
		}
		release(nil)
		got <- p
	}()
	time.Sleep(20 * time.Millisecond) // waiting by now
	return got
}

// A waiter that times out names the holder, as before, and a look too
// large is not handed over.
func TestHandoffLimits(t *testing.T) {
	d := Dir{Path: t.TempDir(), Owner: "agentmsg send"}
	ctx := context.Background()
	_, release, err := d.PaneHandoff(ctx, "/tmp/s", "%2")
	if err != nil {
		t.Fatal(err)
	}
	short, cancel := context.WithTimeout(ctx, 10*time.Millisecond)
	defer cancel()
	var held *HeldError
	if _, _, err := d.PaneHandoff(short, "/tmp/s", "%2"); !errors.As(err, &held) || held.Holder == nil || held.Holder.Command != "agentmsg send" {
		t.Errorf("a waiter that timed out: %v", err)
	}
	got := waiter(t, d, "%2")
	release(&Look{At: time.Now(), Screen: make([]string, maxHandoffRows+1)})
	if p := <-got; p != nil {
		t.Errorf("a look of %d rows was handed over", len(p.Screen))
	}
}

// A server's pane locks live beside its socket when the socket's directory
// is private to us, and in the runtime directory otherwise; a mailbox's in
// its root.
func TestWhereLocksLive(t *testing.T) {
	fallback := Dir{Path: filepath.Join(t.TempDir(), "runtime"), Owner: "agentmsg send"}
	private := t.TempDir()
	if err := os.Chmod(private, 0o700); err != nil {
		t.Fatal(err)
	}
	d := ForServer(filepath.Join(private, "default"), fallback)
	if d.Path != filepath.Join(private, ".agentmsg-locks") || d.Owner != "agentmsg send" {
		t.Errorf("a socket in a private directory: %+v", d)
	}
	unlock, err := d.Pane(context.Background(), filepath.Join(private, "default"), "%1")
	if err != nil {
		t.Fatal(err)
	}
	unlock()
	if fi, err := os.Stat(d.Path); err != nil || fi.Mode().Perm() != 0o700 {
		t.Errorf("the lock directory: %v, %v", fi, err)
	}
	// The server killed and its directory removed: a lock taken late (a
	// daemon's control client retrying) fails and makes nothing again.
	// Before, it made the socket's directory anew, left behind for good.
	if err := os.RemoveAll(private); err != nil {
		t.Fatal(err)
	}
	if _, err := d.Named(context.Background(), "late"); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("a lock for a removed server's directory: %v", err)
	}
	if _, err := os.Lstat(private); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("the removed socket directory is back: %v", err)
	}

	shared := t.TempDir()
	if err := os.Chmod(shared, 0o1777); err != nil {
		t.Fatal(err)
	}
	if d := ForServer(filepath.Join(shared, "x"), fallback); d.Path != fallback.Path {
		t.Errorf("a socket in a shared directory locks in %s, want %s", d.Path, fallback.Path)
	}
	if d := ForServer("", fallback); d.Path != fallback.Path {
		t.Errorf("no socket: %s", d.Path)
	}
	if d := ForMailbox("/home/u/.local/state/agentmsg", "", "agentmsg deliver"); d.Path != "/home/u/.local/state/agentmsg/locks" || d.Owner != "agentmsg deliver" {
		t.Errorf("a mailbox's locks: %+v", d)
	}
}

// Every look a holder gets that is young enough for a delivery to use (5
// ms, delivery.handoffMaxAge) was left by the holder right before it, with
// eight holders taking turns as long as a delivery that types holds a pane
// (six tmux calls). Before a handed-on look was taken from its file, 1 in
// 11 came from an earlier holder, under 10 ms old, at holds of 8 ms. A
// holder that comes and goes between a waiter's polls can still slip in
// unseen; one that typed took too long for its predecessor's look to pass.
func TestHandoffComesFromTheLastHolder(t *testing.T) {
	const usable = 5 * time.Millisecond
	for _, hold := range []time.Duration{6 * time.Millisecond, 12 * time.Millisecond} {
		d := Dir{Path: t.TempDir()}
		var mu sync.Mutex
		last, stale, got, young := -1, 0, 0, 0
		holders := 0
		var wg sync.WaitGroup
		for range 8 {
			wg.Go(func() {
				for range 10 {
					prior, release, err := d.PaneHandoff(context.Background(), "/s", "%1")
					if err != nil {
						t.Error(err)
						return
					}
					mu.Lock()
					holders++
					me := holders
					if prior != nil {
						got++
						n, _ := strconv.Atoi(prior.Screen[0])
						if age := time.Since(prior.At); age <= usable {
							young++
							if n != last {
								stale++
								t.Logf("holder %d got the look of %d, %v old; the last holder was %d", me, n, age, last)
							}
						}
					}
					mu.Unlock()
					time.Sleep(hold)
					mu.Lock()
					last = me
					mu.Unlock()
					release(&Look{At: time.Now(), Screen: []string{strconv.Itoa(me)}})
				}
			})
		}
		wg.Wait()
		t.Logf("holds of %v: %d holders, %d handed a look, %d of them young enough to use", hold, holders, got, young)
		if stale > 0 {
			t.Errorf("holds of %v: %d looks young enough to use were not from the holder right before", hold, stale)
		}
	}
}

// A waiter that gives up names who holds the lock now: the holder of the
// file at the lock's path, not the last holder of the removed file it was
// waiting on (which holds that holder's look, or nothing).
func TestGivingUpNamesTheCurrentHolder(t *testing.T) {
	d := Dir{Path: t.TempDir(), Owner: "agentmsg send"}
	path := filepath.Join(d.Path, "x.lock")
	old, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		t.Fatal(err)
	}
	defer old.Close()
	leaveLook(old, &Look{At: time.Now(), Screen: []string{"the last holder's look"}})
	if err := os.Remove(path); err != nil {
		t.Fatal(err)
	}
	now, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		t.Fatal(err)
	}
	defer now.Close()
	Dir{Owner: "agentmsg deliver"}.claim(now)
	herr := heldNow(old, path, "pane %1", context.DeadlineExceeded)
	if herr.Holder == nil || herr.Holder.Command != "agentmsg deliver" || herr.Holder.PID != os.Getpid() {
		t.Errorf("gave up naming %+v, want the current holder (agentmsg deliver, pid %d)", herr.Holder, os.Getpid())
	}
	// Still the file at the path: read from it.
	if herr := heldNow(now, path, "pane %1", context.DeadlineExceeded); herr.Holder == nil || herr.Holder.Command != "agentmsg deliver" {
		t.Errorf("from the file at the path: %+v", herr.Holder)
	}
}

// Shared holders of a named lock hold it at once; an exclusive holder
// keeps them out, and they keep it out.
func TestSharedLock(t *testing.T) {
	d := Dir{Path: t.TempDir()}
	ctx := context.Background()
	now, cancel := context.WithCancel(ctx)
	cancel() // taken at once, or not at all
	a, err := d.Shared(now, "typing-x")
	if err != nil {
		t.Fatal(err)
	}
	b, err := d.Shared(now, "typing-x")
	if err != nil {
		t.Fatalf("a second shared holder: %v", err)
	}
	if _, err := d.Named(now, "typing-x"); err == nil {
		t.Fatal("taken exclusively while shared")
	}
	a()
	if _, err := d.Named(now, "typing-x"); err == nil {
		t.Fatal("taken exclusively while one shared holder is left")
	}
	b()
	if left, _ := os.ReadDir(d.Path); len(left) != 0 {
		t.Errorf("lock files left behind: %v", left)
	}
	unlock, err := d.Named(now, "typing-x")
	if err != nil {
		t.Fatalf("exclusively once the shared holders let go: %v", err)
	}
	defer unlock()
	if _, err := d.Shared(now, "typing-x"); err == nil {
		t.Error("taken shared while held exclusively")
	}
}

// A lock file written again holds the new content alone, longer or shorter
// than the old.
func TestOverwrite(t *testing.T) {
	f, err := os.CreateTemp(t.TempDir(), "x")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	for _, want := range []string{"a longer first content\n", "short\n", "longer than short\n"} {
		overwrite(f, []byte(want))
		if got, err := os.ReadFile(f.Name()); err != nil || string(got) != want {
			t.Errorf("file %q, %v; want %q", got, err, want)
		}
	}
}
