package cmd

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"sort"
	"strings"
	"time"

	"github.com/BurntSushi/toml"
	"github.com/spf13/cobra"
)

// MCPInstallOptions are mcp install's inputs.
type MCPInstallOptions struct {
	IO        *IOStreams
	LookupEnv func(string) (string, bool)
	JSON      func() bool

	CLI          string // claude, codex or gemini
	Print        bool   // print the merged file; write nothing
	Orchestrator bool
	Dir          string // claude: the project (default: the working directory)
	Home         string // codex, gemini: the home directory (default: $HOME)
	Command      string // the agentmsg to run (default: this executable)
	// Args go before "mcp": a -S/-L given on this command line.
	Args []string
	// Env is AGENTMSG_TEAM / AGENTMSG_FROM when --team / --from were given.
	Env map[string]string
}

// mcpServerEntry is what registers the server with a CLI.
type mcpServerEntry struct {
	Command string            `json:"command"`
	Args    []string          `json:"args"`
	Env     map[string]string `json:"env,omitempty"`
}

func NewCmdMCPInstall(f *Factory, runF func(context.Context, *MCPInstallOptions) error) *cobra.Command {
	opts := &MCPInstallOptions{IO: f.IO, LookupEnv: f.LookupEnv, JSON: func() bool { return f.JSON }}
	c := &cobra.Command{
		Use:   "install (claude | codex | gemini)",
		Short: "Register agentmsg's MCP server with an agent CLI (writes its settings file; --print to only show it)",
		Long: `Install merges the entry that makes an agent CLI start "agentmsg mcp" into
that CLI's settings file, leaving every other entry as it was (an earlier
agentmsg entry is replaced):

  claude  .mcp.json in the project (--dir, default: here): mcpServers.agentmsg
  codex   ~/.codex/config.toml ($CODEX_HOME, or --home): [mcp_servers.agentmsg]
  gemini  ~/.gemini/settings.json (--home): mcpServers.agentmsg

` + installHelp + `

A file that cannot be merged (not valid JSON or TOML) is left alone, and the
entry is shown to add by hand. agentmsg hooks install behaves the same way.

--team and --from given here are put into the server's environment
(AGENTMSG_TEAM, AGENTMSG_FROM); without them the server finds its identity
in the tmux session the CLI runs in. -S / -L are passed on to the server.`,
		Example: `  agentmsg mcp install claude
  agentmsg mcp install claude --print --orchestrator
  agentmsg --team alpha --from lead mcp install codex
  agentmsg mcp install gemini --home /tmp/home`,
		Args:      argsBetween(1, 1, "claude, codex or gemini"),
		ValidArgs: []string{"claude", "codex", "gemini"},
		RunE: func(c *cobra.Command, args []string) error {
			opts.CLI = args[0]
			switch opts.CLI {
			case "claude", "codex", "gemini":
			default:
				return usagef("mcp install %q: want claude, codex or gemini", opts.CLI)
			}
			opts.Env = map[string]string{}
			for flag, env := range map[string]string{"team": "AGENTMSG_TEAM", "from": "AGENTMSG_FROM"} {
				if fl := c.Flag(flag); fl != nil && fl.Changed {
					opts.Env[env] = fl.Value.String()
				}
			}
			opts.Args = nil
			for flag, short := range map[string]string{"socket": "-S", "socket-name": "-L"} {
				if fl := c.Flag(flag); fl != nil && fl.Changed {
					v := fl.Value.String()
					if short == "-S" {
						if abs, err := filepath.Abs(v); err == nil {
							v = abs
						}
					}
					opts.Args = append(opts.Args, short, v)
				}
			}
			if opts.Command == "" {
				exe, err := os.Executable()
				if err != nil {
					return fmt.Errorf("finding the agentmsg executable (give it with --command): %w", err)
				}
				if resolved, err := filepath.EvalSymlinks(exe); err == nil {
					exe = resolved
				}
				opts.Command = exe
			}
			if runF != nil {
				return runF(c.Context(), opts)
			}
			return mcpInstallRun(opts)
		},
	}
	fl := c.Flags()
	fl.BoolVar(&opts.Print, "print", false, "print the settings file as it would be written, and write nothing")
	// --write was needed before writing became the default; still accepted.
	fl.Bool("write", false, "write the file (the default now)")
	_ = fl.MarkDeprecated("write", "writing is the default now (--print only prints)")
	fl.BoolVar(&opts.Orchestrator, "orchestrator", false, "register the orchestrator's tools too (agentmsg mcp --orchestrator)")
	fl.StringVar(&opts.Dir, "dir", "", "claude: the project directory that holds .mcp.json (default: the working directory)")
	fl.StringVar(&opts.Home, "home", "", "codex, gemini: the home directory (default: $HOME; codex: $CODEX_HOME when set)")
	fl.StringVar(&opts.Command, "command", "", "the agentmsg program the CLI runs (default: this executable)")
	return c
}

