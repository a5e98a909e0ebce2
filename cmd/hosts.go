package cmd

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/agentmsg/agentmsg/config"
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
	c := &cobra.Command{
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
	c.AddCommand(newCmdHostsAdd(f))
	return c
}

func newCmdHostsAdd(f *Factory) *cobra.Command {
	var dir string
	c := &cobra.Command{
		Use:   "add NAME",
		Short: "Make a host's NATS user: its key, its permissions for the NATS server, its [hosts] settings",
		Long: `Add makes what a new host needs to join the bus: a NATS user key (written to
DIR/NAME.nk, mode 0600, for that host's [hosts] nkey_file), the entry that gives
that user exactly a host's permissions, for the authorization users of every
NATS server of the bus, and the [hosts] table for that host's config file.

A host's user may publish only packets that name it as their sender, and read
only its own stream: one host can neither pose as another nor read what is
sent to others. Copy the key to the host (it is a secret) and reload the NATS
servers (nats-server --signal reload).`,
		Example: `  agentmsg hosts add build-1
  agentmsg hosts add laptop --dir /etc/agentmsg`,
		Args: argsBetween(1, 1, "NAME"),
		RunE: func(c *cobra.Command, args []string) error {
			name := args[0]
			if err := hosts.CheckName(name); err != nil {
				return usageError{err}
			}
			if dir == "" {
				cfgPath := config.DefaultPath(f.LookupEnv)
				dir = filepath.Join(filepath.Dir(cfgPath), "hosts")
			}
			if !filepath.IsAbs(dir) {
				return usageError{fmt.Errorf("--dir %q: want an absolute path", dir)}
			}
			if err := os.MkdirAll(dir, 0o700); err != nil {
				return err
			}
			seed, public, err := hosts.NewUser()
			if err != nil {
				return err
			}
			keyFile := filepath.Join(dir, name+".nk")
			out, err := os.OpenFile(keyFile, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
			if errors.Is(err, fs.ErrExist) {
				return usageError{fmt.Errorf("%s exists: host %s has a key already (remove it to make a new one, and its entry from the NATS servers)", keyFile, name)}
			}
			if err != nil {
				return err
			}
			if _, err := out.Write(append(seed, '\n')); err != nil {
				out.Close()
				return err
			}
			if err := out.Close(); err != nil {
				return err
			}
			user := hosts.UserConfig(name, public)
			if f.JSON {
				writeJSON(f, struct {
					Host     string `json:"host"`
					KeyFile  string `json:"nkey_file"`
					Public   string `json:"nkey"`
					User     string `json:"nats_user"`
					ExitCode int    `json:"exit_code"`
				}{name, keyFile, public, user, 0})
				return nil
			}
			w := f.IO.Out
			fmt.Fprintf(w, "host %s: its NATS key is in %s (a secret: copy it to that host only)\n\n", name, keyFile)
			fmt.Fprintf(w, "1. On every NATS server of the bus, add this user to authorization { users = [ ... ] } and reload:\n\n%s\n", user)
			fmt.Fprintf(w, "2. On host %s, in ~/.config/agentmsg/config.toml (then restart agentmsg serve there):\n\n", name)
			fmt.Fprintf(w, "[hosts]\nname = %q\nnats = \"tls://NATS-HOST:4222\"\nnkey_file = %q\nca_file = \"/path/to/the/bus-ca.pem\"\n", name, keyFile)
			return nil
		},
	}
	c.Flags().StringVar(&dir, "dir", "", "where to write NAME.nk (default: the hosts directory beside the config file)")
	return c
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
