// Package mailbox is the durable per-agent mailbox behind every send.
//
// Each agent has one append-only JSON-lines inbox per team,
// <root>/teams/<team>/mailbox/<agent>.jsonl. Writers append whole lines
// under an flock on <agent>.lock, so lines from many processes never
// interleave; readers take no lock at all and skip a last line that has no
// newline yet. Nothing is rewritten in place: delivery-state changes are
// appended as update records and folded in when reading, and compaction
// writes a new file and renames it over the old one. A crash at any point
// therefore leaves a file whose complete lines are all intact.
//
// Besides inboxes the store holds per-reader cursors, open requests that
// exactly one agent can claim, and a status board.
package mailbox

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"time"

	"github.com/agentmsg/agentmsg/eventlog"
	"github.com/agentmsg/agentmsg/internal/safedir"
)

// Store is a mailbox tree rooted at Root. The zero value of the optional
// fields is usable.
type Store struct {
	Root string
	// Base, when set, is the shared directory Root was made under (the
	// fallback under TMPDIR): every directory from there down to Root must
	// then be ours, never a symbolic link. Without it Root is where the
	// user pointed, and only Root itself (followed) is checked.
	Base string
	// Now is the clock for timestamps and retention; nil means time.Now.
	Now func() time.Time
	// PollInterval is how often Wait looks at the inbox; 0 means 10ms.
	PollInterval time.Duration
	// LockWait is how often a writer waiting for another's lock asks
	// whether the holder can let it go (ErrLocked when it cannot); 0
	// means DefaultLockWait.
	LockWait time.Duration
	// MaxLockWait bounds a writer's wait for a lock held by running
	// processes; 0 means DefaultMaxLockWait.
	MaxLockWait time.Duration
	// Life is the life of the command (or daemon) the store works for:
	// once it ends (a signal, the command's time bound), a write waiting
	// for a lock gives up within StopGrace and says why. nil never ends.
	Life context.Context
	// Place is the tmux server (on its host) whose agents this store
	// serves: their teams live under <root>/places/<key>. Zero keeps them
	// in <root>/teams, the layout before places (see MigrateLegacy).
	Place Place
	// Events, when set, hears of every change the store records.
	Events *eventlog.Log
	// CheckTransitions makes every change of a message's state check that
	// the state machine lists it (Transitions), and refuse it otherwise:
	// tests set it, so that the code and the documented machine agree. It
	// costs a read of the inbox per change.
	CheckTransitions bool

	// watches are the inboxes Wait looks at, one poller each, shared by
	// every copy of the Store New made (nil: each Wait polls alone).
	watches *watchSet
	// made are the directories mkdir has made and checked in full, shared
	// by every copy of the Store New made (nil: each mkdir checks in full).
	made *sync.Map
	// unsynced is what AppendBatched wrote since the last Sync, shared
	// by every copy of the Store New made.
	unsynced *unsynced
	// root is Root as this store first found or made it, shared by every
	// copy of the Store New made (nil: never checked).
	root *rootSeen
}

func (s *Store) lockWait() time.Duration {
	if s.LockWait > 0 {
		return s.LockWait
	}
	return DefaultLockWait
}

func (s *Store) maxLockWait() time.Duration {
	if s.MaxLockWait > 0 {
		return s.MaxLockWait
	}
	return DefaultMaxLockWait
}

func (s *Store) life() context.Context {
	if s.Life != nil {
		return s.Life
	}
	return context.Background()
}

// New returns a Store rooted at root.
func New(root string) *Store {
	return &Store{Root: root, watches: &watchSet{by: map[string]*inboxWatch{}}, made: &sync.Map{},
		unsynced: &unsynced{}, root: &rootSeen{}}
}

// Default is the store at DefaultRoot.
func Default(lookupEnv func(string) (string, bool)) *Store {
	root := DefaultRoot(lookupEnv)
	s := New(root)
	if root == tmpRoot() {
		s.Base = os.TempDir()
	}
	return s
}

// Check refuses a Root (safedir.ErrUnsafe) that is not ours and private:
// a mailbox others can write to lets them forge messages that agentmsg
// would type into agents. A Root not made yet passes; directories are
// checked again as they are made or written to.
func (s *Store) Check() error {
	if s.Base != "" {
		return s.sharedHint(safedir.Check(s.Base, s.Root))
	}
	if err := safedir.CheckFollow(s.Root); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	return nil
}

// EnsureRoot makes Root when it is missing (with Base, every directory
// from there down, each 0700) and refuses it, as Check does, when it is
// not this user's and private: the daemon's socket and lock live there.
func (s *Store) EnsureRoot() error {
	if s.Base != "" {
		return s.sharedHint(safedir.Ensure(s.Base, s.Root))
	}
	if err := os.MkdirAll(s.Root, 0o700); err != nil {
		return err
	}
	return safedir.CheckFollow(s.Root)
}

// sharedHint adds to err, a refusal of the fallback root under TMPDIR, the
// way out: another user made it first, and only they (or root) can remove
// it from a shared TMPDIR.
func (s *Store) sharedHint(err error) error {
	if s.Base == "" || !errors.Is(err, safedir.ErrUnsafe) {
		return err
	}
	return fmt.Errorf("%w (the fallback used when AGENTMSG_HOME, XDG_STATE_HOME and HOME are all unset: set one of them to a private directory of yours to use that instead)", err)
}

