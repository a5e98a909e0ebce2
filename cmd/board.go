package cmd

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/agentmsg/agentmsg/mailbox"
	"github.com/agentmsg/agentmsg/service"
	"github.com/agentmsg/agentmsg/wire"
)

// BoardOptions are board's inputs.
type BoardOptions struct {
	teamDeps

	Team     string // "" for the caller's
	Watch    bool
	Interval time.Duration // how often --watch looks; 500ms
}

func NewCmdBoard(f *Factory, runF func(context.Context, *BoardOptions) error) *cobra.Command {
	opts := &BoardOptions{teamDeps: newTeamDeps(f), Interval: 500 * time.Millisecond}
	c := &cobra.Command{
		Use:   "board [TEAM]",
		Short: "Show what everyone on a team says they are doing",
		Long: `Board shows the status board of your team (or of TEAM): each agent's state,
what it works on, what is next, how much is done, and when it said so.
Agents fill it in with agentmsg status set.

--watch redraws the board whenever an entry changes, until interrupted
(with --json: one JSON document per line, each time).`,
		Example: `  agentmsg board
  agentmsg board alpha --watch
  agentmsg --json board alpha | jq '.agents[] | select(.state == "blocked") | .agent'`,
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
			return boardRun(c.Context(), opts)
		},
	}
	c.Flags().BoolVarP(&opts.Watch, "watch", "w", false, "redraw on every change until interrupted")
	return c
}

func boardRun(ctx context.Context, opts *BoardOptions) error {
	svc, team, err := opts.serviceTeam(ctx, opts.Team)
	if err != nil {
		return err
	}
	redraw := opts.Watch && !opts.JSON() && isTerminal(opts.IO.Out)
	var last []byte
	tick := time.NewTicker(max(opts.Interval, 10*time.Millisecond))
	defer tick.Stop()
	for {
		b, err := svc.Board(ctx, team)
		teamErr := errors.Is(err, service.ErrNoTeam) || errors.Is(err, service.ErrTeamNeeded)
		if err != nil && (!opts.Watch || (teamErr && last == nil)) {
			return teamError(err)
		}
		// A board whose mailbox was removed stays empty: a watch ends.
		if gone := svc.Store.Gone(); gone != nil && opts.Watch {
			return gone
		}
		if b.ReadErr != nil && !opts.Watch {
			fmt.Fprintf(opts.IO.ErrOut, "agentmsg: %v\n", b.ReadErr) // and show the rest
		}
		doc, _ := json.Marshal(wire.NewBoard(b))
		if !bytes.Equal(doc, last) {
			last = doc
			switch {
			case opts.JSON() && opts.Watch:
				fmt.Fprintf(opts.IO.Out, "%s\n", wire.Safe(doc))
			case opts.JSON():
				writeJSON(opts.jsonOut(), wire.NewBoard(b))
			default:
				if redraw {
					fmt.Fprint(opts.IO.Out, "\033[H\033[2J")
				} else if opts.Watch {
					fmt.Fprintf(opts.IO.Out, "-- %s %s --\n", b.Team, opts.Now().Format(time.TimeOnly))
				}
				if err := writeBoard(opts.IO.Out, opts.IO.ErrOut, b.Team, b.Agents, opts.Now()); err != nil {
					return err
				}
			}
		}
		if !opts.Watch {
			return nil
		}
		select {
		case <-ctx.Done():
			return nil // interrupted: the normal end of --watch
		case <-tick.C:
		}
	}
}

func writeBoard(out, errOut io.Writer, team string, board []mailbox.Status, now time.Time) error {
	if len(board) == 0 {
		fmt.Fprintf(errOut, "nobody on team %s has set a status yet (agentmsg status set)\n", team)
		return nil
	}
	tw := tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "AGENT\tSTATE\tWORKING ON\tNEXT\tDONE\tUPDATED\tMISSION")
	for _, st := range board {
		next := "-"
		if len(st.Next) > 0 {
			next = cell(st.Next[0], 30)
			if len(st.Next) > 1 {
				next += fmt.Sprintf(" (+%d)", len(st.Next)-1)
			}
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%d\t%s\t%s\n", show(st.Agent), cell(orDash(st.State), 20), orDash(cell(st.WorkingOn, 40)),
			next, len(st.Done), sinceText(now, st.Updated), orDash(cell(st.Mission, 40)))
	}
	return tw.Flush()
}