func (o *MCPInstallOptions) entry() mcpServerEntry {
	args := append(append([]string{}, o.Args...), "mcp")
	if o.Orchestrator {
		args = append(args, "--orchestrator")
	}
	e := mcpServerEntry{Command: o.Command, Args: args}
	if len(o.Env) > 0 {
		e.Env = o.Env
	}
	return e
}

// path is the configuration file the entry goes into.
func (o *MCPInstallOptions) path() (string, error) {
	home := func() (string, error) {
		if o.Home != "" {
			return o.Home, nil
		}
		if v, ok := o.LookupEnv("HOME"); ok && v != "" {
			return v, nil
		}
		return "", usagef("no home directory: give --home DIR")
	}
	switch o.CLI {
	case "claude":
		dir := o.Dir
		if dir == "" {
			wd, err := os.Getwd()
			if err != nil {
				return "", err
			}
			dir = wd
		}
		return filepath.Join(dir, ".mcp.json"), nil
	case "codex":
		if v, ok := o.LookupEnv("CODEX_HOME"); ok && v != "" && o.Home == "" {
			return filepath.Join(v, "config.toml"), nil
		}
		h, err := home()
		return filepath.Join(h, ".codex", "config.toml"), err
	default:
		h, err := home()
		return filepath.Join(h, ".gemini", "settings.json"), err
	}
}

func mcpInstallRun(o *MCPInstallOptions) error {
	path, err := o.path()
	if err != nil {
		return err
	}
	entry := o.entry()
	merge := mergeJSONServer
	if o.CLI == "codex" {
		merge = mergeTOMLServer
	}
	old, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		old, err = nil, nil
	}
	if err != nil {
		return fmt.Errorf("reading %s: %w", path, err)
	}
	merged, err := merge(old, entry, o.Orchestrator)
	if err != nil {
		snippet, _ := merge(nil, entry, o.Orchestrator)
		return fmt.Errorf("merging into %s: %w (nothing was written; add this by hand:\n%s)", path, err, snippet)
	}
	rep, err := installFile(o.CLI, path, old, merged, o.Print, time.Now())
	if err != nil {
		return err
	}
	if o.JSON() {
		writeJSON(&Factory{IO: o.IO}, struct {
			installReport
			Entry mcpServerEntry `json:"entry"`
		}{rep, entry})
		return nil
	}
	return printInstall(o.IO, rep, o.Print, "registered agentmsg's MCP server in "+path)
}

// writeFileKeepMode replaces path with data atomically, keeping the old
// file's mode (0644 for a new one), creating its directory.
func writeFileKeepMode(path string, data []byte) error {
	mode := os.FileMode(0o644)
	if fi, err := os.Stat(path); err == nil {
		mode = fi.Mode().Perm()
	}
	dir := filepath.Dir(path)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	tmp, err := os.CreateTemp(dir, "."+filepath.Base(path)+".tmp*")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name())
	if _, err := tmp.Write(data); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Chmod(mode); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		return fmt.Errorf("writing %s: %w", path, err)
	}
	return nil
}

// jsonMember is one member of a JSON object, kept in file order.
type jsonMember struct {
	Key   string
	Value json.RawMessage
}

// parseJSONObject reads a JSON object keeping its members' order; empty
// input is an empty object.
func parseJSONObject(data []byte) ([]jsonMember, error) {
	if len(bytes.TrimSpace(data)) == 0 {
		return nil, nil
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	if tok, err := dec.Token(); err != nil || tok != json.Delim('{') {
		return nil, fmt.Errorf("not a JSON object (%v)", err)
	}
	var out []jsonMember
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return nil, err
		}
		var v json.RawMessage
		if err := dec.Decode(&v); err != nil {
			return nil, err
		}
		out = append(out, jsonMember{tok.(string), v})
	}
	if _, err := dec.Token(); err != nil {
		return nil, err
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, errors.New("text after the JSON object")
	}
	return out, nil
}

func setJSONMember(obj []jsonMember, key string, v json.RawMessage) []jsonMember {
	for i := range obj {
		if obj[i].Key == key {
			obj[i].Value = v
			return obj
		}
	}
	return append(obj, jsonMember{key, v})
}

func encodeJSONObject(obj []jsonMember) ([]byte, error) {
	var b bytes.Buffer
	b.WriteByte('{')
	for i, m := range obj {
		if i > 0 {
			b.WriteByte(',')
		}
		k, err := json.Marshal(m.Key)
		if err != nil {
			return nil, err
		}
		b.Write(k)
		b.WriteByte(':')
		b.Write(m.Value)
	}
	b.WriteByte('}')
	var out bytes.Buffer
	if err := json.Indent(&out, b.Bytes(), "", "  "); err != nil {
		return nil, err
	}
	out.WriteByte('\n')
	return out.Bytes(), nil
}

