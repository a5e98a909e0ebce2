// Package lock serialises deliveries to one tmux pane across processes.
//
// Where: a pane's lock beside its server's socket (ForServer), the locks of
// an inbox in its mailbox (ForMailbox), so that processes whose
// environments differ (a hook, an MCP server, a desktop app) still share
// them; the runtime directory (DefaultDir) only for a socket in a shared
// directory.
//
// Two senders that each type text and then press Enter in separate tmux
// commands interleave (measured: 279 of 321 lines merged); inside one flock
// per (server socket, pane) none did. The lock is an flock(2) on a file, so
// it is released by the kernel when a holder dies, and it works between
// any processes of the same user.
//
// A holder that looked at its pane leaves its last look in the lock file as
// it lets go (PaneHandoff), and the waiter that takes over reads it from the
// file it won: a delivery that waited for the pane then needs one fresh look,
// not two, before it types (package delivery; eight senders to one agent
// went from 46 to 50-57 messages a second on tmux 3.3a, scripts/bench).
//
// A waiter never waits past its context: a holder that is stopped
// (SIGSTOP) or stuck is named (pid, command, since when: the holder writes
// them into the lock file) instead of blocking everyone behind it.
package lock

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"time"

	"golang.org/x/sys/unix"

	"github.com/agentmsg/agentmsg/internal/plainfile"
	"github.com/agentmsg/agentmsg/internal/safedir"
)

// Dir holds the lock files.
type Dir struct {
	Path string
	// Base is the directory Path was made under (XDG_RUNTIME_DIR, TMPDIR):
	// every directory below it must be ours and private (package safedir).
	// "" checks Path alone.
	Base string
	// Owner names the holder in the lock files it holds ("agentmsg send"),
	// so that a sender kept waiting can say who holds the pane; "" is
	// "agentmsg".
	Owner string
	// Within, when set, is a directory Path is made in only while it
	// exists: a tmux server's socket directory, which tmux made and a
	// person (or a test) removes with the server. A lock taken after that
	// fails instead of making the directory again.
	Within string
	// InShared: Path is the fallback under TMPDIR, a directory every user
	// shares, used because XDG_RUNTIME_DIR is unset.
	InShared bool
}

// Ensure makes the lock directory, or checks it (package safedir).
func (d Dir) Ensure() error {
	if d.Within == "" {
		err := safedir.Ensure(d.Base, d.Path)
		if d.InShared && errors.Is(err, safedir.ErrUnsafe) {
			// Another user made it first, and only they (or root) can
			// remove it from a shared TMPDIR: the way out is a directory
			// of one's own.
			err = fmt.Errorf("%w (the fallback used when XDG_RUNTIME_DIR is unset: set XDG_RUNTIME_DIR to a private directory of yours, such as /run/user/%d, to use that instead)", err, os.Getuid())
		}
		return err
	}
	if err := safedir.Check(d.Base, d.Path); err != nil {
		return err
	}
	if _, err := os.Lstat(d.Within); err != nil {
		return err
	}
	// Mkdir, not MkdirAll: Within gone since the look above stays gone.
	if err := os.Mkdir(d.Path, 0o700); err != nil && !errors.Is(err, fs.ErrExist) {
		return err
	}
	return safedir.Still(d.Path)
}

// DefaultDir is $XDG_RUNTIME_DIR/agentmsg/locks, else
// $TMPDIR/agentmsg-<uid>/locks.
func DefaultDir(lookupEnv func(string) (string, bool)) Dir {
	if v, ok := lookupEnv("XDG_RUNTIME_DIR"); ok && v != "" {
		return Dir{Path: filepath.Join(v, "agentmsg", "locks"), Base: v}
	}
	// A shared directory: anyone may have made agentmsg-<uid> first, so
	// it is checked before use (see Base).
	tmp := os.TempDir()
	return Dir{Path: filepath.Join(tmp, fmt.Sprintf("agentmsg-%d", os.Getuid()), "locks"), Base: tmp, InShared: true}
}

