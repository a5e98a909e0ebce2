package mailbox

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"time"

	"github.com/agentmsg/agentmsg/eventlog"
	"github.com/agentmsg/agentmsg/message"
)

// Request is an open request that any agent of a team may claim, and
// exactly one gets.
type Request struct {
	ID          string
	From        string
	Description string
	Timeout     time.Duration // after Posted; 0 never expires; at most MaxRequestTimeout
	Posted      time.Time     // set by Post when zero
}

// MetaNudge is the metadata key of a request message that reminds the
// team of an expired request (value "expired"), as opposed to the
// message that announced it.
const MetaNudge = "nudge"

// MaxRequestTimeout bounds a request's time to expiry: Post clamps a
// longer one to it, as the front ends do before they report an expiry.
const MaxRequestTimeout = 365 * 24 * time.Hour

// requestFile is a Request on disk: an absolute expiry reads better in
// JSON than a duration in nanoseconds.
type requestFile struct {
	ID          string    `json:"id"`
	From        string    `json:"from"`
	Description string    `json:"description"`
	Posted      time.Time `json:"posted"`
	Expires     time.Time `json:"expires,omitzero"`
}

type claimFile struct {
	By string    `json:"by"`
	At time.Time `json:"at"`
	// Told is the message that tells the requester of this claim
	// (ClaimTelling): its intent takes place only with this claim.
	Told message.ID `json:"told,omitempty"`
}

// RequestState is where a request stands.
type RequestState string

// Request states.
const (
	RequestOpen    RequestState = "open"
	RequestClaimed RequestState = "claimed"
	RequestExpired RequestState = "expired" // timed out unclaimed
)

// RequestInfo is a request with its state, as Requests lists it.
type RequestInfo struct {
	Request
	State     RequestState
	ClaimedBy string
	ClaimedAt time.Time
}

// Errors from Post and Claim.
var (
	ErrAlreadyClaimed = errors.New("request already claimed")
	ErrRequestExists  = errors.New("a request with this id already exists")
	ErrNoRequest      = errors.New("no such request")
	ErrExpired        = errors.New("request expired")
)

// ClaimedError is the ErrAlreadyClaimed of a lost claim; it names the
// winner.
type ClaimedError struct {
	RequestID, By string
	At            time.Time
}

func (e *ClaimedError) Error() string {
	return fmt.Sprintf("request %s was already claimed by %s at %s", e.RequestID, e.By, e.At.Format(time.RFC3339))
}

// Is makes errors.Is(err, ErrAlreadyClaimed) hold.
func (e *ClaimedError) Is(target error) bool { return target == ErrAlreadyClaimed }

// requestIDRe allows message ids and similar tokens, but no '.' or '/',
// so an id cannot leave the requests directory; validRequestID bounds its
// length. (A counted repetition, {0,127}, compiles to 127 copies: a
// quarter of a millisecond at every start of agentmsg.)
var requestIDRe = regexp.MustCompile(`^[A-Za-z0-9_][A-Za-z0-9_-]*$`)

func validRequestID(id string) bool { return len(id) <= 128 && requestIDRe.MatchString(id) }

func (s *Store) requestPaths(team, id string) (dir, req, claim string, err error) {
	if err := checkName("team", team); err != nil {
		return "", "", "", err
	}
	if !validRequestID(id) {
		return "", "", "", fmt.Errorf("%w: request id %q (letters, digits, _ and -)", ErrBadName, id)
	}
	dir = filepath.Join(s.teamDir(team), "requests")
	return dir, filepath.Join(dir, id+".json"), filepath.Join(dir, id+".claim"), nil
}

// Post publishes r in team. Posting an id twice is ErrRequestExists.
func (s *Store) Post(team string, r Request) error {
	dir, path, _, err := s.requestPaths(team, r.ID)
	if err != nil {
		return err
	}
	if err := checkName("agent", r.From); err != nil {
		return err
	}
	if r.Posted.IsZero() {
		r.Posted = s.now()
	}
	r.Timeout = min(r.Timeout, MaxRequestTimeout)
	rf := requestFile{ID: r.ID, From: r.From, Description: r.Description, Posted: r.Posted.UTC()}
	if r.Timeout > 0 {
		rf.Expires = rf.Posted.Add(r.Timeout)
	}
	data, err := json.Marshal(rf)
	if err != nil {
		return err
	}
	if err := s.createExclusive(dir, path, data); err != nil {
		if errors.Is(err, os.ErrExist) {
			if twin := storedID(path); twin != "" && twin != r.ID {
				return fmt.Errorf("posting request %s: %w: request %s differs from it only by case, and this file system (macOS's, by default) does not tell the two apart; choose another id", r.ID, ErrRequestExists, twin)
			}
			return fmt.Errorf("posting request %s: %w", r.ID, ErrRequestExists)
		}
		return fmt.Errorf("posting request %s: %w", r.ID, err)
	}
	return nil
}

