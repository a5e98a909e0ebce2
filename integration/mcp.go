package integration

import (
	"bytes"
	"errors"
	"fmt"
	"reflect"
	"regexp"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/BurntSushi/toml"
)

// MCPServer is the entry that makes a CLI start agentmsg's MCP server.
type MCPServer struct {
	Command string            `json:"command"`
	Args    []string          `json:"args"`
	Env     map[string]string `json:"env,omitempty"`
}

// MCPInstall asks for agentmsg's MCP server in one CLI's settings.
type MCPInstall struct {
	CLI       string
	Dir       string // for a file in the project
	Home      string // for a file in the home directory (default $HOME)
	LookupEnv func(string) (string, bool)
	Server    MCPServer
	// Orchestrator: the server has the orchestrator's tools, whose calls
	// may last up to an hour (Codex is told a longer tool timeout).
	Orchestrator bool
	Print        bool // only report the file as it would be
	Now          time.Time
}

// InstallMCP sets agentmsg's entry in the CLI's MCP settings (an earlier
// agentmsg entry is replaced), leaving everything else as it was.
func InstallMCP(r MCPInstall) (Report, error) {
	cli, ok := Lookup(r.CLI)
	if !ok || cli.MCP == nil {
		return Report{}, fmt.Errorf("%w %q", ErrUnknownCLI, r.CLI)
	}
	path, err := cli.MCP.Locate(r.Dir, r.Home, r.LookupEnv)
	if err != nil {
		return Report{}, err
	}
	merge := mergeJSONServer
	if cli.MCP.Format == TOML {
		merge = mergeTOMLServer
	}
	rep, err := install(cli.Name, path, func(old []byte) ([]byte, error) {
		return merge(old, r.Server, r.Orchestrator)
	}, r.Print, r.Now)
	var me *MergeError
	if errors.As(err, &me) {
		snippet, _ := merge(nil, r.Server, r.Orchestrator)
		me.Snippet = string(snippet)
	}
	rep.Note = cli.MCPNote
	return rep, err
}

// mergeJSONServer sets mcpServers.agentmsg in a JSON settings file (Claude
// Code's .mcp.json, Gemini CLI's and Qwen Code's settings.json), keeping
// every other byte.
func mergeJSONServer(old []byte, e MCPServer, _ bool) ([]byte, error) {
	doc, err := parseJSONDoc(old)
	if err != nil {
		return nil, err
	}
	servers := doc.lookup("mcpServers")
	switch {
	case servers == nil:
		err = doc.set(doc.root, "mcpServers", map[string]any{"agentmsg": e})
	case servers.kind != '{':
		return nil, errors.New(`"mcpServers" is not an object`)
	default:
		err = doc.set(servers, "agentmsg", e)
	}
	if err != nil {
		return nil, err
	}
	return doc.out(), nil
}

// agentmsgTable matches a TOML table header of the agentmsg server or one
// of its sub-tables ([mcp_servers.agentmsg.env]).
var (
	agentmsgTable = regexp.MustCompile(`^\s*\[\s*mcp_servers\s*\.\s*("agentmsg"|agentmsg)\s*(\.[^\]]*)?\]\s*(#.*)?$`)
	anyTable      = regexp.MustCompile(`^\s*\[`)
)

// codexPassEnv are the variables Codex passes on to agentmsg's MCP server:
// the tmux session it runs in, and where agentmsg keeps its state. The
// runtime directories too: the pane locks of a server whose socket sits in
// a shared directory (-S /tmp/x) live under XDG_RUNTIME_DIR, else TMPDIR
// (lock.ForServer), and a server locking elsewhere than the senders could
// type over them (Codex 0.169 passes TMPDIR of its own accord,
// e2e/mcplive; named here so that it does not rest on that).
var codexPassEnv = []string{
	"TMUX", "TMUX_PANE", "TMUX_TMPDIR",
	"AGENTMSG_HOME", "AGENTMSG_TMUX", "AGENTMSG_SOCKET", "AGENTMSG_SOCKET_NAME", "AGENTMSG_TEAM", "AGENTMSG_FROM",
	"XDG_CONFIG_HOME", "XDG_STATE_HOME", "XDG_RUNTIME_DIR", "TMPDIR",
}

// mergeTOMLServer sets [mcp_servers.agentmsg] in Codex's config.toml. It
// edits the text, so that every byte a person wrote stays (comments, blank
// lines, order, line ends): agentmsg's table is rewritten where it stands
// (appended when there is none) and its sub-tables are cut out. The result
// must parse, and hold the other settings unchanged, or nothing is written.
func mergeTOMLServer(old []byte, e MCPServer, orchestrator bool) ([]byte, error) {
	var before map[string]any
	if _, err := toml.Decode(string(old), &before); err != nil {
		return nil, fmt.Errorf("the file is not valid TOML: %w", err)
	}
	nl := "\n"
	if bytes.Contains(old, []byte("\r\n")) {
		nl = "\r\n"
	}
	body := strings.ReplaceAll(codexEntry(e, orchestrator), "\n", nl)
	lines := splitLines(string(old))
	tables := agentmsgTables(lines)
	var out []byte
	if len(tables) == 0 {
		out = []byte(string(old) + separation(string(old), nl) + "[mcp_servers.agentmsg]" + nl + body)
	} else {
		out = []byte(tables.replace(lines, nl, body))
	}

	var after map[string]any
	if _, err := toml.Decode(string(out), &after); err != nil {
		return nil, fmt.Errorf("the merged file would not be valid TOML (an agentmsg entry written in another form?): %w", err)
	}
	servers, _ := after["mcp_servers"].(map[string]any)
	if servers == nil || servers["agentmsg"] == nil {
		return nil, errors.New("the merged file does not hold mcp_servers.agentmsg")
	}
	if !reflect.DeepEqual(withoutAgentmsg(before), withoutAgentmsg(after)) {
		return nil, errors.New("merging would change other settings (an agentmsg entry written in another form?)")
	}
	return out, nil
}

