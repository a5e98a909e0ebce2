package cmd

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/agentmsg/agentmsg/config"
	"github.com/agentmsg/agentmsg/hosts"
	"github.com/agentmsg/agentmsg/hosts/provision"
	"github.com/agentmsg/agentmsg/service"
	"github.com/agentmsg/agentmsg/target"
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
	c.AddCommand(newCmdHostsInit(f), newCmdHostsAdd(f), newCmdHostsProvision(f))
	return c
}

// newCmdHostsInit is hosts init: the operator's key, once.
func newCmdHostsInit(f *Factory) *cobra.Command {
	var dir string
	c := &cobra.Command{
		Use:   "init",
		Short: "Make the operator's NATS user, which alone makes the hosts' streams (once per bus)",
		Long: `Init makes the operator's NATS user key (DIR/operator.nk, mode 0600) and
prints its entry for the authorization users of every NATS server of the bus.
That user may make, change and remove streams, and nothing else; no host's
user may. hosts add then makes each new host's stream with it, so a host can
never configure a stream to read others' mail or speak for another host.

Keep the key on the operator's machine only, and name it in that machine's
config: [hosts] admin_nkey_file = "DIR/operator.nk", beside nats and ca_file.`,
		Example: `  agentmsg hosts init
  agentmsg hosts init --dir /etc/agentmsg`,
		Args: argsBetween(0, 0, "no arguments"),
		RunE: func(c *cobra.Command, args []string) error {
			if dir == "" {
				dir = hostsDir(f)
			}
			if !filepath.IsAbs(dir) {
				return usagef("--dir %q: want an absolute path", dir)
			}
			public, keyFile, err := writeSeed(dir, "operator", "the operator has a key already (remove it to make a new one, and its entry from the NATS servers)")
			if err != nil {
				return err
			}
			user := hosts.AdminConfig(public)
			if f.JSON {
				writeJSON(f, hostAddDoc{Host: "operator", KeyFile: keyFile, Public: public, User: user})
				return nil
			}
			w := f.IO.Out
			fmt.Fprintf(w, "The operator's NATS key is in %s (a secret: keep it on this machine only)\n\n", keyFile)
			fmt.Fprintf(w, "1. On every NATS server of the bus, add this user to authorization { users = [ ... ] } and reload:\n\n%s\n", user)
			fmt.Fprintf(w, "2. In this machine's %s, under [hosts] (beside nats and ca_file):\n\nadmin_nkey_file = %q\n\n", config.DefaultPath(f.LookupEnv), keyFile)
			fmt.Fprintf(w, "Then agentmsg hosts add NAME makes each host's key, entry and stream.\n")
			return nil
		},
	}
	c.Flags().StringVar(&dir, "dir", "", "where to write operator.nk (default: the hosts directory beside the config file)")
	return c
}

// newCmdHostsProvision is hosts provision: the hosts' streams made, or put
// right, again.
func newCmdHostsProvision(f *Factory) *cobra.Command {
	var replicas int
	c := &cobra.Command{
		Use:   "provision NAME...",
		Short: "Make (or put right) the named hosts' streams and the presence bucket on the bus, as the operator",
		Long: `Provision makes on the bus, with the operator's key ([hosts] admin_nkey_file,
see hosts init), the stream of each host named and the presence bucket, or puts
right one whose configuration differs from agentmsg's: a stream a host made
itself before hosts could not (agentmsg before issue 30), or one changed by
hand. A stream that copies another in, republishes, takes other subjects or
lets a packet roll it up is put right, and said so. hosts add does this for a
new host; run provision for the hosts that joined before, after an upgrade:
for each host whose key hosts add left in the hosts directory it also prints
the host's entry for the NATS servers as its permissions are now.`,
		Example: `  agentmsg hosts provision build-1 laptop devbox`,
		Args:    cobra.MinimumNArgs(1),
		RunE: func(c *cobra.Command, args []string) error {
			cfg, err := f.Config()
			if err != nil {
				return err
			}
			done, err := makeStreams(c.Context(), f, cfg.Hosts, args, replicas)
			if err != nil {
				return err
			}
			// Each host's entry as its permissions are today, from the key
			// hosts add left here: after an upgrade, its entry changes.
			users := map[string]string{}
			for _, name := range args {
				if public, err := provision.PublicKey(filepath.Join(hostsDir(f), name+".nk")); err == nil {
					users[name] = hosts.UserConfig(name, public)
				}
			}
			if f.JSON {
				writeJSON(f, struct {
					Done     []string          `json:"done"`
					Users    map[string]string `json:"nats_users,omitempty"`
					ExitCode int               `json:"exit_code"`
				}{Done: done, Users: users})
				return nil
			}
			for _, d := range done {
				fmt.Fprintln(f.IO.Out, d)
			}
			if len(users) > 0 {
				fmt.Fprintf(f.IO.Out, "\nThe hosts' entries for authorization { users = [ ... ] } of every NATS server, as their permissions are now (replace the old ones and reload):\n\n")
				for _, name := range args {
					fmt.Fprint(f.IO.Out, users[name])
				}
			}
			return nil
		},
	}
	c.Flags().IntVar(&replicas, "replicas", 0, "copies of each stream on the cluster's servers (default: [hosts] replicas, else 1)")
	return c
}

