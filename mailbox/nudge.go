package mailbox

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
)

// MarkNudged records that team was reminded of request id. It reports
// true to exactly one caller, across processes, so a reminder goes out
// once however many nudgers run.
func (s *Store) MarkNudged(team, id string) (bool, error) {
	dir, _, _, err := s.requestPaths(team, id)
	if err != nil {
		return false, err
	}
	err = s.createExclusive(dir, filepath.Join(dir, id+".nudged"), nil)
	if errors.Is(err, os.ErrExist) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("recording the nudge of %s: %w", id, err)
	}
	return true, nil
}

// Nudged reports whether MarkNudged was called for request id.
func (s *Store) Nudged(team, id string) (bool, error) {
	dir, _, _, err := s.requestPaths(team, id)
	if err != nil {
		return false, err
	}
	_, err = os.Stat(filepath.Join(dir, id+".nudged"))
	if errors.Is(err, os.ErrNotExist) {
		return false, nil
	}
	return err == nil, err
}

// NudgeExpired tells team about each request that expired unclaimed and
// was not nudged before: notice(r) goes into every inbox of the team. A
// request is marked before its notice goes out, so that concurrent nudgers
// send it once; a notice that then fails to be stored is reported, not
// retried. It returns the requests nudged.
func (s *Store) NudgeExpired(team string, notice func(RequestInfo) (Envelope, error)) ([]RequestInfo, error) {
	reqs, err := s.Requests(team)
	if err != nil && len(reqs) == 0 {
		return nil, err
	}
	var (
		done []RequestInfo
		errs []error
	)
	if err != nil {
		errs = append(errs, err)
	}
	for _, r := range reqs {
		if r.State != RequestExpired {
			continue
		}
		first, err := s.MarkNudged(team, r.ID)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		if !first {
			continue
		}
		env, err := notice(r)
		if err == nil {
			var agents []string
			if agents, err = s.Agents(team); err == nil {
				err = s.AppendMany(team, agents, env)
			}
		}
		if err != nil {
			errs = append(errs, fmt.Errorf("nudging %s: %w", r.ID, err))
		}
		done = append(done, r)
	}
	return done, errors.Join(errs...)
}