// approveComment is the comment agentmsg writes in its own table; a
// rewrite drops it and writes it anew, and keeps every other comment.
const approveComment = "# agentmsg's tools run without asking (agents message each other unattended)"

// codexEntry is the inside of agentmsg's table, each line ending in "\n".
func codexEntry(e MCPServer, orchestrator bool) string {
	var b strings.Builder
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
	// Codex gives an MCP server only a few variables of its own (HOME,
	// PATH, LANG, TERM, SHELL, seen with 0.169): without these the server
	// cannot tell which tmux session, so which agent, it serves, nor find
	// the mailbox and server the person chose.
	quoted = make([]string, len(codexPassEnv))
	for i, v := range codexPassEnv {
		quoted[i] = tomlString(v)
	}
	fmt.Fprintf(&b, "env_vars = [%s]\n", strings.Join(quoted, ", "))
	// Codex asks a person before every MCP tool call unless told not to:
	// an agent messaging unattended would stop at its first call.
	b.WriteString(approveComment + "\n")
	b.WriteString("default_tools_approval_mode = \"approve\"\n")
	// Codex ends a tool call after 60 s by default: wait_for_message may
	// wait 120 s, and a workflow up to an hour.
	limit := 180
	if orchestrator {
		limit = 3660
	}
	fmt.Fprintf(&b, "tool_timeout_sec = %d\n", limit)
	return b.String()
}

// splitLines cuts text into lines that keep their line ends.
func splitLines(text string) []string {
	var lines []string
	for text != "" {
		i := strings.IndexByte(text, '\n') + 1
		if i == 0 {
			i = len(text)
		}
		lines = append(lines, text[:i])
		text = text[i:]
	}
	return lines
}

// separation is what goes between a file's text and a table appended to
// it: a blank line, unless the text ends in one.
func separation(text, nl string) string {
	switch {
	case text == "", strings.HasSuffix(text, "\n\n"), strings.HasSuffix(text, "\n\r\n"):
		return ""
	case strings.HasSuffix(text, "\n"):
		return nl
	}
	return nl + nl
}

// tomlTable is one of agentmsg's tables: lines [start, end), from its
// header to its last line with a setting. The comments and blank lines
// after that belong to what follows.
type tomlTable struct {
	start, end int
	sub        bool // [mcp_servers.agentmsg.env] and the like
}

type tomlTables []tomlTable

// agentmsgTables are the tables of agentmsg's server in lines.
func agentmsgTables(lines []string) tomlTables {
	var ts tomlTables
	for i := 0; i < len(lines); i++ {
		m := agentmsgTable.FindStringSubmatch(strings.TrimRight(lines[i], "\r\n"))
		if m == nil {
			continue
		}
		t := tomlTable{start: i, end: i + 1, sub: m[2] != ""}
		for j := i + 1; j < len(lines) && !anyTable.MatchString(lines[j]); j++ {
			if !blankOrComment(lines[j]) {
				t.end = j + 1
			}
		}
		ts = append(ts, t)
		i = t.end - 1
	}
	return ts
}

// replace is lines with agentmsg's table rewritten where the first of ts
// stands, and the others cut out.
func (ts tomlTables) replace(lines []string, nl, body string) string {
	var b strings.Builder
	next := 0
	for k, t := range ts {
		b.WriteString(strings.Join(lines[next:t.start], ""))
		if k == 0 {
			b.WriteString(ts.rewrite(lines, nl, body))
		}
		next = t.end
	}
	b.WriteString(strings.Join(lines[next:], ""))
	return b.String()
}

// rewrite is agentmsg's table as it will stand in place of the first of
// ts: the person's own header line when there is one, the comments they
// wrote in any of agentmsg's tables, then body.
func (ts tomlTables) rewrite(lines []string, nl, body string) string {
	header := "[mcp_servers.agentmsg]" + nl
	if i := slices.IndexFunc(ts, func(t tomlTable) bool { return !t.sub }); i >= 0 {
		header = lineWithEnd(lines[ts[i].start], nl)
	}
	var comments strings.Builder
	for _, t := range ts {
		for _, l := range lines[t.start+1 : t.end] {
			if c := strings.TrimSpace(l); strings.HasPrefix(c, "#") && c != approveComment {
				comments.WriteString(l)
			}
		}
	}
	return header + comments.String() + body
}

// lineWithEnd is line ending in a line end (the last line of a file may
// have none).
func lineWithEnd(line, nl string) string {
	if strings.HasSuffix(line, "\n") {
		return line
	}
	return line + nl
}

func blankOrComment(line string) bool {
	c := strings.TrimSpace(line)
	return c == "" || strings.HasPrefix(c, "#")
}

// withoutAgentmsg is a decoded config.toml without mcp_servers.agentmsg:
// everything but agentmsg's entry must survive a merge as it was.
func withoutAgentmsg(m map[string]any) map[string]any {
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