// ForServer is where the pane locks of the tmux server at socket live:
// in the socket's own directory (.agentmsg-locks), when that directory is
// private to this user, as tmux makes its /tmp/tmux-UID. Every process that
// types into that server's panes knows its socket, whatever its
// XDG_RUNTIME_DIR or TMPDIR: a sender, an agent's hook that runs deliver,
// an MCP server started by an agent CLI, a desktop app's backend. Locks
// under each one's own runtime directory let two of them type into one pane
// at once when their environments differed (seen in the live tests: a
// turn-end hook's deliver pasted a message its sender was still typing).
// A socket in a directory others can write to (-S /tmp/x) uses fallback,
// the runtime directory.
func ForServer(socket string, fallback Dir) Dir {
	dir := filepath.Dir(socket)
	if socket == "" || safedir.Check("", dir) != nil {
		return fallback
	}
	// Base above dir: the socket's directory is checked again each time a
	// lock is taken, not only now.
	return Dir{Path: filepath.Join(dir, ".agentmsg-locks"), Base: filepath.Dir(dir), Owner: fallback.Owner, Within: dir}
}

// ForMailbox is where the locks of a mailbox's inboxes live (one deliverer
// per inbox, one typist per message): in the mailbox root, which every
// process that reads and writes those inboxes shares by definition. base is
// the directory root was made under when it is a shared fallback (see
// mailbox.Store.Base), else "". The root is made by the mailbox (Store.Open),
// never here: one removed under a running command stays removed.
func ForMailbox(root, base, owner string) Dir {
	return Dir{Path: filepath.Join(root, "locks"), Base: base, Owner: owner, Within: root}
}

// Holder is who holds a lock, as its lock file says.
type Holder struct {
	PID     int       `json:"pid"`
	Command string    `json:"command,omitempty"`
	Since   time.Time `json:"since"`
}

// HeldError is a lock that stayed held until the waiter's context ended.
type HeldError struct {
	What string // "pane %3", "deliver-alpha-ana"
	// Holder is nil when the lock file does not say (it was taken a moment
	// ago, or by an older agentmsg).
	Holder *Holder
	// Stopped: the holder is stopped (SIGSTOP, a debugger) and keeps the
	// lock until it is continued or killed. Gone: it has exited, and a
	// process that inherited the file keeps the lock.
	Stopped, Gone bool
	Err           error // the context's
}

func (e *HeldError) Error() string {
	who := "another process"
	if h := e.Holder; h != nil {
		cmd := h.Command
		if cmd == "" {
			cmd = "agentmsg"
		}
		who = fmt.Sprintf("pid %d (%s, since %s, %s ago)", h.PID, cmd,
			h.Since.Local().Format(time.TimeOnly), time.Since(h.Since).Round(time.Second))
		switch {
		case e.Stopped:
			who += ", which is stopped: it keeps the lock until it is continued (kill -CONT) or killed"
		case e.Gone:
			who += ", which has exited (a process it started still holds the lock file)"
		}
	}
	return fmt.Sprintf("%s is held by %s", e.What, who)
}

func (e *HeldError) Unwrap() error { return e.Err }

// Pane takes the exclusive lock for one pane of one server, waiting until it
// is free or ctx ends (then with a *HeldError naming the holder). The
// returned func releases it.
//
// The lock file stays when it is let go: one file per pane used, a few
// kilobytes each (the last holder's look), where making and removing one
// per delivery cost the allocation and release of an inode each time (on
// ext4 a quarter of the daemon's time in a broadcast to a hundred agents).
// A holder checks, once it has the lock, that the file it locked is still
// the one at the path, so a waiter that wins the lock on a file removed
// meanwhile (by an agentmsg from before, which removed them) starts over.
func (d Dir) Pane(ctx context.Context, socket, paneID string) (unlock func(), err error) {
	_, release, err := d.PaneHandoff(ctx, socket, paneID)
	if err != nil {
		return nil, err
	}
	return func() { release(nil) }, nil
}

// Look is a holder's last look at its pane, left for the next holder.
type Look struct {
	At     time.Time `json:"at"` // when the look was asked for
	Screen []string  `json:"screen"`
}

// Looks larger than this are not handed over.
const (
	maxHandoffRows  = 500
	maxHandoffBytes = 64 << 10
)