// makeStreams makes names' streams with the operator's key that here, the
// operator's [hosts], names.
func makeStreams(ctx context.Context, f *Factory, here config.HostsSettings, names []string, replicas int) ([]string, error) {
	for _, n := range names {
		if err := target.CheckHost(n); err != nil {
			return nil, usageError{err}
		}
	}
	if here.AdminNkeyFile == "" || here.NATS == "" {
		return nil, usagef("the operator's key and the bus are not set here: run agentmsg hosts init, then set [hosts] admin_nkey_file and nats in %s (see docs/hosts.md)", config.DefaultPath(f.LookupEnv))
	}
	if replicas == 0 {
		replicas = max(here.Replicas, 1)
	}
	if replicas < 1 || replicas > 5 {
		return nil, usagef("--replicas %d: want 1 to 5 (a cluster's size, at most)", replicas)
	}
	done, err := hosts.Provision(ctx, hosts.Operator{URL: here.NATS, NkeyFile: here.AdminNkeyFile, CAFile: here.CAFile, TLSServerName: here.TLSServerName}, names, replicas)
	if err != nil {
		return done, fmt.Errorf("making the streams of %s on the bus at %s: %w", strings.Join(names, ", "), here.NATS, err)
	}
	return done, nil
}

// hostsDir is where host keys are written by default: beside the config.
func hostsDir(f *Factory) string {
	return filepath.Join(filepath.Dir(config.DefaultPath(f.LookupEnv)), "hosts")
}

// hostsAddOptions are hosts add's inputs.
type hostsAddOptions struct {
	f    *Factory
	name string
	dir  string
	// A box reachable only by SSH: its ssh destination, the port on its
	// 127.0.0.1 that will lead to the bus, an ssh_config (-F), and the
	// box's agentmsg config directory ("" asks the box).
	ssh, sshConfig, remoteDir string
	port                      int
	// replicas of its stream (0: [hosts] replicas, else 1).
	replicas int
}

