package tmux

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"

	"github.com/agentmsg/agentmsg/internal/procs"
)

// Server names one tmux server by the path of its socket, canonical (see
// CanonicalSocket): two spellings of one socket are one server, for every
// lock and every inbox.
type Server struct {
	Socket string
}

// CanonicalSocket is the one spelling of a socket path: absolute, with
// every symbolic link resolved (the socket's own, when it exists, else its
// directory's). tmux writes $TMUX with the path as the server was started,
// a person may type a relative path or go through a symbolic link; each
// would otherwise key its own pane locks, and two senders would type into
// one pane at once. Where the file system folds case (macOS), each name is
// also spelt as the directory stores it: -S /tmp/Demo/s and $TMUX's
// /private/tmp/demo/s are one server there.
func CanonicalSocket(path string) (string, error) {
	abs, err := filepath.Abs(path)
	if err != nil {
		return "", fmt.Errorf("socket path %q: %w", path, err)
	}
	if real, err := filepath.EvalSymlinks(abs); err == nil {
		return inStoredCase(real), nil
	}
	if dir, err := filepath.EvalSymlinks(filepath.Dir(abs)); err == nil {
		return filepath.Join(inStoredCase(dir), filepath.Base(abs)), nil
	}
	return abs, nil
}

// inStoredCase is path (absolute, its links resolved) spelt as its
// directories store each name, where the file system folds case.
func inStoredCase(path string) string {
	if !foldsCase {
		return path
	}
	return storedCase(path, func(dir string) ([]string, error) {
		ents, err := os.ReadDir(dir)
		names := make([]string, len(ents))
		for i, e := range ents {
			names[i] = e.Name()
		}
		return names, err
	}, func(a, b string) bool {
		fa, err1 := os.Stat(a)
		fb, err2 := os.Stat(b)
		return err1 == nil && err2 == nil && os.SameFile(fa, fb)
	})
}

// storedCase respells each name of path as list(its directory) has it:
// the entry that equals it but for case and is the same file (same). A
// name listed as given, or not found, stays as it is.
func storedCase(path string, list func(dir string) ([]string, error), same func(a, b string) bool) string {
	out := string(filepath.Separator)
	for _, name := range strings.Split(strings.TrimPrefix(path, string(filepath.Separator)), string(filepath.Separator)) {
		if name == "" {
			continue
		}
		spelt := name
		if names, err := list(out); err == nil && !slices.Contains(names, name) {
			for _, n := range names {
				if strings.EqualFold(n, name) && same(filepath.Join(out, n), filepath.Join(out, name)) {
					spelt = n
					break
				}
			}
		}
		out = filepath.Join(out, spelt)
	}
	return out
}

// ErrBothSocketFlags is returned when -L and -S are both given.
var ErrBothSocketFlags = errors.New("use either -L NAME or -S PATH, not both")

// ResolveServer finds the socket tmux itself would use for the given flags:
// -S PATH as given; -L NAME in tmux's socket directory; else the server the
// caller runs in ($TMUX); else tmux's default server.
func ResolveServer(socketPath, socketName string, lookupEnv func(string) (string, bool)) (Server, error) {
	switch {
	case socketPath != "" && socketName != "":
		return Server{}, ErrBothSocketFlags
	case socketPath != "":
		sock, err := CanonicalSocket(socketPath)
		if err != nil {
			return Server{}, err
		}
		return Server{Socket: sock}, nil
	case socketName != "":
		if strings.ContainsRune(socketName, '/') {
			return Server{}, fmt.Errorf("socket name %q must not contain '/': use -S PATH for a path", socketName)
		}
		return inSocketDir(lookupEnv, socketName)
	}
	if c := CallerFrom(lookupEnv); c.Socket != "" {
		return Server{Socket: c.Socket}, nil
	}
	return inSocketDir(lookupEnv, "default")
}

// ErrUnsafeSocketDir is a tmux socket directory another user controls.
var ErrUnsafeSocketDir = errors.New("unsafe tmux socket directory")

// inSocketDir is the server named name in tmux's socket directory, made
// (0700) when missing and checked as tmux makes and checks it. agentmsg
// names every server by its path (-S), and with -S tmux does neither: a
// directory another user made first under a shared TMUX_TMPDIR (or /tmp)
// would hold their server, which would get every message typed and every
// spawned agent's environment, and answer as the agents. Made now, it is
// ours for as long as the caller keeps the path (a daemon, for days): in
// a directory with the sticky bit (/tmp), no one else can move it away.
func inSocketDir(lookupEnv func(string) (string, bool), name string) (Server, error) {
	dir := socketDir(lookupEnv)
	if err := os.Mkdir(dir, 0o700); err != nil && !errors.Is(err, fs.ErrExist) {
		return Server{}, fmt.Errorf("tmux's socket directory: %w", err)
	}
	if err := checkSocketDir(dir); err != nil {
		return Server{}, err
	}
	return canonical(filepath.Join(dir, name)), nil
}

