package mailbox

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"
)

// Status is what one agent says it is doing, for the team's board.
type Status struct {
	Agent     string    `json:"agent"` // set by SetStatus
	Mission   string    `json:"mission,omitempty"`
	WorkingOn string    `json:"working_on,omitempty"`
	Done      []string  `json:"done,omitempty"`
	Next      []string  `json:"next,omitempty"`
	State     string    `json:"state,omitempty" enum:"StatusState"` // one of StatusStates
	Updated   time.Time `json:"updated"`                            // set by SetStatus when zero
}

// SetStatus replaces agent's entry on team's board. The file is replaced
// atomically, so the board never shows half a status.
func (s *Store) SetStatus(team, agent string, st Status) error {
	if err := checkName("team", team); err != nil {
		return err
	}
	if err := checkName("agent", agent); err != nil {
		return err
	}
	st.Agent = agent
	if st.Updated.IsZero() {
		st.Updated = s.now()
	}
	st.Updated = st.Updated.UTC()
	data, err := json.MarshalIndent(st, "", "  ")
	if err != nil {
		return err
	}
	dir := filepath.Join(s.teamDir(team), "status")
	if err := s.mkdir(dir); err != nil {
		return err
	}
	if err := writeFileAtomic(filepath.Join(dir, agent+".json"), append(data, '\n')); err != nil {
		return fmt.Errorf("saving status of %s: %w", agent, err)
	}
	return nil
}

// Board returns every status in team, by agent name. An unreadable file
// is skipped and reported in the joined error, alongside the statuses that
// could be read.
func (s *Store) Board(team string) ([]Status, error) {
	if err := checkName("team", team); err != nil {
		return nil, err
	}
	dir := filepath.Join(s.teamDir(team), "status")
	agents, err := listNames(dir, "agent", ".json", false)
	if err != nil {
		return nil, err
	}
	var out []Status
	var errs []error
	for _, agent := range agents {
		data, err := os.ReadFile(filepath.Join(dir, agent+".json"))
		if err != nil {
			errs = append(errs, err)
			continue
		}
		var st Status
		if err := json.Unmarshal(data, &st); err != nil {
			errs = append(errs, fmt.Errorf("status of %s: %w", agent, err))
			continue
		}
		st.Agent = agent
		out = append(out, st)
	}
	return out, errors.Join(errs...)
}