func newCmdHostsAdd(f *Factory) *cobra.Command {
	o := &hostsAddOptions{f: f}
	c := &cobra.Command{
		Use:   "add NAME",
		Short: "Make a host's NATS user and stream: its key, its permissions for the NATS server, its stream on the bus, its [hosts] settings",
		Long: `Add makes what a new host needs to join the bus: a NATS user key (written to
DIR/NAME.nk, mode 0600, for that host's [hosts] nkey_file), the entry that gives
that user exactly a host's permissions, for the authorization users of every
NATS server of the bus, its stream on the bus (made with the operator's key,
[hosts] admin_nkey_file: see hosts init), and the [hosts] table for that host's
config file.

A host's user may publish only packets that name it as their sender, read and
clear only its own stream, and make or change no stream, consumer or bucket:
one host can neither pose as another, nor read what is sent to others, nor keep
another out. Copy the key to the host (it is a secret) and reload the NATS
servers (nats-server --signal reload).

--ssh user@box is for a box that reaches the bus only through this machine,
by SSH (its firewall lets nothing else in). This host's daemon then keeps one
ssh connection to the box (your own ssh: its config, keys and agent) whose
remote forward makes 127.0.0.1:PORT on the box lead to the bus, and add puts
the key, the bus's CA and a [hosts] table on the box over that ssh. Restart
agentmsg serve here and there.`,
		Example: `  agentmsg hosts add build-1
  agentmsg hosts add laptop --dir /etc/agentmsg
  agentmsg hosts add devbox --ssh me@devbox.example --port 14222`,
		Args: argsBetween(1, 1, "NAME"),
		RunE: func(c *cobra.Command, args []string) error {
			o.name = args[0]
			return o.run(c.Context())
		},
	}
	c.Flags().StringVar(&o.dir, "dir", "", "where to write NAME.nk (default: the hosts directory beside the config file)")
	c.Flags().IntVar(&o.replicas, "replicas", 0, "copies of the host's stream on the cluster's servers (default: [hosts] replicas, else 1)")
	c.Flags().StringVar(&o.ssh, "ssh", "", "the box reaches the bus only through an SSH connection from this host: its ssh destination (user@box)")
	c.Flags().IntVar(&o.port, "port", 14222, "with --ssh: the port on the box's 127.0.0.1 that leads to the bus")
	c.Flags().StringVar(&o.sshConfig, "ssh-config", "", "with --ssh: an ssh_config file to use (ssh -F), absolute")
	c.Flags().StringVar(&o.remoteDir, "remote-config-dir", "", "with --ssh: the box's agentmsg config directory (default: asked of the box: $XDG_CONFIG_HOME/agentmsg, or ~/.config/agentmsg)")
	return c
}

func (o *hostsAddOptions) run(ctx context.Context) error {
	f := o.f
	if err := target.CheckHost(o.name); err != nil {
		return usageError{err}
	}
	cfg, err := f.Config()
	if err != nil {
		return err
	}
	here := cfg.Hosts
	if o.ssh != "" {
		if here.NATS == "" {
			return usagef("--ssh: this host is on no bus a tunnel could lead to; set [hosts] nats in %s first (see docs/hosts.md)", config.DefaultPath(f.LookupEnv))
		}
		if o.port < 1 || o.port > 65535 {
			return usagef("--port %d: want 1 to 65535", o.port)
		}
	}
	if o.dir == "" {
		o.dir = hostsDir(f)
	}
	if !filepath.IsAbs(o.dir) {
		return usagef("--dir %q: want an absolute path", o.dir)
	}
	// Its stream first, made by the operator's user where this machine
	// holds its key (else the operator makes it: hosts provision): a bus
	// that cannot take it now leaves no key behind whose entry was never
	// printed. A stream with no user yet is harmless.
	var provisioned []string
	later := ""
	if here.AdminNkeyFile != "" {
		if provisioned, err = makeStreams(ctx, f, here, []string{o.name}, o.replicas); err != nil {
			return fmt.Errorf("host %s not added (no key made): %w", o.name, err)
		}
	} else {
		later = fmt.Sprintf("its stream is not made: the operator (who holds the key agentmsg hosts init made) runs agentmsg hosts provision %s", o.name)
	}
	seed, public, err := o.writeKey()
	if err != nil {
		return err
	}
	user := hosts.UserConfig(o.name, public)
	keyFile := filepath.Join(o.dir, o.name+".nk")
	w := f.IO.Out
	if o.ssh == "" {
		if f.JSON {
			writeJSON(f, hostAddDoc{Host: o.name, KeyFile: keyFile, Public: public, User: user, Provisioned: provisioned, Warning: later})
			return nil
		}
		fmt.Fprintf(w, "host %s: its NATS key is in %s (a secret: copy it to that host only)\n\n", o.name, keyFile)
		fmt.Fprintf(w, "1. On every NATS server of the bus, add this user to authorization { users = [ ... ] } and reload:\n\n%s\n", user)
		table, err := provision.Table{Name: o.name, NATS: "tls://NATS-HOST:4222", NkeyFile: keyFile, CAFile: "/path/to/the/bus-ca.pem"}.TOML()
		if err != nil {
			return err
		}
		fmt.Fprintf(w, "2. On host %s, in ~/.config/agentmsg/config.toml (then restart agentmsg serve there):\n\n", o.name)
		fmt.Fprint(w, table)
		o.sayProvisioned(provisioned, later)
		return nil
	}
	box := provision.Box{SSH: o.ssh, SSHConfig: o.sshConfig, Dir: o.remoteDir}
	installed, err := box.Install(ctx, o.name, o.port, seed, here)
	if err != nil {
		return fmt.Errorf("installing host %s on %s over ssh (the key stays in %s): %w", o.name, o.ssh, keyFile, err)
	}
	if err := o.addTunnel(); err != nil {
		return err
	}
	if f.JSON {
		writeJSON(f, hostAddDoc{Host: o.name, KeyFile: keyFile, Public: public, User: user, Box: installed, Provisioned: provisioned, Warning: later})
		return nil
	}
	fmt.Fprintf(w, "host %s, reached by ssh %s: its key, the bus's CA and its settings are on the box:\n%s\n", o.name, o.ssh, installed)
	fmt.Fprintf(w, "This host keeps the tunnel ([[hosts.tunnel]] added to %s).\n\n", config.DefaultPath(f.LookupEnv))
	fmt.Fprintf(w, "On every NATS server of the bus, add this user to authorization { users = [ ... ] } and reload:\n\n%s\n", user)
	fmt.Fprintf(w, "Then restart agentmsg serve here and on the box.\n")
	o.sayProvisioned(provisioned, later)
	return nil
}