// checkSocketDir applies tmux's own rule to its socket directory: this
// user's, a directory, and nothing for other users (tmux refuses it with
// "directory ... has unsafe permissions").
func checkSocketDir(dir string) error {
	fi, err := os.Lstat(dir)
	if err != nil {
		return err
	}
	var why string
	st, _ := fi.Sys().(*syscall.Stat_t)
	switch {
	case !fi.IsDir():
		why = "is not a directory"
	case st != nil && int(st.Uid) != os.Geteuid():
		why = fmt.Sprintf("is owned by uid %d, not by you (uid %d)", st.Uid, os.Geteuid())
	case fi.Mode().Perm()&0o007 != 0:
		why = fmt.Sprintf("is open to other users (mode %04o)", fi.Mode().Perm())
	default:
		return nil
	}
	return fmt.Errorf("%w: %s %s, so its server may be another user's; tmux itself refuses it: remove it, or give -S PATH to a server of yours", ErrUnsafeSocketDir, dir, why)
}

// canonical is the server at an absolute socket path, spelled canonically.
func canonical(abs string) Server {
	sock, err := CanonicalSocket(abs)
	if err != nil {
		sock = abs
	}
	return Server{Socket: sock}
}

// Caller is the tmux pane the calling process runs in, as tmux tells its
// panes: $TMUX is "socket,server-pid,session-index" and $TMUX_PANE the
// pane's id. Zero outside tmux.
type Caller struct {
	Socket    string
	ServerPID int
	Pane      string // "%12"
}

// CallerFrom reads the caller's pane from the environment (the one place
// that parses $TMUX).
func CallerFrom(lookupEnv func(string) (string, bool)) Caller {
	v, _ := lookupEnv("TMUX")
	sock, rest, _ := strings.Cut(v, ",")
	if sock == "" {
		return Caller{}
	}
	pidText, _, _ := strings.Cut(rest, ",")
	pid, _ := strconv.Atoi(pidText)
	pane, _ := lookupEnv("TMUX_PANE")
	if filepath.IsAbs(sock) {
		sock = canonical(sock).Socket
	}
	return Caller{Socket: sock, ServerPID: pid, Pane: pane}
}

// In reports whether the caller runs on server.
func (c Caller) In(server Server) bool { return c.Socket != "" && c.Socket == server.Socket }

// Binary picks the tmux binary that talks to server, and says why: the one
// configured (config tmux, AGENTMSG_TMUX); else, when the caller runs inside
// that very server, the binary the server itself runs (package procs:
// /proc/PID/exe on Linux, the path it was exec'd by on Darwin): a
// client of another release may not speak its protocol ("protocol version
// mismatch"), and an agent's shell often has another tmux first on $PATH than
// the one its server was started with; else the first tmux on $PATH (or,
// with none there, where a package manager puts it: defaultBinary).
func Binary(configured string, server Server, lookupEnv func(string) (string, bool)) (path, why string, err error) {
	if configured != "" {
		path, err = FindBinary(configured)
		return path, "configured", err
	}
	if c := CallerFrom(lookupEnv); c.In(server) && c.ServerPID > 0 {
		if exe, err := procs.Exe(c.ServerPID); err == nil && filepath.IsAbs(exe) {
			if st, err := os.Stat(exe); err == nil && st.Mode().IsRegular() && st.Mode()&0o111 != 0 {
				return exe, "the binary of the server you run in", nil
			}
		}
	}
	return defaultBinary()
}

// socketDir mirrors tmux: ${TMUX_TMPDIR:-/tmp}/tmux-UID.
func socketDir(lookupEnv func(string) (string, bool)) string {
	base := "/tmp"
	if v, ok := lookupEnv("TMUX_TMPDIR"); ok && v != "" {
		base = v
	}
	if real, err := filepath.EvalSymlinks(base); err == nil {
		base = real
	}
	return filepath.Join(base, fmt.Sprintf("tmux-%d", os.Getuid()))
}

// CallerSession names the session of the pane the caller runs in, read from
// the caller's own server ($TMUX, $TMUX_PANE); "" when not inside tmux.
func CallerSession(ctx context.Context, bin string, lookupEnv func(string) (string, bool)) (string, error) {
	caller := CallerFrom(lookupEnv)
	if caller.Socket == "" || caller.Pane == "" {
		return "", nil
	}
	server := Server{Socket: caller.Socket}
	if bin == "" {
		var err error
		if bin, _, err = Binary("", server, lookupEnv); err != nil {
			return "", err
		}
	}
	c, err := NewExec(server, bin)
	if err != nil {
		return "", err
	}
	out, err := c.run(ctx, "display-message", "-p", "-t", caller.Pane, "#{session_name}")
	return strings.TrimSpace(string(out)), err
}
