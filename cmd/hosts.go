package cmd

import (
	"context"
	"fmt"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/agentmsg/agentmsg/hosts"
	"github.com/agentmsg/agentmsg/service"
)

// HostsOptions are hosts' inputs.
type HostsOptions struct {
	IO      *IOStreams
	JSON    func() bool
	Service func(ctx context.Context) (*service.Service, error)
	Now     func() time.Time
}

func NewCmdHosts(f *Factory, runF func(context.Context, *HostsOptions) error) *cobra.Command {
	opts := &HostsOptions{IO: f.IO, JSON: func() bool { return f.JSON }, Service: f.Service, Now: time.Now}
	return &cobra.Command{
		Use:   "hosts",
		Short: "List the hosts linked through NATS, their link state and their agents",
		Long: `Hosts lists the machines whose agentmsg daemons share one NATS bus, this one
first: whether each is linked now (it announced itself in the last few
seconds), when it was last seen, and its agents. A message reaches an agent on
another host with agentmsg send --host NAME.

The link lives in agentmsg serve, so hosts asks the daemon. With nothing
configured the daemon runs its own embedded NATS server and this host is the
only one; [hosts] nats = "tls://..." in the config file joins a NATS server or
cluster that other hosts join too (see docs/hosts.md).`,
		Example: `  agentmsg hosts
  agentmsg send --host build-1 alpha ana "run the slow tests"
  agentmsg --json hosts | jq -r '.hosts[] | select(.up) | .name'`,
		Args: argsBetween(0, 0, "no arguments"),
		RunE: func(c *cobra.Command, args []string) error {
			if runF != nil {
				return runF(c.Context(), opts)
			}
			return hostsRun(c.Context(), opts)
		},
	}
}

func hostsRun(ctx context.Context, opts *HostsOptions) error {
	svc, err := opts.Service(ctx)
	if err != nil {
		return err
	}
	list, err := svc.Hostlist(ctx)
	if list == nil && err != nil {
		return err
	}
	if opts.JSON() {
		doc := struct {
			Hosts    []hosts.HostInfo `json:"hosts"`
			Warning  string           `json:"warning,omitempty"`
			ExitCode int              `json:"exit_code"`
		}{Hosts: list}
		if err != nil {
			doc.Warning = err.Error()
		}
		writeJSON(&Factory{IO: opts.IO}, doc)
		return nil
	}
	w := tabwriter.NewWriter(opts.IO.Out, 0, 0, 2, ' ', 0)
	fmt.Fprintln(w, "HOST\tLINK\tSEEN\tAGENTS")
	for _, h := range list {
		name, link := h.Name, "down"
		if h.Self {
			name += " (this host)"
		}
		if h.Up {
			link = "up"
		}
		if h.Self && h.Waiting > 0 {
			link += fmt.Sprintf(", %d waiting to go out", h.Waiting)
		}
		seen := "now"
		if !h.Self {
			seen = ago(opts.Now().Sub(h.Seen))
		}
		agents := strings.Join(h.Agents, " ")
		if agents == "" {
			agents = "-"
		}
		fmt.Fprintf(w, "%s\t%s\t%s\t%s\n", show(name), link, seen, show(agents))
	}
	w.Flush()
	if err != nil {
		fmt.Fprintf(opts.IO.ErrOut, "only this host is listed: %s\n", showErr(err))
	}
	return nil
}

// ago says how long ago, to the second.
func ago(d time.Duration) string {
	if d < time.Second {
		return "now"
	}
	return d.Truncate(time.Second).String() + " ago"
}
