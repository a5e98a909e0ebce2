package cmd

import (
	"context"
	"fmt"
	"io"
	"sort"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/agentmsg/agentmsg/config"
	"github.com/agentmsg/agentmsg/tmux"
)

// ConfigOptions are config's inputs.
type ConfigOptions struct {
	Factory *Factory
}

func NewCmdConfig(f *Factory) *cobra.Command { return newCmdConfig(f, nil) }

func newCmdConfig(f *Factory, runF func(context.Context, *ConfigOptions) error) *cobra.Command {
	opts := &ConfigOptions{Factory: f}
	return &cobra.Command{
		Use:   "config",
		Short: "Show every setting's effective value and where it came from",
		Long: `Config shows the settings agentmsg runs with. Each comes from, in rising order
of precedence: the built-in default, the file ` + "`$XDG_CONFIG_HOME/agentmsg/config.toml`" + `
(~/.config/agentmsg/config.toml), an AGENTMSG_* environment variable, a flag.

A config file looks like:

  ready_timeout = "1m"
  confirm_timeout = "5s"
  retries = 2
  settle = "30ms"
  concurrency = 32`,
		Args: argsBetween(0, 0, "no arguments"),
		RunE: func(c *cobra.Command, args []string) error {
			if runF != nil {
				return runF(c.Context(), opts)
			}
			return configRun(c.Context(), opts)
		},
	}
}

func configRun(ctx context.Context, opts *ConfigOptions) error {
	f := opts.Factory
	cfg, err := f.Config()
	if err != nil {
		return err
	}
	path := config.DefaultPath(f.LookupEnv)
	if f.JSON {
		type entryJSON struct {
			Key    string `json:"key"`
			Value  string `json:"value"`
			Source string `json:"source"`
			Env    string `json:"env"`
			Flag   string `json:"flag"`
		}
		out := struct {
			File     string                            `json:"file"`
			Settings []entryJSON                       `json:"settings"`
			Serve    config.ServeSettings              `json:"serve"`
			Alerts   alertsJSON                        `json:"alerts"`
			Hosts    config.HostsSettings              `json:"hosts"`
			Profiles map[string]config.ProfileSettings `json:"profiles,omitempty"`
			Tmux     tmuxInUse                         `json:"tmux"`
		}{File: path, Serve: cfg.Serve, Alerts: newAlertsJSON(cfg.Alerts), Hosts: cfg.Hosts, Profiles: cfg.Profiles, Tmux: whichTmux(ctx, f, "")}
		keys := config.Keys()
		for i, e := range cfg.Entries() {
			out.Settings = append(out.Settings, entryJSON{e.Key, e.Value, string(e.Source), keys[i].Env, "--" + keys[i].Flag})
		}
		writeJSON(f, out)
		return nil
	}
	fmt.Fprintf(f.IO.Out, "config file: %s\n\n", show(path))
	tw := tabwriter.NewWriter(f.IO.Out, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "KEY\tVALUE\tSOURCE\tMEANING")
	for _, e := range cfg.Entries() {
		v := e.Value
		if v == "" {
			v = `""`
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", e.Key, show(v), show(string(e.Source)), e.Help)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	// from and socket are often empty: say what they resolve to now.
	if id, err := f.Identity(ctx); err == nil {
		team := id.Team
		if team == "" {
			team = "(none)"
		}
		fmt.Fprintf(f.IO.Out, "\nnow: sender %s (inbox %s, from %s), team %s", id.Sender, id.Name, show(id.Source), team)
	}
	if server, err := tmux.ResolveServer(cfg.Settings.Socket, cfg.Settings.SocketName, f.LookupEnv); err == nil {
		fmt.Fprintf(f.IO.Out, ", tmux server %s", show(server.Socket))
	}
	fmt.Fprintln(f.IO.Out)
	fmt.Fprintln(f.IO.Out)
	printTables(f.IO.Out, cfg)
	printTmux(f.IO.Out, whichTmux(ctx, f, ""))
	if len(cfg.Profiles) > 0 {
		names := make([]string, 0, len(cfg.Profiles))
		for name := range cfg.Profiles {
			names = append(names, name)
		}
		sort.Strings(names)
		fmt.Fprintf(f.IO.Out, "\nagent profiles changed or added by the file: %s (see agentmsg doctor for what a pane is read as)\n", show(strings.Join(names, ", ")))
	}
	return nil
}

// alertsJSON is the [alerts] table as config --json prints it: durations
// as Go duration strings, as the file writes them.
type alertsJSON struct {
	MessageWait string   `json:"message_wait"`
	Dialog      string   `json:"dialog"`
	Draft       string   `json:"draft"`
	Verdicts    []string `json:"verdicts"`
	Command     string   `json:"command,omitempty"`
	Webhook     string   `json:"webhook,omitempty"`
}

func newAlertsJSON(a config.AlertSettings) alertsJSON {
	return alertsJSON{shortDuration(a.MessageWait), shortDuration(a.Dialog), shortDuration(a.Draft), append([]string{}, a.Verdicts...), a.Command, a.Webhook}
}

// shortDuration is d as a config file writes it: "10m", not "10m0s"; 0
// (off) is "0".
func shortDuration(d time.Duration) string {
	if d == 0 {
		return "0"
	}
	s := d.String()
	if strings.HasSuffix(s, "m0s") {
		s = strings.TrimSuffix(s, "0s")
	}
	if strings.HasSuffix(s, "h0m") {
		s = strings.TrimSuffix(s, "0m")
	}
	return s
}

// printTables says the tables of the config file: [serve], [alerts] and
// [hosts], as they are in effect (the defaults where the file has none).
func printTables(w io.Writer, cfg *config.Loaded) {
	or := func(s, none string) string {
		if s == "" {
			return none
		}
		return show(s)
	}
	fmt.Fprintln(w, "[serve]")
	fmt.Fprintf(w, "  auto = %t, tcp = %s, token_file = %s\n", cfg.Serve.Auto, or(cfg.Serve.TCP, "(none: the Unix socket only)"), or(cfg.Serve.TokenFile, "(none)"))
	a := newAlertsJSON(cfg.Alerts)
	fmt.Fprintln(w, "[alerts]")
	fmt.Fprintf(w, "  message_wait = %s, dialog = %s, draft = %s, verdicts = %s\n", a.MessageWait, a.Dialog, a.Draft, or(strings.Join(a.Verdicts, ", "), "(none)"))
	fmt.Fprintf(w, "  command = %s, webhook = %s\n", or(a.Command, "(none)"), or(a.Webhook, "(none)"))
	h := cfg.Hosts
	fmt.Fprintln(w, "[hosts]")
	fmt.Fprintf(w, "  name = %s, nats = %s, replicas = %d\n", or(h.Name, "(this machine's host name)"), or(h.NATS, "(agentmsg's own embedded server)"), h.Replicas)
	if h.NkeyFile != "" || h.CAFile != "" || h.TLSServerName != "" {
		fmt.Fprintf(w, "  nkey_file = %s, ca_file = %s, tls_server_name = %s\n", or(h.NkeyFile, "(none)"), or(h.CAFile, "(none)"), or(h.TLSServerName, "(none)"))
	}
	for _, t := range h.Tunnels {
		fmt.Fprintf(w, "  tunnel: host %s over ssh %s, port %d\n", show(t.Host), show(t.SSH), t.Port)
	}
	fmt.Fprintln(w)
}
