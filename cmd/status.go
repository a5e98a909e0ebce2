package cmd

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/agentmsg/agentmsg/mailbox"
)

// statusStates are the states an agent can report on the board.
var statusStates = mailbox.StatusStates()

func NewCmdStatus(f *Factory, runF func(context.Context, *StatusOptions) error) *cobra.Command {
	c := &cobra.Command{
		Use:   "status",
		Short: "Report what you are doing on your team's status board",
		Long: `Status keeps your entry on your team's status board, which
agentmsg board shows. See agentmsg status set --help.`,
		Args: argsBetween(0, 0, "a subcommand: set"),
	}
	c.AddCommand(NewCmdStatusSet(f, runF))
	return c
}

// StatusOptions are status set's inputs. Only the fields whose flags were
// given change; the rest of the entry stays.
type StatusOptions struct {
	MailboxDeps

	Mission, WorkingOn, State string
	Done, Next                []string
	Set                       map[string]bool // flag names given
}

func NewCmdStatusSet(f *Factory, runF func(context.Context, *StatusOptions) error) *cobra.Command {
	opts := &StatusOptions{MailboxDeps: mailboxDeps(f)}
	c := &cobra.Command{
		Use:   "set",
		Short: "Set your entry on your team's status board",
		Long: `Set updates your entry on your team's status board. Only what you give
changes: --state alone keeps your mission and lists. --done and --next may
be given more than once; each given list replaces the old one, and an empty
value (--next "") clears it.

States: ` + strings.Join(statusStates, ", ") + `.`,
		Example: `  agentmsg status set --mission "ship the mailbox" --state working --working-on "inbox cursor"
  agentmsg status set --done "cursor" --done "wait" --next "board --watch"
  agentmsg status set --state blocked --working-on "waiting for a review of PR 12"`,
		Args: argsBetween(0, 0, "flags only"),
		RunE: func(c *cobra.Command, args []string) error {
			opts.Set = map[string]bool{}
			for _, name := range []string{"mission", "working-on", "done", "next", "state"} {
				if c.Flags().Changed(name) {
					opts.Set[name] = true
				}
			}
			if len(opts.Set) == 0 {
				return usagef("status set: nothing to set; give --mission, --working-on, --done, --next or --state")
			}
			if opts.Set["state"] && !slices.Contains(statusStates, opts.State) {
				return usagef("--state %q: want one of %s", opts.State, strings.Join(statusStates, ", "))
			}
			opts.Done, opts.Next = nonEmpty(opts.Done), nonEmpty(opts.Next)
			if runF != nil {
				return runF(c.Context(), opts)
			}
			return statusSetRun(c.Context(), opts)
		},
	}
	fl := c.Flags()
	fl.StringVar(&opts.Mission, "mission", "", "what you are here to do")
	fl.StringVar(&opts.WorkingOn, "working-on", "", "what you are doing now")
	fl.StringArrayVar(&opts.Done, "done", nil, "something finished (repeat for a list)")
	fl.StringArrayVar(&opts.Next, "next", nil, "something to do next (repeat for a list)")
	fl.StringVar(&opts.State, "state", "", "one of "+strings.Join(statusStates, "|"))
	return c
}

func nonEmpty(list []string) []string {
	var out []string
	for _, s := range list {
		if s = strings.TrimSpace(s); s != "" {
			out = append(out, s)
		}
	}
	return out
}

func statusSetRun(ctx context.Context, opts *StatusOptions) error {
	id, err := opts.Identity(ctx)
	if err != nil {
		return err
	}
	team, err := id.NeedTeam()
	if err != nil {
		return err
	}
	s, err := opts.Mailbox()
	if err != nil {
		return err
	}
	board, err := s.Board(team)
	if err != nil && len(board) == 0 {
		// An unreadable board still lets an agent say what it does.
		fmt.Fprintf(opts.IO.ErrOut, "agentmsg: reading the board of %s: %v\n", team, err)
	}
	var st mailbox.Status
	for _, b := range board {
		if b.Agent == id.Name {
			st = b
		}
	}
	if opts.Set["mission"] {
		st.Mission = opts.Mission
	}
	if opts.Set["working-on"] {
		st.WorkingOn = opts.WorkingOn
	}
	if opts.Set["done"] {
		st.Done = opts.Done
	}
	if opts.Set["next"] {
		st.Next = opts.Next
	}
	if opts.Set["state"] {
		st.State = opts.State
	}
	st.Updated = opts.Now().UTC()
	if err := s.SetStatus(team, id.Name, st); err != nil {
		return err
	}
	st.Agent = id.Name
	if opts.JSON() {
		writeJSON(opts.jsonOut(), struct {
			Team string `json:"team"`
			mailbox.Status
		}{team, st})
		return nil
	}
	fmt.Fprintf(opts.IO.Out, "%s/%s: %s", team, id.Name, show(orDash(st.State)))
	if st.WorkingOn != "" {
		fmt.Fprintf(opts.IO.Out, ", working on %s", show(st.WorkingOn))
	}
	fmt.Fprintln(opts.IO.Out)
	return nil
}

// BoardOptions are board's inputs.
type BoardOptions struct {
	MailboxDeps

	Team     string // "" for the caller's
	Watch    bool
	Interval time.Duration // how often --watch looks; 500ms
}

func NewCmdBoard(f *Factory, runF func(context.Context, *BoardOptions) error) *cobra.Command {
	opts := &BoardOptions{MailboxDeps: mailboxDeps(f), Interval: 500 * time.Millisecond}
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

type boardJSON struct {
	Team   string           `json:"team"`
	Agents []mailbox.Status `json:"agents"`
}

func boardRun(ctx context.Context, opts *BoardOptions) error {
	team, named, err := teamOrOwn(ctx, opts.MailboxDeps, optional(opts.Team), 0)
	if err != nil {
		return err
	}
	s, err := opts.Mailbox()
	if err != nil {
		return err
	}
	if err := opts.knownTeam(ctx, s, team, named); err != nil {
		return err
	}
	redraw := opts.Watch && !opts.JSON() && isTerminal(opts.IO.Out)
	var last []byte
	tick := time.NewTicker(max(opts.Interval, 10*time.Millisecond))
	defer tick.Stop()
	for {
		board, err := s.Board(team)
		if err != nil && len(board) == 0 && !opts.Watch {
			return err
		}
		if err != nil && !opts.Watch {
			fmt.Fprintf(opts.IO.ErrOut, "agentmsg: %v\n", err) // and show the rest
		}
		if board == nil {
			board = []mailbox.Status{}
		}
		doc, _ := json.Marshal(boardJSON{team, board})
		if !bytes.Equal(doc, last) {
			last = doc
			switch {
			case opts.JSON() && opts.Watch:
				fmt.Fprintf(opts.IO.Out, "%s\n", jsonSafe(doc))
			case opts.JSON():
				writeJSON(opts.jsonOut(), boardJSON{team, board})
			default:
				if redraw {
					fmt.Fprint(opts.IO.Out, "\033[H\033[2J")
				} else if opts.Watch {
					fmt.Fprintf(opts.IO.Out, "-- %s %s --\n", team, opts.Now().Format(time.TimeOnly))
				}
				if err := writeBoard(opts.IO.Out, opts.IO.ErrOut, team, board, opts.Now()); err != nil {
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

// optional is the arguments list teamOrOwn takes: team, if given.
func optional(team string) []string {
	if team == "" {
		return nil
	}
	return []string{team}
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