// PaneHandoff is Pane for holders that look at the pane: release leaves
// the holder's last look (nil: none) in the lock file as it lets go, and a
// waiter that takes over gets it as prior. A delivery that waited for the
// pane then needs one fresh look, not two, before it types: the prior
// look is the first of the two that must agree (package delivery decides
// whether it is recent enough). prior is nil when the lock was free, or
// its last holder left no look.
func (d Dir) PaneHandoff(ctx context.Context, socket, paneID string) (prior *Look, release func(last *Look), err error) {
	if err := d.Ensure(); err != nil {
		return nil, nil, fmt.Errorf("lock directory: %w", err)
	}
	sum := sha256.Sum256([]byte(socket))
	f, prior, err := d.take(ctx, hex.EncodeToString(sum[:8])+"-"+strings.TrimPrefix(paneID, "%"), "pane "+paneID, true, unix.LOCK_EX)
	if err != nil {
		return nil, nil, err
	}
	return prior, func(last *Look) {
		if last != nil {
			leaveLook(f.file, last)
		}
		f.release()
	}, nil
}

// Named takes the exclusive lock called name (letters, digits, - and _),
// for work other than typing into a pane: one deliverer per inbox, say.
func (d Dir) Named(ctx context.Context, name string) (unlock func(), err error) {
	return d.named(ctx, name, unix.LOCK_EX, false)
}

// Shared takes the lock called name shared: any number of shared holders
// at once, and none while Named holds it exclusively (nor Named while they
// hold it).
func (d Dir) Shared(ctx context.Context, name string) (unlock func(), err error) {
	return d.named(ctx, name, unix.LOCK_SH, false)
}

// Kept is Named for a lock of which there are few and that is taken often
// (one per inbox, taken by every deliver pass): its file stays when let
// go, as a pane's does, instead of an inode made and freed each time.
// Named removes its file: most of its names are used once (a message's).
func (d Dir) Kept(ctx context.Context, name string) (unlock func(), err error) {
	return d.named(ctx, name, unix.LOCK_EX, true)
}

func (d Dir) named(ctx context.Context, name string, how int, keep bool) (unlock func(), err error) {
	if err := d.Ensure(); err != nil {
		return nil, fmt.Errorf("lock directory: %w", err)
	}
	h, _, err := d.take(ctx, "named-"+name, name, keep, how)
	if err != nil {
		return nil, err
	}
	return h.release, nil
}

// held is a lock file we hold.
type held struct {
	file   *os.File
	path   string
	keep   bool // the file stays when let go (a pane's)
	shared bool // held shared: others may hold it too
}

// release lets the lock go, removing the lock file first unless it is
// kept: no one can hold it in between, and a waiter that wins the
// removed file starts over. Of shared holders, the last removes it: one
// that can then take it exclusively holds it alone (should two let go at
// once, neither may, and the file is left for the next holder).
func (h held) release() {
	switch {
	case h.keep:
	case h.shared:
		if unix.Flock(int(h.file.Fd()), unix.LOCK_EX|unix.LOCK_NB) == nil {
			os.Remove(h.path)
		}
	default:
		os.Remove(h.path)
	}
	h.file.Close() // closing the file releases the flock
}

// leaveLook writes last over the holder's claim, for the waiter that wins
// the file next (best effort).
func leaveLook(f *os.File, last *Look) {
	if len(last.Screen) == 0 || len(last.Screen) > maxHandoffRows {
		return
	}
	b, err := json.Marshal(handoff{Look: last})
	if err != nil || len(b) > maxHandoffBytes {
		return
	}
	overwrite(f, b)
}

// handoff is a released lock file's content: its last holder's look.
type handoff struct {
	Look *Look `json:"handoff"`
}

// readLook reads the look a lock file's last holder left, if any.
func readLook(f *os.File) *Look {
	b, err := io.ReadAll(io.NewSectionReader(f, 0, maxHandoffBytes))
	var h handoff
	if err != nil || json.Unmarshal(b, &h) != nil || h.Look == nil || len(h.Look.Screen) == 0 {
		return nil
	}
	return h.Look
}

// Waiters poll: from pollMin, doubling up to pollMax. A blocking flock
// cannot be called off when ctx ends, and one left behind ties up a thread
// until the holder lets go (forever, behind a stopped holder).
const (
	pollMin = 500 * time.Microsecond
	pollMax = 2 * time.Millisecond
)

