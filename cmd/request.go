package cmd

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/agentmsg/agentmsg/mailbox"
	"github.com/agentmsg/agentmsg/message"
)

// RequestOptions are request's inputs.
type RequestOptions struct {
	MailboxDeps

	Team        string
	Description string
	Timeout     time.Duration // 0: never expires
}

func NewCmdRequest(f *Factory, runF func(context.Context, *RequestOptions) error) *cobra.Command {
	opts := &RequestOptions{MailboxDeps: mailboxDeps(f)}
	c := &cobra.Command{
		Use:   "request TEAM DESCRIPTION...",
		Short: "Post an open request that any agent of the team can claim",
		Long: `Request posts an open request (REQ_<8 hex>) in TEAM and puts a message of
type request, addressed to everyone, into the inbox of each agent of the
team that has one (not yours). Any of them can take it with
agentmsg claim REQ_...; exactly one succeeds, and you get a message of type
claim saying who.

With --timeout the request expires: after it nobody can claim it, and
agentmsg requests --nudge tells the team, once, that it went unclaimed.

--json prints {"request_id": ..., ...}.`,
		Example: `  agentmsg request alpha "review PR 12"
  agentmsg request alpha --timeout 10m "someone take the flaky test in ci.yml"
  id=$(agentmsg --json request alpha "run the benchmarks" | jq -r .request_id)
  agentmsg wait --type claim`,
		Args:              argsBetween(2, -1, "TEAM DESCRIPTION..."),
		ValidArgsFunction: completeMailboxTeam(f),
		RunE: func(c *cobra.Command, args []string) error {
			team, err := teamArg(args[0])
			if err != nil {
				return err
			}
			opts.Team, opts.Description = team, strings.TrimSpace(joinWords(args[1:]))
			if opts.Description == "" {
				return usagef("request: the description is empty")
			}
			if opts.Timeout < 0 {
				return usagef("--timeout %s: want a duration of 0 (never expires) or more", opts.Timeout)
			}
			opts.Timeout = min(opts.Timeout, mailbox.MaxRequestTimeout)
			if runF != nil {
				return runF(c.Context(), opts)
			}
			return requestRun(c.Context(), opts)
		},
	}
	c.Flags().DurationVar(&opts.Timeout, "timeout", 0, "the request expires unclaimed after this long (0: never; at most 8760h, a year)")
	return c
}

func requestRun(ctx context.Context, opts *RequestOptions) error {
	id, err := opts.Identity(ctx)
	if err != nil {
		return err
	}
	s, err := opts.Mailbox()
	if err != nil {
		return err
	}
	if err := opts.knownTeam(ctx, s, opts.Team, true); err != nil {
		return err
	}
	reqID, err := message.NewRequestID()
	if err != nil {
		return err
	}
	posted := opts.Now().UTC()
	r := mailbox.Request{ID: reqID, From: id.Name, Description: opts.Description, Timeout: opts.Timeout, Posted: posted}
	if err := s.Post(opts.Team, r); err != nil {
		return err
	}
	agents, err := s.Agents(opts.Team)
	if err != nil {
		return err
	}
	// Every agent of the team: those with an inbox, and those running now
	// that have none yet (best effort: without tmux, inboxes alone).
	if opts.LiveAgents != nil {
		if live, err := opts.LiveAgents(ctx, opts.Team); err == nil {
			agents = append(agents, live...)
		}
	}
	slices.Sort(agents)
	agents = slices.Compact(agents)
	var others []string
	for _, a := range agents {
		if a != id.Name {
			others = append(others, a)
		}
	}
	env, err := newEnvelope(id, mailbox.Broadcast, mailbox.TypeRequest, opts.Description)
	if err != nil {
		return err
	}
	env.RequestID, env.Timestamp = reqID, posted
	var expires time.Time
	if opts.Timeout > 0 {
		expires = posted.Add(opts.Timeout)
		env.Metadata = map[string]string{"expires": expires.Format(time.RFC3339)}
	}
	told, failed := others, map[string]error(nil)
	if err := s.AppendMany(opts.Team, others, env); err != nil {
		var be *mailbox.BroadcastError
		if !errors.As(err, &be) {
			return err
		}
		told, failed = be.Delivered, be.Failed
	}

	if opts.JSON() {
		writeJSON(opts.jsonOut(), struct {
			RequestID   string    `json:"request_id"`
			Team        string    `json:"team"`
			From        string    `json:"from"`
			Description string    `json:"description"`
			Posted      time.Time `json:"posted"`
			Expires     time.Time `json:"expires,omitzero"`
			MessageID   string    `json:"message_id"`
			Notified    []string  `json:"notified"`
			ExitCode    int       `json:"exit_code"`
			Error       string    `json:"error,omitempty"`
		}{reqID, opts.Team, id.Name, opts.Description, posted, expires, string(env.ID), append([]string{}, told...),
			requestCode(failed), requestError(reqID, failed)})
	} else {
		fmt.Fprintf(opts.IO.Out, "posted %s in team %s\n", reqID, opts.Team)
		if len(told) > 0 {
			fmt.Fprintf(opts.IO.ErrOut, "told %s; claim it with: agentmsg claim %s\n", show(strings.Join(told, ", ")), reqID)
		} else {
			fmt.Fprintf(opts.IO.ErrOut, "no other agent of %s has an inbox yet; they see it with: agentmsg requests %s\n", opts.Team, opts.Team)
		}
	}
	if len(failed) > 0 {
		for _, a := range slices.Sorted(maps.Keys(failed)) {
			fmt.Fprintf(opts.IO.ErrOut, "agentmsg: could not tell %s about %s: %s\n", show(a), reqID, showErr(failed[a]))
		}
		return exitError{ExitPartial}
	}
	return nil
}

