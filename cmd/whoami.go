package cmd

import (
	"context"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/agentmsg/agentmsg/target"
	"github.com/agentmsg/agentmsg/tmux"
	"github.com/agentmsg/agentmsg/wire"
)

// WhoamiOptions are whoami's inputs.
type WhoamiOptions struct {
	IO        *IOStreams
	JSON      func() bool
	Identity  func(ctx context.Context) (Identity, error)
	LookupEnv func(string) (string, bool)
	// Session is the name of the tmux session the caller runs in ("" when
	// none).
	Session func(ctx context.Context) (string, error)
}

func NewCmdWhoami(f *Factory, runF func(context.Context, *WhoamiOptions) error) *cobra.Command {
	opts := &WhoamiOptions{IO: f.IO, JSON: func() bool { return f.JSON }, LookupEnv: f.LookupEnv,
		Identity: func(ctx context.Context) (Identity, error) { return f.Identity(ctx) },
		Session: func(ctx context.Context) (string, error) {
			cfg, err := f.Config()
			if err != nil {
				return "", err
			}
			return tmux.CallerSession(ctx, cfg.Settings.Tmux, f.LookupEnv)
		}}
	return &cobra.Command{
		Use:   "whoami",
		Short: "Show who you are to agentmsg: your name and team, where each came from, your tmux pane",
		Long: `Whoami prints the name your messages carry and the team whose mailbox is yours,
each with where it came from (--from/--team, AGENTMSG_FROM/AGENTMSG_TEAM, the
config file, or the agent-<team>-<name> tmux session you run in), and the tmux
session and pane you run in. agentmsg prime prints what an agent needs to know
to take part, for its instructions.`,
		Example: `  agentmsg whoami
  agentmsg --json whoami | jq -r .team`,
		Args: argsBetween(0, 0, "no arguments"),
		RunE: func(c *cobra.Command, args []string) error {
			if runF != nil {
				return runF(c.Context(), opts)
			}
			return whoamiRun(c.Context(), opts)
		},
	}
}

func whoamiRun(ctx context.Context, opts *WhoamiOptions) error {
	doc, err := whoami(ctx, opts)
	if err != nil {
		return err
	}
	if opts.JSON() {
		writeJSON(&Factory{IO: opts.IO}, doc)
		return nil
	}
	w := opts.IO.Out
	fmt.Fprintf(w, "%s of %s\n", show(doc.Name), teamPhrase(doc.Team))
	fmt.Fprintf(w, "  name  %s, from %s; your messages are MSG_%s_<8 hex>\n", show(doc.Name), show(doc.NameSource), doc.Sender)
	if doc.Team == "" {
		fmt.Fprintln(w, "  team  none: give --team TEAM or set AGENTMSG_TEAM (inside an agent-<team>-<name> session it is found by itself)")
	} else {
		fmt.Fprintf(w, "  team  %s, from %s\n", show(doc.Team), show(doc.TeamSource))
	}
	switch in := doc.Tmux; {
	case in == nil:
		fmt.Fprintln(w, "  tmux  not inside tmux ($TMUX is not set)")
	case in.Session == "":
		fmt.Fprintf(w, "  tmux  pane %s of the server at %s (its session could not be read)\n", show(in.Pane), show(in.Socket))
	default:
		fmt.Fprintf(w, "  tmux  session %s, pane %s, on the server at %s\n", show(in.Session), show(in.Pane), show(in.Socket))
	}
	return nil
}

// whoami is who the caller is, and the tmux pane it runs in.
func whoami(ctx context.Context, opts *WhoamiOptions) (wire.Whoami, error) {
	id, err := opts.Identity(ctx)
	if err != nil {
		return wire.Whoami{}, err
	}
	doc := wire.Whoami{Name: id.Name, NameSource: id.Source, Team: id.Team, TeamSource: id.TeamSource, Sender: id.Sender}
	if caller := tmux.CallerFrom(opts.LookupEnv); caller.Socket != "" {
		session, _ := opts.Session(ctx) // a pane whose session cannot be read is still where the caller is
		_, agent := target.FromSession(session)
		doc.Tmux = &wire.CallerIn{Socket: caller.Socket, Pane: caller.Pane, Session: session, Agent: agent}
	}
	return doc, nil
}

func teamPhrase(team string) string {
	if team == "" {
		return "no team"
	}
	return "team " + show(team)
}
