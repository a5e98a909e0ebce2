package mailbox

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/agentmsg/agentmsg/message"
)

// MarkNudged records that team was reminded of request id. It reports
// true to exactly one caller, across processes, so a reminder goes out
// once however many nudgers run.
func (s *Store) MarkNudged(team, id string) (bool, error) {
	return s.markNudged(team, id, "")
}

// markNudged is MarkNudged keeping by, the reminder's message id, in the
// mark: the reminder's intent (see Intent) takes place only if its own
// nudger won.
func (s *Store) markNudged(team, id string, by message.ID) (bool, error) {
	dir, _, _, err := s.requestPaths(team, id)
	if err != nil {
		return false, err
	}
	err = s.createExclusive(dir, s.nudgedPath(dir, id), []byte(by))
	if errors.Is(err, os.ErrExist) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("recording the nudge of %s: %w", id, err)
	}
	return true, nil
}

func (s *Store) nudgedPath(dir, id string) string { return filepath.Join(dir, id+".nudged") }

// Nudged reports whether MarkNudged was called for request id.
func (s *Store) Nudged(team, id string) (bool, error) {
	dir, _, _, err := s.requestPaths(team, id)
	if err != nil {
		return false, err
	}
	_, err = os.Stat(s.nudgedPath(dir, id))
	if errors.Is(err, os.ErrNotExist) {
		return false, nil
	}
	return err == nil, err
}

// NudgeExpired tells team about each request that expired unclaimed and
// was not nudged before: notice(r) goes into every inbox of the team. A
// request is marked as its notice goes out, in one step with it (see
// nudge), so that concurrent nudgers send it once and a nudger that dies
// between the two neither loses it nor sends it twice; a copy of a notice
// that fails to be stored is reported, and recorded by the next Complete.
// It returns the requests nudged.
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
		first, err := s.nudge(team, r, notice)
		if err != nil {
			errs = append(errs, fmt.Errorf("nudging %s: %w", r.ID, err))
		}
		if !first {
			continue
		}
		done = append(done, r)
	}
	return done, errors.Join(errs...)
}

// nudge tells team of r, expired, unless another nudger did: the mark
// that this nudger is the one and the reminder in every inbox go in one
// step (see Intent). first: this nudger marked it (its reminder may still
// have failed to reach some inboxes, which Complete then records).
func (s *Store) nudge(team string, r RequestInfo, notice func(RequestInfo) (Envelope, error)) (first bool, err error) {
	if told, err := s.Nudged(team, r.ID); err != nil || told {
		return false, err // told already: no intent to write
	}
	env, err := notice(r)
	if err != nil {
		first, merr := s.MarkNudged(team, r.ID) // marked, as before: told of nothing
		return first, errors.Join(err, merr)
	}
	agents, err := s.Agents(team)
	if err != nil {
		return false, err
	}
	dir, _, _, err := s.requestPaths(team, r.ID)
	if err != nil {
		return false, err
	}
	mark, err := s.commitFile(s.nudgedPath(dir, r.ID))
	if err != nil {
		return false, err
	}
	err = s.appendAll(team, agents, env, &committed{Commit: Commit{File: mark, Holds: string(env.ID)}, take: func() (bool, error) {
		first, err = s.markNudged(team, r.ID, env.ID)
		return first, err
	}})
	return first, err
}