// requestCode is request's exit code: partial when some were not told.
func requestCode(failed map[string]error) int {
	if len(failed) > 0 {
		return ExitPartial
	}
	return ExitOK
}

// requestError says who could not be told about a request, or "".
func requestError(reqID string, failed map[string]error) string {
	var parts []string
	for _, a := range slices.Sorted(maps.Keys(failed)) {
		parts = append(parts, fmt.Sprintf("could not tell %s about %s: %v", a, reqID, failed[a]))
	}
	return strings.Join(parts, "; ")
}

// ClaimOptions are claim's inputs.
type ClaimOptions struct {
	MailboxDeps

	Team      string // "" for the caller's
	RequestID string
}

func NewCmdClaim(f *Factory, runF func(context.Context, *ClaimOptions) error) *cobra.Command {
	opts := &ClaimOptions{MailboxDeps: mailboxDeps(f)}
	c := &cobra.Command{
		Use:   "claim [TEAM] REQUEST_ID",
		Short: "Claim an open request; exactly one claimant gets it",
		Long: `Claim takes the open request REQUEST_ID of your team (or of TEAM) for you.
However many agents claim it at once, exactly one succeeds: it exits 0 and
the requester gets a message of type claim naming it. Every other claimant
is told who has it and since when, and exits 8; so does a claim of a
request that expired.

` + exitCodesHelp,
		Example: `  agentmsg claim REQ_1a2b3c4d
  agentmsg --from ana claim alpha REQ_1a2b3c4d && echo "mine"`,
		Args: argsBetween(1, 2, "[TEAM] REQUEST_ID"),
		RunE: func(c *cobra.Command, args []string) error {
			if len(args) == 2 {
				team, err := teamArg(args[0])
				if err != nil {
					return err
				}
				opts.Team = team
			}
			opts.RequestID = args[len(args)-1]
			if runF != nil {
				return runF(c.Context(), opts)
			}
			return claimRun(c.Context(), opts)
		},
	}
	return c
}