// Open checks Root (see Check) and makes it when there is none yet, so
// that it is there, as this store knows it, for everything this process
// makes below it: a Root removed from then on is never made again, and
// what this store does afterwards fails with ErrMailboxGone.
func (s *Store) Open() error {
	if err := s.Check(); err != nil {
		return err
	}
	if err := s.mkdir(s.Root); err != nil {
		return err
	}
	return s.rootGone()
}

// ensure makes dir and the directories between it and Root (Base, for
// the shared fallback), checking each. Root itself is made only by a
// store that has not seen it yet (see Open): once seen, a Root that is
// gone stays gone.
func (s *Store) ensure(dir string) error {
	if err := s.rootGone(); err != nil {
		return err
	}
	if s.root != nil && s.root.seen() {
		return safedir.EnsureIn(s.Root, dir)
	}
	base := s.Root
	if s.Base != "" {
		base = s.Base
	}
	return safedir.Ensure(base, dir)
}

// rootSeen is a store's Root as it was first found or made.
type rootSeen struct {
	mu sync.Mutex
	fi fs.FileInfo // nil until seen
}

func (r *rootSeen) seen() bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.fi != nil
}

// rootGone says ErrMailboxGone when the Root this store first saw (at
// Open, or as mkdir made it) is no longer at its path: removed, or
// replaced by another directory. A Root not seen yet is taken as it is
// now, or left to be made.
func (s *Store) rootGone() error {
	if s.root == nil {
		return nil
	}
	fi, err := os.Stat(s.Root)
	s.root.mu.Lock()
	defer s.root.mu.Unlock()
	if s.root.fi == nil {
		if err == nil {
			s.root.fi = fi
		}
		return nil
	}
	if err != nil || !os.SameFile(s.root.fi, fi) {
		return fmt.Errorf("%w: %s was removed while this process used it; nothing is made again in its place", ErrMailboxGone, s.Root)
	}
	return nil
}

// Gone says ErrMailboxGone when Root was removed or replaced since this
// store first saw it: for a command that waits on the mailbox (wait,
// inbox --follow) and would otherwise read a missing inbox as an empty
// one for ever.
func (s *Store) Gone() error { return s.rootGone() }

// mkdir makes dir (a directory under Root) and checks every directory
// from Root (from Base, when set) down to it. A place's directory gets its
// description as it is first made. Once it has done all that for dir,
// mkdir only looks at dir itself (safedir.Still): every append called it,
// and the walk down a place's directories was a third of an append's time
// in the daemon.
func (s *Store) mkdir(dir string) error {
	if s.made != nil {
		if _, ok := s.made.Load(dir); ok && safedir.Still(dir) == nil {
			return nil
		}
	}
	if err := s.ensure(dir); err != nil {
		if gone := s.rootGone(); gone != nil {
			return gone
		}
		return err
	}
	if err := s.rootGone(); err != nil {
		return err
	}
	if !s.Place.IsZero() && strings.HasPrefix(dir, s.home()+string(filepath.Separator)) {
		if err := s.ensurePlace(); err != nil {
			return err
		}
	}
	if s.made != nil {
		s.made.Store(dir, true)
	}
	return nil
}

// DefaultRoot is $AGENTMSG_HOME, else $XDG_STATE_HOME/agentmsg, else
// $HOME/.local/state/agentmsg, else lastResortRoot. The mailbox is state
// (it must survive a reboot), so it does not live under $XDG_RUNTIME_DIR
// like the locks.
func DefaultRoot(lookupEnv func(string) (string, bool)) string {
	if v, ok := lookupEnv("AGENTMSG_HOME"); ok && v != "" {
		return v
	}
	if v, ok := lookupEnv("XDG_STATE_HOME"); ok && v != "" {
		return filepath.Join(v, "agentmsg")
	}
	if v, ok := lookupEnv("HOME"); ok && v != "" {
		return filepath.Join(v, ".local", "state", "agentmsg")
	}
	return lastResortRoot()
}

// tmpRoot is the root of last resort, in a directory every user shares.
func tmpRoot() string {
	return filepath.Join(os.TempDir(), fmt.Sprintf("agentmsg-%d", os.Getuid()), "state")
}

// ErrBadName is returned for a team, agent or reader name that could not
// safely be part of a path.
var ErrBadName = errors.New("invalid name")

// nameRe is the agent naming scheme ("ana", "ana-2", "ralph_x-7"). It has
// no '.', '/' or '..', so a name can never leave its directory.
var nameRe = regexp.MustCompile(`^[a-z][a-z0-9_]*(-[a-z0-9]+)?$`)

func checkName(kind, s string) error {
	if len(s) > 64 || !nameRe.MatchString(s) {
		return fmt.Errorf("%w: %s %q must look like \"ana\" or \"ana-2\" (lower case, digits, _, one -suffix)", ErrBadName, kind, s)
	}
	return nil
}

func (s *Store) now() time.Time {
	if s.Now != nil {
		return s.Now().UTC()
	}
	return time.Now().UTC()
}

func (s *Store) teamDir(team string) string { return filepath.Join(s.home(), "teams", team) }

// TeamDir is where everything stored for team lives.
func (s *Store) TeamDir(team string) string { return s.teamDir(team) }

// CleanTeam removes everything stored for team. Writers still running for
// that team recreate their own files; stopping them first is the caller's
// job.
func (s *Store) CleanTeam(team string) error {
	if err := checkName("team", team); err != nil {
		return err
	}
	if err := os.RemoveAll(s.teamDir(team)); err != nil {
		return fmt.Errorf("removing team %s: %w", team, err)
	}
	return nil
}