// mergeJSONServer sets mcpServers.agentmsg in a JSON settings file (Claude
// Code's .mcp.json, Gemini CLI's settings.json), keeping every other
// member and their order.
func mergeJSONServer(old []byte, e mcpServerEntry, _ bool) ([]byte, error) {
	top, err := parseJSONObject(old)
	if err != nil {
		return nil, err
	}
	var servers []jsonMember
	for _, m := range top {
		if m.Key == "mcpServers" {
			if servers, err = parseJSONObject(m.Value); err != nil {
				return nil, fmt.Errorf("mcpServers: %w", err)
			}
		}
	}
	v, err := json.Marshal(e)
	if err != nil {
		return nil, err
	}
	sv, err := encodeJSONObject(setJSONMember(servers, "agentmsg", v))
	if err != nil {
		return nil, err
	}
	return encodeJSONObject(setJSONMember(top, "mcpServers", sv))
}

// agentmsgTable matches a TOML table header of the agentmsg server or one
// of its sub-tables ([mcp_servers.agentmsg.env]).
var (
	agentmsgTable = regexp.MustCompile(`^\s*\[\s*mcp_servers\s*\.\s*("agentmsg"|agentmsg)\s*(\.[^\]]*)?\]\s*(#.*)?$`)
	anyTable      = regexp.MustCompile(`^\s*\[`)
)

// mergeTOMLServer sets [mcp_servers.agentmsg] in Codex's config.toml. It
// edits the text, so that comments and the order of everything else stay:
// the old agentmsg tables are cut out and the new one appended. The result
// must parse, and hold the other settings unchanged, or nothing is written.
func mergeTOMLServer(old []byte, e mcpServerEntry, orchestrator bool) ([]byte, error) {
	var before map[string]any
	if _, err := toml.Decode(string(old), &before); err != nil {
		return nil, fmt.Errorf("the file is not valid TOML: %w", err)
	}
	var kept []string
	skipping := false
	text := strings.TrimRight(string(old), "\n")
	if text != "" {
		for _, line := range strings.Split(text, "\n") {
			switch {
			case agentmsgTable.MatchString(line):
				skipping = true
				continue
			case anyTable.MatchString(line):
				skipping = false
			}
			if !skipping {
				kept = append(kept, line)
			}
		}
	}
	var b strings.Builder
	if body := strings.TrimRight(strings.Join(kept, "\n"), "\n"); body != "" {
		b.WriteString(body)
		b.WriteString("\n\n")
	}
	b.WriteString("[mcp_servers.agentmsg]\n")
	fmt.Fprintf(&b, "command = %s\n", tomlString(e.Command))
	quoted := make([]string, len(e.Args))
	for i, a := range e.Args {
		quoted[i] = tomlString(a)
	}
	fmt.Fprintf(&b, "args = [%s]\n", strings.Join(quoted, ", "))
	if len(e.Env) > 0 {
		keys := make([]string, 0, len(e.Env))
		for k := range e.Env {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		pairs := make([]string, len(keys))
		for i, k := range keys {
			pairs[i] = k + " = " + tomlString(e.Env[k])
		}
		fmt.Fprintf(&b, "env = { %s }\n", strings.Join(pairs, ", "))
	}
	// Codex ends a tool call after 60 s by default: wait_for_message may
	// wait 120 s, and a workflow up to an hour.
	limit := 180
	if orchestrator {
		limit = 3660
	}
	fmt.Fprintf(&b, "tool_timeout_sec = %d\n", limit)
	out := []byte(b.String())

	var after map[string]any
	if _, err := toml.Decode(string(out), &after); err != nil {
		return nil, fmt.Errorf("the merged file would not be valid TOML (an agentmsg entry written in another form?): %w", err)
	}
	servers, _ := after["mcp_servers"].(map[string]any)
	if servers == nil || servers["agentmsg"] == nil {
		return nil, errors.New("the merged file does not hold mcp_servers.agentmsg")
	}
	// Everything but our entry must be as it was.
	strip := func(m map[string]any) map[string]any {
		c := map[string]any{}
		for k, v := range m {
			c[k] = v
		}
		if s, ok := c["mcp_servers"].(map[string]any); ok {
			s2 := map[string]any{}
			for k, v := range s {
				if k != "agentmsg" {
					s2[k] = v
				}
			}
			c["mcp_servers"] = s2
			if len(s2) == 0 {
				delete(c, "mcp_servers")
			}
		}
		return c
	}
	if !reflect.DeepEqual(strip(before), strip(after)) {
		return nil, errors.New("merging would change other settings (an agentmsg entry written in another form?)")
	}
	return out, nil
}

// tomlString is s as a TOML basic string.
func tomlString(s string) string {
	var b strings.Builder
	b.WriteByte('"')
	for _, r := range s {
		switch {
		case r == '"' || r == '\\':
			b.WriteByte('\\')
			b.WriteRune(r)
		case r == '\n':
			b.WriteString(`\n`)
		case r == '\t':
			b.WriteString(`\t`)
		case r < 0x20 || r == 0x7f:
			fmt.Fprintf(&b, `\u%04X`, r)
		default:
			b.WriteRune(r)
		}
	}
	b.WriteByte('"')
	return b.String()
}