func claimRun(ctx context.Context, opts *ClaimOptions) error {
	id, err := opts.Identity(ctx)
	if err != nil {
		return err
	}
	team := opts.Team
	if team == "" {
		if team, err = id.NeedTeam(); err != nil {
			return err
		}
	}
	s, err := opts.Mailbox()
	if err != nil {
		return err
	}
	if err := opts.knownTeam(ctx, s, team, opts.Team != "" || id.TeamNamed); err != nil {
		return err
	}
	r, err := s.Claim(team, opts.RequestID, id.Name)
	var ce *mailbox.ClaimedError
	switch {
	case errors.As(err, &ce):
		if opts.JSON() {
			writeJSON(opts.jsonOut(), claimJSON{RequestID: opts.RequestID, Team: team, ClaimedBy: ce.By, ClaimedAt: ce.At,
				Error: err.Error(), ExitCode: ExitClaimed})
		}
		fmt.Fprintf(opts.IO.ErrOut, "agentmsg: %s already claimed by %s at %s\n", show(opts.RequestID), show(ce.By), ce.At.Local().Format(time.DateTime))
		return exitError{ExitClaimed}
	case errors.Is(err, mailbox.ErrExpired):
		if opts.JSON() {
			writeJSON(opts.jsonOut(), claimJSON{RequestID: opts.RequestID, Team: team, From: r.From, Description: r.Description,
				Error: err.Error(), ExitCode: ExitClaimed})
		}
		fmt.Fprintf(opts.IO.ErrOut, "agentmsg: %s expired unclaimed at %s; nobody can claim it now (ask %s)\n",
			show(opts.RequestID), r.Posted.Add(r.Timeout).Local().Format(time.DateTime), show(r.From))
		return exitError{ExitClaimed}
	case err != nil:
		return err
	}

	if r.From != id.Name {
		if err := tellClaimed(s, team, id, r); err != nil {
			// The claim stands; only the note to the requester is missing.
			fmt.Fprintf(opts.IO.ErrOut, "agentmsg: claimed, but could not tell %s: %s\n", show(r.From), showErr(err))
		}
	}
	if opts.JSON() {
		writeJSON(opts.jsonOut(), claimJSON{RequestID: r.ID, Team: team, Claimed: true, ClaimedBy: id.Name,
			ClaimedAt: opts.Now().UTC(), From: r.From, Description: r.Description})
		return nil
	}
	fmt.Fprintf(opts.IO.Out, "claimed %s from %s: %s\n", show(r.ID), show(r.From), show(r.Description))
	return nil
}

// expiredNotice is the reminder a team gets, from id, for a request whose
// time ran out unclaimed.
func expiredNotice(id Identity) func(mailbox.RequestInfo) (mailbox.Envelope, error) {
	return func(r mailbox.RequestInfo) (mailbox.Envelope, error) {
		env, err := newEnvelope(id, mailbox.Broadcast, mailbox.TypeRequest, fmt.Sprintf(
			"Reminder: request %s from %s expired unclaimed after %s: %s", r.ID, r.From, r.Timeout, r.Description))
		env.RequestID, env.Metadata = r.ID, map[string]string{mailbox.MetaNudge: "expired"}
		return env, err
	}
}

// tellClaimed puts a claim message into the requester's inbox.
func tellClaimed(s *mailbox.Store, team string, id Identity, r mailbox.Request) error {
	b, err := s.Box(team, r.From)
	if err != nil {
		return err
	}
	env, err := newEnvelope(id, r.From, mailbox.TypeClaim, fmt.Sprintf("%s claimed by %s: %s", r.ID, id.Name, r.Description))
	if err != nil {
		return err
	}
	env.RequestID = r.ID
	return b.Append(env)
}

type claimJSON struct {
	RequestID   string    `json:"request_id"`
	Team        string    `json:"team"`
	Claimed     bool      `json:"claimed"`
	ClaimedBy   string    `json:"claimed_by,omitempty"`
	ClaimedAt   time.Time `json:"claimed_at,omitzero"`
	From        string    `json:"from,omitempty"`
	Description string    `json:"description,omitempty"`
	Error       string    `json:"error,omitempty"`
	ExitCode    int       `json:"exit_code"`
}

// RequestsOptions are requests' inputs.
type RequestsOptions struct {
	MailboxDeps

	Team  string // "" for the caller's
	Nudge bool
}

