package mailbox

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
)

// Place is where agents live: one tmux server, named by its canonical
// socket path, on one host. Each place keeps its own teams: inboxes,
// cursors, requests, the status board and the registry. A message kept for
// agent-tw-ana on one server is never seen or typed by a deliver run
// against another server that also has an agent-tw-ana; a server
// restarted at the same socket is the same place, so what was kept for
// its agents waits for them there.
type Place struct {
	Host   string `json:"host"`
	Socket string `json:"socket"`
}

// IsZero reports whether p names no place: the store's own root, as for
// stores made before places (tests, the legacy layout being migrated).
func (p Place) IsZero() bool { return p == Place{} }

// Key is p's directory name under <root>/places: the socket's base name,
// for a person listing the directory, and a hash of host and socket.
func (p Place) Key() string {
	sum := sha256.Sum256([]byte(p.Host + "\x00" + p.Socket))
	base := strings.Map(func(r rune) rune {
		if r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '-' || r == '_' {
			return r
		}
		return '_'
	}, filepath.Base(p.Socket))
	if len(base) > 32 {
		base = base[:32]
	}
	return base + "-" + hex.EncodeToString(sum[:6])
}

func (p Place) String() string {
	if p.Host == "" {
		return p.Socket
	}
	return p.Host + ":" + p.Socket
}

// placeFile describes a place's directory for a person (and for the
// migration, which reads registry entries' sockets).
const placeFile = "place.json"

// home is where the store's teams live: the place's directory, or the
// root for a store without a place.
func (s *Store) home() string {
	if s.Place.IsZero() {
		return s.Root
	}
	return filepath.Join(s.Root, "places", s.Place.Key())
}

// ensurePlace writes the place's description once its directory exists.
func (s *Store) ensurePlace() error {
	if s.Place.IsZero() {
		return nil
	}
	path := filepath.Join(s.home(), placeFile)
	if _, err := os.Lstat(path); err == nil {
		return nil
	}
	data, err := json.MarshalIndent(s.Place, "", "  ")
	if err != nil {
		return err
	}
	return writeFileAtomic(path, append(data, '\n'))
}

// MigrateLegacy moves the teams a store kept before places existed
// (<root>/teams) to the place they belong to: the socket their registry
// entries name, when one does, else this store's place. A file that the
// destination already has is left where it is, never overwritten; the
// rest moves whole (a rename: nothing is copied, nothing can be half
// moved). It runs once, under a lock, and is cheap to call again.
func (s *Store) MigrateLegacy() error {
	if s.Place.IsZero() {
		return nil
	}
	legacy := filepath.Join(s.Root, "teams")
	if _, err := os.Lstat(legacy); errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err := s.mkdir(s.Root); err != nil {
		return err
	}
	unlock, err := s.lock(filepath.Join(s.Root, ".migrate.lock"))
	if err != nil {
		return err
	}
	defer unlock()
	teams, err := listNames(legacy, "team", "", true)
	if err != nil {
		return err
	}
	for _, team := range teams {
		dest := *s
		if socket := registeredSocket(filepath.Join(legacy, team, "agents")); socket != "" {
			dest.Place = Place{Host: s.Place.Host, Socket: socket}
		}
		if err := dest.adoptTeam(filepath.Join(legacy, team), team); err != nil {
			return fmt.Errorf("moving team %s's mailbox to %s: %w", team, dest.Place, err)
		}
	}
	_ = os.Remove(legacy) // only when empty: whatever could not move stays in view
	return nil
}

// adoptTeam moves the legacy team directory src into s's place.
func (s *Store) adoptTeam(src, team string) error {
	dst := s.teamDir(team)
	if err := s.mkdir(filepath.Dir(dst)); err != nil {
		return err
	}
	if err := s.ensurePlace(); err != nil {
		return err
	}
	if _, err := os.Lstat(dst); errors.Is(err, fs.ErrNotExist) {
		return os.Rename(src, dst)
	}
	return mergeDir(src, dst)
}

// mergeDir moves every entry of src that dst lacks into dst, and leaves
// src (and what dst already had) otherwise as it was.
func mergeDir(src, dst string) error {
	ents, err := os.ReadDir(src)
	if err != nil {
		return err
	}
	for _, e := range ents {
		from, to := filepath.Join(src, e.Name()), filepath.Join(dst, e.Name())
		_, err := os.Lstat(to)
		switch {
		case errors.Is(err, fs.ErrNotExist):
			if err := os.Rename(from, to); err != nil {
				return err
			}
		case err != nil:
			return err
		case e.IsDir():
			if err := mergeDir(from, to); err != nil {
				return err
			}
		}
	}
	_ = os.Remove(src) // when empty
	return nil
}

// registeredSocket is the socket the registry entries in dir name, "" when
// none does (the most common one, should they differ).
func registeredSocket(dir string) string {
	ents, err := os.ReadDir(dir)
	if err != nil {
		return ""
	}
	count := map[string]int{}
	best := ""
	for _, e := range ents {
		if !strings.HasSuffix(e.Name(), ".json") {
			continue
		}
		rec, err := readRecord(filepath.Join(dir, e.Name()))
		if err != nil || !filepath.IsAbs(rec.Socket) {
			continue
		}
		sock := canonicalPath(rec.Socket)
		count[sock]++
		if count[sock] > count[best] || (count[sock] == count[best] && sock < best) {
			best = sock
		}
	}
	return best
}

// canonicalPath resolves symbolic links as tmux.CanonicalSocket does (the
// mailbox does not import tmux).
func canonicalPath(path string) string {
	if real, err := filepath.EvalSymlinks(path); err == nil {
		return real
	}
	if dir, err := filepath.EvalSymlinks(filepath.Dir(path)); err == nil {
		return filepath.Join(dir, filepath.Base(path))
	}
	return path
}