// take locks the file called name (how: LOCK_EX or LOCK_SH), which stays
// when let go if keep. An exclusive holder writes who it is into the file
// (claim); shared holders, who may be many, write nothing.
// prior is the look that the last holder left as it let go: read from the
// file we won, whether we waited for it or found it free (a pass typing
// one message after another into a pane takes its last look as the next
// one's first), or from a removed file we won, and then kept only when the
// next file's lock is ours at once. (Waiting again means someone
// else held it since; their look comes with the file we win next.) A look
// goes to one waiter only: the first to win it overwrites it with its
// claim while it holds the lock, so a waiter that wins the same file
// later, after that first one has typed, finds none (without this, 1 look
// in 11 was stale at holds of 8 ms). A holder that comes and goes between
// a waiter's polls can still slip in unseen; package delivery's age limit
// covers that (see TestHandoffComesFromTheLastHolder).
func (d Dir) take(ctx context.Context, name, what string, keep bool, how int) (h held, prior *Look, err error) {
	path := filepath.Join(d.Path, name+".lock")
	wait := pollMin
	var f *os.File
	for {
		if f == nil {
			// Never through a symbolic link: it would make us create or
			// lock a file of someone else's choosing.
			if f, err = plainfile.Open(path, os.O_RDWR|os.O_CREATE|unix.O_NOFOLLOW, 0o600); err != nil {
				if errors.Is(err, unix.ELOOP) {
					return held{}, nil, fmt.Errorf("%w: lock file %s is a symbolic link; not following it (remove it)", safedir.ErrUnsafe, path)
				}
				return held{}, nil, fmt.Errorf("lock file: %w", err)
			}
		}
		err := unix.Flock(int(f.Fd()), how|unix.LOCK_NB)
		switch {
		case err == nil && same(f, path):
			if prior == nil {
				prior = readLook(f)
			}
			if how == unix.LOCK_EX {
				d.claim(f)
			}
			return held{file: f, path: path, keep: keep, shared: how == unix.LOCK_SH}, prior, nil
		case err == nil:
			// The previous holder removed it: lock the new one.
			prior = readLook(f)
			_ = f.Truncate(0) // taken: the next winner of this file gets none
			f.Close()
			f = nil
			continue
		case !errors.Is(err, unix.EWOULDBLOCK) && !errors.Is(err, unix.EINTR):
			f.Close()
			return held{}, nil, fmt.Errorf("locking %s: %w", what, err)
		}
		prior = nil // someone holds it: their look comes with the file we win
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			herr := heldNow(f, path, what, ctx.Err())
			f.Close()
			return held{}, nil, herr
		case <-t.C:
		}
		wait = min(2*wait, pollMax)
	}
}

// claim writes who holds f into it (best effort: the lock holds anyway).
func (d Dir) claim(f *os.File) {
	owner := d.Owner
	if owner == "" {
		owner = "agentmsg"
	}
	b, err := json.Marshal(Holder{PID: os.Getpid(), Command: owner, Since: time.Now().UTC()})
	if err != nil {
		return
	}
	overwrite(f, append(b, '\n'))
}

// overwrite makes b the content of f (best effort): written over the old
// content, then cut to its length. Cutting first to nothing and writing
// again freed the file's block and took a new one, on every take and
// release of a pane's lock.
func overwrite(f *os.File, b []byte) {
	if _, err := f.WriteAt(b, 0); err == nil {
		_ = f.Truncate(int64(len(b)))
	}
}

// heldNow reads who holds the lock from the file now at path: a waiter's
// own file f may have been let go and removed (its last holder's look in
// it, or nothing) while another holder took a new one, which names who
// holds the lock now. f when it is still that file, or path cannot be read.
func heldNow(f *os.File, path, what string, cause error) *HeldError {
	if same(f, path) {
		return heldBy(f, what, cause)
	}
	now, err := os.OpenFile(path, os.O_RDONLY|unix.O_NOFOLLOW, 0)
	if err != nil {
		return heldBy(f, what, cause)
	}
	defer now.Close()
	return heldBy(now, what, cause)
}

// heldBy reads who holds the lock on f.
func heldBy(f *os.File, what string, cause error) *HeldError {
	e := &HeldError{What: what, Err: cause}
	b, err := io.ReadAll(io.NewSectionReader(f, 0, 4096))
	var h Holder
	if err != nil || json.Unmarshal(b, &h) != nil || h.PID <= 0 {
		return e
	}
	e.Holder = &h
	switch state := ProcessState(h.PID); state {
	case 0:
		e.Gone = true
	case 'T', 't':
		e.Stopped = true
	}
	return e
}

// same reports whether f is the file now at path.
func same(f *os.File, path string) bool {
	held, err1 := f.Stat()
	now, err2 := os.Stat(path)
	return err1 == nil && err2 == nil && os.SameFile(held, now)
}