func NewCmdRequests(f *Factory, runF func(context.Context, *RequestsOptions) error) *cobra.Command {
	opts := &RequestsOptions{MailboxDeps: mailboxDeps(f)}
	c := &cobra.Command{
		Use:   "requests [TEAM]",
		Short: "List a team's requests: open, claimed or expired",
		Long: `Requests lists the requests of your team (or of TEAM), oldest first, with
their state: open, claimed (by whom, when) or expired (timed out unclaimed).

--nudge first tells the team about each request that expired unclaimed:
a message of type request goes into every inbox of the team, once per
request however often (or from however many places) --nudge runs. Run it
from a timer or a hook.`,
		Example: `  agentmsg requests
  agentmsg requests alpha --nudge
  agentmsg --json requests alpha | jq '.requests[] | select(.state == "open")'`,
		Args:              argsBetween(0, 1, "at most a TEAM"),
		ValidArgsFunction: completeMailboxTeam(f),
		RunE: func(c *cobra.Command, args []string) error {
			if len(args) == 1 {
				team, err := teamArg(args[0])
				if err != nil {
					return err
				}
				opts.Team = team
			}
			if runF != nil {
				return runF(c.Context(), opts)
			}
			return requestsRun(c.Context(), opts)
		},
	}
	c.Flags().BoolVar(&opts.Nudge, "nudge", false, "first tell the team, once, about requests that expired unclaimed")
	return c
}

type requestJSON struct {
	ID          string    `json:"id"`
	State       string    `json:"state"`
	From        string    `json:"from"`
	Description string    `json:"description"`
	Posted      time.Time `json:"posted"`
	Expires     time.Time `json:"expires,omitzero"`
	ClaimedBy   string    `json:"claimed_by,omitempty"`
	ClaimedAt   time.Time `json:"claimed_at,omitzero"`
	Nudged      bool      `json:"nudged,omitempty"`
}

func requestsRun(ctx context.Context, opts *RequestsOptions) error {
	team := opts.Team
	var id Identity
	if team == "" || opts.Nudge {
		var err error
		if id, err = opts.Identity(ctx); err != nil {
			return err
		}
		if team == "" {
			if team, err = id.NeedTeam(); err != nil {
				return err
			}
		}
	}
	s, err := opts.Mailbox()
	if err != nil {
		return err
	}
	if err := opts.knownTeam(ctx, s, team, opts.Team != "" || id.TeamNamed); err != nil {
		return err
	}
	nudged := []string{}
	if opts.Nudge {
		done, err := s.NudgeExpired(team, expiredNotice(id))
		for _, r := range done {
			nudged = append(nudged, r.ID)
			if !opts.JSON() {
				fmt.Fprintf(opts.IO.ErrOut, "nudged team %s: %s expired unclaimed\n", team, show(r.ID))
			}
		}
		if err != nil {
			return err
		}
	}
	reqs, listErr := s.Requests(team)
	if listErr != nil && len(reqs) == 0 {
		return listErr
	}
	out := make([]requestJSON, 0, len(reqs))
	for _, r := range reqs {
		j := requestJSON{ID: r.ID, State: string(r.State), From: r.From, Description: r.Description, Posted: r.Posted,
			ClaimedBy: r.ClaimedBy, ClaimedAt: r.ClaimedAt}
		if r.Timeout > 0 {
			j.Expires = r.Posted.Add(r.Timeout)
		}
		if r.State == mailbox.RequestExpired {
			j.Nudged, _ = s.Nudged(team, r.ID)
		}
		out = append(out, j)
	}
	if opts.JSON() {
		writeJSON(opts.jsonOut(), struct {
			Team     string        `json:"team"`
			Requests []requestJSON `json:"requests"`
			Nudged   []string      `json:"nudged"`
		}{team, out, nudged})
	} else if len(out) == 0 {
		fmt.Fprintf(opts.IO.ErrOut, "no requests in team %s\n", team)
	} else {
		now := opts.Now()
		tw := tabwriter.NewWriter(opts.IO.Out, 0, 4, 2, ' ', 0)
		fmt.Fprintln(tw, "ID\tSTATE\tFROM\tPOSTED\tEXPIRES\tCLAIMED BY\tDESCRIPTION")
		for _, r := range out {
			state := r.State
			if r.Nudged {
				state += " (nudged)"
			}
			expires := "never"
			if !r.Expires.IsZero() {
				expires = r.Expires.Local().Format(time.DateTime)
			}
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\n", show(r.ID), show(state), show(r.From), sinceText(now, r.Posted), expires,
				show(orDash(r.ClaimedBy)), cell(r.Description, 60))
		}
		if err := tw.Flush(); err != nil {
			return err
		}
	}
	if listErr != nil {
		return fmt.Errorf("some requests could not be read: %w", listErr)
	}
	return nil
}
