package mailbox

import (
	"errors"
	"os"
	"path/filepath"
	"sort"
	"strings"
)

// Teams lists the teams that have anything stored, by name.
func (s *Store) Teams() ([]string, error) {
	return listNames(filepath.Join(s.home(), "teams"), "team", "", true)
}

// Agents lists the agents of team that have an inbox, by name.
func (s *Store) Agents(team string) ([]string, error) {
	if err := checkName("team", team); err != nil {
		return nil, err
	}
	return listNames(filepath.Join(s.teamDir(team), "mailbox"), "agent", ".jsonl", false)
}

// Inbox names one inbox.
type Inbox struct{ Team, Agent string }

// Inboxes lists every inbox of team, or of every team when team is "".
func (s *Store) Inboxes(team string) ([]Inbox, error) {
	teams := []string{team}
	if team == "" {
		var err error
		if teams, err = s.Teams(); err != nil {
			return nil, err
		}
	}
	var out []Inbox
	for _, t := range teams {
		agents, err := s.Agents(t)
		if err != nil {
			return nil, err
		}
		for _, a := range agents {
			out = append(out, Inbox{t, a})
		}
	}
	return out, nil
}

// listNames returns the valid names in dir: of directories, or of files
// ending in suffix (cut off). A missing dir has none.
func listNames(dir, kind, suffix string, dirs bool) ([]string, error) {
	ents, err := os.ReadDir(dir)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var out []string
	for _, e := range ents {
		if e.IsDir() != dirs {
			continue
		}
		name, ok := strings.CutSuffix(e.Name(), suffix)
		if !ok || checkName(kind, name) != nil {
			continue
		}
		out = append(out, name)
	}
	sort.Strings(out)
	return out, nil
}
