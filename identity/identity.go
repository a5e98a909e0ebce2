// Package identity keeps the tokens that say who an agent is when it talks
// to the daemon over a connection (MCP over HTTP): the daemon serves every
// agent on the machine from one process, so the caller's name and team come
// from its token, never from what a request claims.
//
// The file holds each token's SHA-256, never the token: one who reads it
// (a backup, a misplaced copy) cannot use it.
package identity

import (
	"bytes"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sync"
	"time"

	"golang.org/x/sys/unix"

	"github.com/agentmsg/agentmsg/lock"
)

// Grant is who a token speaks for.
type Grant struct {
	Team         string `json:"team"`
	Name         string `json:"name"`
	Orchestrator bool   `json:"orchestrator,omitempty"`
	// Session is the tmux session agentmsg spawn issued the token for: a
	// later spawn of that session revokes it (RevokeSession).
	Session string `json:"session,omitempty"`
	// Socket is the tmux server (its canonical socket) whose agent the
	// token speaks for: the same name on another server is another agent,
	// with another inbox. "" (a token of an older agentmsg): the daemon's
	// own server.
	Socket string    `json:"socket,omitempty"`
	Issued time.Time `json:"issued"`
}

// EnvVar is the environment variable that holds an agent's token where a
// settings file shared by several agents refers to it (mcp install --http
// without --team and --from), and where agentmsg spawn puts it.
const EnvVar = "AGENTMSG_MCP_TOKEN"

// Tokens is the token file at Path.
type Tokens struct {
	Path string
	// MaxLockWait bounds a change's wait for the file's lock (held for
	// one rewrite of a small file); 0 is DefaultMaxLockWait.
	MaxLockWait time.Duration

	mu    sync.Mutex
	raw   []byte // the file's bytes byKey was parsed from
	byKey map[string]Grant
}

// DefaultMaxLockWait bounds a change's wait for the token file's lock: a
// holder stopped (Ctrl-Z) while it rewrote the file used to keep every
// spawn and token command waiting for as long, signals or not.
const DefaultMaxLockWait = 10 * time.Second

// DefaultPath is the token file of the mailbox at root.
func DefaultPath(root string) string { return filepath.Join(root, "mcp-tokens.json") }

func key(token string) string {
	sum := sha256.Sum256([]byte(token))
	return hex.EncodeToString(sum[:])
}

// Issue makes a new token for g and records it; the token is returned once
// and kept nowhere else.
func (t *Tokens) Issue(g Grant) (string, error) {
	b := make([]byte, 32)
	if _, err := rand.Read(b); err != nil {
		return "", err
	}
	token := "amt_" + hex.EncodeToString(b)
	if g.Issued.IsZero() {
		g.Issued = time.Now().UTC()
	}
	err := t.update(func(m map[string]Grant) { m[key(token)] = g })
	return token, err
}

// Revoke removes every token of team/name.
func (t *Tokens) Revoke(team, name string) (int, error) {
	n := 0
	err := t.remove(func(m map[string]Grant) {
		for k, g := range m {
			if g.Team == team && g.Name == name {
				delete(m, k)
				n++
			}
		}
	})
	return n, err
}

// Forget removes token, and reports whom it spoke for (ok false: it was
// not known).
func (t *Tokens) Forget(token string) (g Grant, ok bool, err error) {
	if token == "" {
		return Grant{}, false, nil
	}
	err = t.remove(func(m map[string]Grant) {
		if g, ok = m[key(token)]; ok {
			delete(m, key(token))
		}
	})
	return g, ok, err
}

// RevokeSession removes the tokens issued for session on the tmux server
// at socket, except keep: an earlier spawn's, once a new one of that
// session holds keep. A token that names no server (an older agentmsg's)
// is taken as the session's on any.
func (t *Tokens) RevokeSession(socket, session, keep string) (int, error) {
	n := 0
	err := t.remove(func(m map[string]Grant) {
		for k, g := range m {
			if g.Session == session && (g.Socket == socket || g.Socket == "") && k != key(keep) {
				delete(m, k)
				n++
			}
		}
	})
	return n, err
}

// Lookup is who token speaks for.
func (t *Tokens) Lookup(token string) (Grant, bool) {
	if token == "" {
		return Grant{}, false
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if err := t.reload(); err != nil {
		return Grant{}, false
	}
	g, ok := t.byKey[key(token)]
	return g, ok
}

// reload reads the file and parses it again when its bytes changed. It
// reads it whole each time: no cheaper sign of a change holds (a rewrite
// within one tick of the file system's clock keeps the time, a token
// revoked while another was issued keeps the size, and the new file may
// get the old one's inode), and a revoked token must stop working at once.
// The file is small (about 200 bytes a token). t.mu is held.
func (t *Tokens) reload() error {
	b, err := os.ReadFile(t.Path)
	if errors.Is(err, fs.ErrNotExist) {
		t.byKey, t.raw = map[string]Grant{}, nil
		return nil
	}
	if err != nil {
		return err
	}
	if t.byKey != nil && bytes.Equal(b, t.raw) {
		return nil
	}
	m, err := parse(t.Path, b)
	if err != nil {
		return err
	}
	t.byKey, t.raw = m, b
	return nil
}

func read(path string) (map[string]Grant, error) {
	b, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return map[string]Grant{}, nil
	}
	if err != nil {
		return nil, err
	}
	return parse(path, b)
}

func parse(path string, b []byte) (map[string]Grant, error) {
	m := map[string]Grant{}
	if err := json.Unmarshal(b, &m); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return m, nil
}

// remove is update for a change that only takes tokens away: with no file
// there is nothing to take, and none is made.
func (t *Tokens) remove(fn func(map[string]Grant)) error {
	if _, err := os.Stat(t.Path); errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	return t.update(fn)
}

// update changes the file under an flock, atomically (a temp file renamed
// over it), mode 0600.
func (t *Tokens) update(fn func(map[string]Grant)) error {
	dir := filepath.Dir(t.Path)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return err
	}
	lf, err := os.OpenFile(t.Path+".lock", os.O_RDWR|os.O_CREATE|unix.O_NOFOLLOW, 0o600)
	if err != nil {
		return err
	}
	most := t.MaxLockWait
	if most <= 0 {
		most = DefaultMaxLockWait
	}
	if err := (lock.Wait{Most: most, Path: t.Path + ".lock", Look: time.Second}).Flock(lf, unix.LOCK_EX); err != nil {
		return fmt.Errorf("locking %s: %w", filepath.Base(t.Path), err)
	}
	defer lf.Close()
	m, err := read(t.Path)
	if err != nil {
		return err
	}
	fn(m)
	data, err := json.MarshalIndent(m, "", "  ")
	if err != nil {
		return err
	}
	tmp, err := os.CreateTemp(dir, ".mcp-tokens-*")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name())
	if _, err := tmp.Write(append(data, '\n')); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Sync(); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	return os.Rename(tmp.Name(), t.Path)
}