// sayProvisioned says what became of the host's stream.
func (o *hostsAddOptions) sayProvisioned(done []string, later string) {
	w := o.f.IO.Out
	if later != "" {
		fmt.Fprintf(w, "\nHost %s: %s.\n", o.name, later)
		return
	}
	fmt.Fprintf(w, "\nOn the bus, as the operator: %s.\n", strings.Join(done, "; "))
}

// hostAddDoc is hosts add --json.
type hostAddDoc struct {
	Host    string `json:"host"`
	KeyFile string `json:"nkey_file"`
	Public  string `json:"nkey"`
	User    string `json:"nats_user"`
	Box     string `json:"box_settings,omitempty"`
	// Provisioned says what was made on the bus; Warning what is left to
	// do there.
	Provisioned []string `json:"provisioned,omitempty"`
	Warning     string   `json:"warning,omitempty"`
	ExitCode    int      `json:"exit_code"`
}

// writeKey makes the host's key pair and writes the seed, once.
func (o *hostsAddOptions) writeKey() (seed []byte, public string, err error) {
	seed, public, _, err = writeKeyPair(o.dir, o.name, fmt.Sprintf("host %s has a key already (remove it to make a new one, and its entry from the NATS servers; hosts provision %s makes its stream again)", o.name, o.name))
	return seed, public, err
}

// writeSeed makes a key pair and writes its seed to dir/name.nk, once;
// exists says what it means that the file is there already.
func writeSeed(dir, name, exists string) (public, keyFile string, err error) {
	_, public, keyFile, err = writeKeyPair(dir, name, exists)
	return public, keyFile, err
}

// writeKeyPair is provision.WriteKey, worded for a person when the key
// is there already.
func writeKeyPair(dir, name, exists string) (seed []byte, public, keyFile string, err error) {
	seed, public, keyFile, err = provision.WriteKey(dir, name)
	if errors.Is(err, provision.ErrKeyExists) {
		return nil, "", keyFile, usagef("%s exists: %s", keyFile, exists)
	}
	return seed, public, keyFile, err
}

// addTunnel appends the box's tunnel to this host's config file.
func (o *hostsAddOptions) addTunnel() error {
	path := config.DefaultPath(o.f.LookupEnv)
	if path == "" {
		return errors.New("no config file: neither XDG_CONFIG_HOME nor HOME is set")
	}
	return provision.AddTunnel(path, config.Tunnel{Host: o.name, SSH: o.ssh, Port: o.port, SSHConfig: o.sshConfig})
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
	if len(list) > 0 && list[0].Problem != "" {
		fmt.Fprintf(opts.IO.ErrOut, "last problem on the link: %s\n", show(list[0].Problem))
	}
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