// PostTelling posts r in team and records env, the message that tells of
// it, in the inbox of each of agents, in one step (see Intent): a writer
// that dies before r is posted leaves neither, one that dies after leaves
// an intent that Complete finishes. An error that is a *BroadcastError
// names the inboxes not told yet (Complete records them later): r is
// posted. Any other error: r is not.
func (s *Store) PostTelling(team string, r Request, env Envelope, agents []string) error {
	_, path, _, err := s.requestPaths(team, r.ID)
	if err != nil {
		return err
	}
	file, err := s.commitFile(path)
	if err != nil {
		return err
	}
	return s.appendAll(team, agents, env, &committed{Commit: Commit{File: file}, take: func() (bool, error) {
		if err := s.Post(team, r); err != nil {
			return false, err
		}
		return true, nil
	}})
}

// Claim gives request id to claimant if nobody has it yet. Across any
// number of processes exactly one claim succeeds; every other gets a
// *ClaimedError naming the winner.
func (s *Store) Claim(team, id, claimant string) (Request, error) {
	return s.ClaimTelling(team, id, claimant, nil)
}

// ClaimTelling is Claim, with the requester told in the same step (see
// Intent): tell(r) is the message for its inbox. A claimant killed between
// the two neither leaves the request claimed and its requester never told,
// nor tells of a claim it did not win. An error that is a *BroadcastError
// is a claim that stands and a message not recorded yet (Complete records
// it). A claimant that is the requester is not told; nor is anyone when
// tell is nil.
func (s *Store) ClaimTelling(team, id, claimant string, tell func(Request) (Envelope, error)) (Request, error) {
	dir, path, claimPath, err := s.requestPaths(team, id)
	if err != nil {
		return Request{}, err
	}
	if err := checkName("agent", claimant); err != nil {
		return Request{}, err
	}
	r, err := readRequest(path, id)
	if err != nil {
		return Request{}, err
	}
	now := s.now()
	if r.Timeout > 0 && !now.Before(r.Posted.Add(r.Timeout)) {
		return r, fmt.Errorf("claiming request %s: %w at %s", id, ErrExpired, r.Posted.Add(r.Timeout).Format(time.RFC3339))
	}
	c := claimFile{By: claimant, At: now}
	var env Envelope
	if tell != nil && r.From != claimant {
		if env, err = tell(r); err != nil {
			return r, err
		}
		c.Told = env.ID
	}
	data, err := json.Marshal(c)
	if err != nil {
		return r, err
	}
	var lost error
	take := func() (bool, error) {
		err := s.createExclusive(dir, claimPath, data)
		if errors.Is(err, os.ErrExist) {
			won, rerr := readClaim(claimPath)
			if rerr != nil {
				return false, rerr
			}
			lost = &ClaimedError{RequestID: id, By: won.By, At: won.At}
			return false, nil
		}
		if err != nil {
			return false, fmt.Errorf("claiming request %s: %w", id, err)
		}
		return true, nil
	}
	if c.Told == "" {
		_, err = take()
	} else {
		file, ferr := s.commitFile(claimPath)
		if ferr != nil {
			return r, ferr
		}
		err = s.appendAll(team, []string{r.From}, env, &committed{Commit: Commit{File: file, Holds: string(data)}, take: take})
	}
	var be *BroadcastError
	if lost != nil || err != nil && !errors.As(err, &be) {
		return r, errors.Join(lost, err)
	}
	s.emit(eventlog.Event{Type: eventlog.MessageClaimed, Team: team, Agent: claimant, Message: id, From: r.From})
	return r, err
}

// createExclusive makes path with data unless it exists. The data goes to
// a temp file first and is then hard-linked into place: link(2) fails if
// the name exists, like O_EXCL, but unlike O_EXCL the name only ever
// appears with its full content, so a loser can always read who won.
func (s *Store) createExclusive(dir, path string, data []byte) error {
	if err := s.mkdir(dir); err != nil {
		return err
	}
	tmp, err := writeTemp(dir, "."+filepath.Base(path)+".tmp*", data)
	if err != nil {
		return err
	}
	defer os.Remove(tmp)
	if err := os.Link(tmp, path); err != nil {
		return err
	}
	return syncDir(dir)
}

