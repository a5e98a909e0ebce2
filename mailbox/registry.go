package mailbox

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"
)

// AgentRecord is one agent in its team's registry,
// <root>/teams/<team>/agents/<agent>.json: what was started, where and
// when, and when it last said it was alive.
type AgentRecord struct {
	Agent    string   `json:"agent"`              // inbox name: "ana", "ana-2", "ralph-7"; set by the store
	Session  string   `json:"session,omitempty"`  // the exact tmux session name
	Socket   string   `json:"socket,omitempty"`   // the tmux server it runs on
	Kind     string   `json:"kind,omitempty"`     // agent CLI: claude, codex, ... ("" unknown)
	Instance string   `json:"instance,omitempty"` // spawned instance ("2" of ana-2)
	Command  []string `json:"command,omitempty"`  // argv as started
	Dir      string   `json:"dir,omitempty"`      // working directory
	Pane     string   `json:"pane,omitempty"`     // "%N" at spawn time
	PID      int      `json:"pid,omitempty"`      // the pane's first process at spawn time
	// Spawned is when the agent was started (zero for an agent that only
	// heart-beats); Heartbeat when it last said it is alive (zero: it does
	// not heart-beat).
	Spawned   time.Time `json:"spawned,omitzero"`
	Heartbeat time.Time `json:"heartbeat,omitzero"`
}

// ErrNotRegistered is returned for an agent that has no registry entry.
var ErrNotRegistered = errors.New("agent not registered")

func (s *Store) registryDir(team string) string { return filepath.Join(s.teamDir(team), "agents") }

// Register writes r as agent r.Agent's entry in team's registry,
// replacing any earlier one. The file is replaced atomically.
func (s *Store) Register(team string, r AgentRecord) error {
	return s.UpdateAgent(team, r.Agent, func(old *AgentRecord) error {
		*old = r
		return nil
	})
}

// UpdateAgent changes agent's registry entry with fn under the team's
// registry lock, creating the entry when there is none (fn then sees a
// record holding only the name). Concurrent updates (a heartbeat and a
// spawn) never lose each other's fields.
func (s *Store) UpdateAgent(team, agent string, fn func(*AgentRecord) error) error {
	if err := checkName("team", team); err != nil {
		return err
	}
	if err := checkName("agent", agent); err != nil {
		return err
	}
	dir := s.registryDir(team)
	if err := s.mkdir(dir); err != nil {
		return err
	}
	unlock, err := s.lock(filepath.Join(dir, ".lock"))
	if err != nil {
		return err
	}
	defer unlock()
	rec, err := readRecord(filepath.Join(dir, agent+".json"))
	if errors.Is(err, os.ErrNotExist) {
		rec, err = AgentRecord{}, nil
	}
	if err != nil {
		return err
	}
	rec.Agent = agent
	if err := fn(&rec); err != nil {
		return err
	}
	rec.Agent = agent
	rec.Spawned, rec.Heartbeat = utc(rec.Spawned), utc(rec.Heartbeat)
	data, err := json.MarshalIndent(rec, "", "  ")
	if err != nil {
		return err
	}
	if err := writeFileAtomic(filepath.Join(dir, agent+".json"), append(data, '\n')); err != nil {
		return fmt.Errorf("saving the registry entry of %s/%s: %w", team, agent, err)
	}
	return nil
}

// RegisteredAgent returns agent's registry entry, or ErrNotRegistered.
func (s *Store) RegisteredAgent(team, agent string) (AgentRecord, error) {
	if err := checkName("team", team); err != nil {
		return AgentRecord{}, err
	}
	if err := checkName("agent", agent); err != nil {
		return AgentRecord{}, err
	}
	rec, err := readRecord(filepath.Join(s.registryDir(team), agent+".json"))
	if errors.Is(err, os.ErrNotExist) {
		return AgentRecord{}, fmt.Errorf("%w: %s/%s", ErrNotRegistered, team, agent)
	}
	rec.Agent = agent
	return rec, err
}

// Registered lists team's registry, by agent name. An unreadable entry is
// skipped and reported in the joined error, alongside the ones that could
// be read.
func (s *Store) Registered(team string) ([]AgentRecord, error) {
	if err := checkName("team", team); err != nil {
		return nil, err
	}
	dir := s.registryDir(team)
	agents, err := listNames(dir, "agent", ".json", false)
	if err != nil {
		return nil, err
	}
	var (
		out  []AgentRecord
		errs []error
	)
	for _, agent := range agents {
		rec, err := readRecord(filepath.Join(dir, agent+".json"))
		if errors.Is(err, os.ErrNotExist) {
			continue // unregistered meanwhile
		}
		if err != nil {
			errs = append(errs, err)
			continue
		}
		rec.Agent = agent
		out = append(out, rec)
	}
	return out, errors.Join(errs...)
}

// Unregister removes agent's registry entry; removing a missing one is no
// error. The inbox and status stay: they are the team's history.
func (s *Store) Unregister(team, agent string) error {
	if err := checkName("team", team); err != nil {
		return err
	}
	if err := checkName("agent", agent); err != nil {
		return err
	}
	dir := s.registryDir(team)
	if _, err := os.Stat(dir); errors.Is(err, os.ErrNotExist) {
		return nil // nothing registered, and nothing made to say so
	}
	unlock, err := s.lock(filepath.Join(dir, ".lock"))
	if err != nil {
		return err
	}
	defer unlock()
	if err := os.Remove(filepath.Join(dir, agent+".json")); err != nil && !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("unregistering %s/%s: %w", team, agent, err)
	}
	return syncDir(dir)
}

func readRecord(path string) (AgentRecord, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return AgentRecord{}, err
	}
	var rec AgentRecord
	if err := json.Unmarshal(data, &rec); err != nil {
		return AgentRecord{}, fmt.Errorf("registry entry %s: %w", filepath.Base(path), err)
	}
	return rec, nil
}

func utc(t time.Time) time.Time {
	if t.IsZero() {
		return t
	}
	return t.UTC()
}