// readRequest reads request id from path. A file system that folds case
// (macOS's, by default) opens another request's file for an id that
// differs from its id only by case: that is no such request, and its
// claim file is not this one's either.
func readRequest(path, id string) (Request, error) {
	data, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return Request{}, fmt.Errorf("%w: %s", ErrNoRequest, id)
	}
	if err != nil {
		return Request{}, err
	}
	var rf requestFile
	if err := json.Unmarshal(data, &rf); err != nil {
		return Request{}, fmt.Errorf("reading request %s: %w", filepath.Base(path), err)
	}
	if rf.ID != "" && rf.ID != id {
		return Request{}, fmt.Errorf("%w: %s (request %s differs from it only by case, and this file system does not tell the two apart)", ErrNoRequest, id, rf.ID)
	}
	r := Request{ID: rf.ID, From: rf.From, Description: rf.Description, Posted: rf.Posted}
	if !rf.Expires.IsZero() {
		r.Timeout = rf.Expires.Sub(rf.Posted)
	}
	return r, nil
}

// storedID is the id recorded in the request file at path ("" when it
// cannot be read).
func storedID(path string) string {
	data, err := os.ReadFile(path)
	if err != nil {
		return ""
	}
	var rf requestFile
	if json.Unmarshal(data, &rf) != nil {
		return ""
	}
	return rf.ID
}

func readClaim(path string) (claimFile, error) {
	var c claimFile
	data, err := os.ReadFile(path)
	if err != nil {
		return c, err
	}
	if err := json.Unmarshal(data, &c); err != nil {
		return c, fmt.Errorf("reading claim %s: %w", filepath.Base(path), err)
	}
	return c, nil
}

// Requests lists team's requests, oldest first. An unreadable request
// file is skipped and reported in the joined error, alongside the
// requests that could be read.
func (s *Store) Requests(team string) ([]RequestInfo, error) {
	if err := checkName("team", team); err != nil {
		return nil, err
	}
	dir := filepath.Join(s.teamDir(team), "requests")
	ents, err := os.ReadDir(dir)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	now := s.now()
	var out []RequestInfo
	var errs []error
	for _, e := range ents {
		id, ok := strings.CutSuffix(e.Name(), ".json")
		if !ok || !validRequestID(id) {
			continue
		}
		info, err := requestInfo(dir, id, now)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		out = append(out, info)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Posted.Before(out[j].Posted) })
	return out, errors.Join(errs...)
}

// RequestStatus is request id of team with its state; ErrNoRequest when
// there is none.
func (s *Store) RequestStatus(team, id string) (RequestInfo, error) {
	dir, _, _, err := s.requestPaths(team, id)
	if err != nil {
		return RequestInfo{}, err
	}
	return requestInfo(dir, id, s.now())
}

func requestInfo(dir, id string, now time.Time) (RequestInfo, error) {
	r, err := readRequest(filepath.Join(dir, id+".json"), id)
	if err != nil {
		return RequestInfo{}, err
	}
	info := RequestInfo{Request: r, State: RequestOpen}
	if c, err := readClaim(filepath.Join(dir, id+".claim")); err == nil {
		info.State, info.ClaimedBy, info.ClaimedAt = RequestClaimed, c.By, c.At
	} else if r.Timeout > 0 && !now.Before(r.Posted.Add(r.Timeout)) {
		info.State = RequestExpired
	}
	return info, nil
}

// ValidRequestID reports whether id has the form of a request id (safe to
// show and to use as a file name).
func ValidRequestID(id string) bool { return validRequestID(id) }

// Withdrawn says why env, a message of team, is no longer worth typing
// into its agent's pane: it announces a request that has been claimed or
// has expired. It is "" for every other message, a request still open or
// unknown, and a reminder that a request expired (the reminder is the
// news). The message stays in the inbox either way.
func (s *Store) Withdrawn(team string, env Envelope) string {
	if env.Type != TypeRequest || !ValidRequestID(env.RequestID) {
		return ""
	}
	info, err := s.RequestStatus(team, env.RequestID)
	if err != nil {
		return ""
	}
	switch {
	case info.State == RequestClaimed:
		return fmt.Sprintf("request %s was claimed by %s at %s", info.ID, info.ClaimedBy, info.ClaimedAt.UTC().Format(time.RFC3339))
	case info.State == RequestExpired && env.Metadata[MetaNudge] == "":
		return fmt.Sprintf("request %s expired unclaimed at %s", info.ID, info.Posted.Add(info.Timeout).UTC().Format(time.RFC3339))
	}
	return ""
}
