package integration

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"sort"
	"strings"
	"syscall"
	"time"

	"github.com/BurntSushi/toml"

	"github.com/agentmsg/agentmsg/internal/safedir"
)

// MCPServer is the entry that makes a CLI start agentmsg's MCP server.
type MCPServer struct {
	Command string            `json:"command"`
	Args    []string          `json:"args"`
	Env     map[string]string `json:"env,omitempty"`
}

// MCPHTTP is the entry that points a CLI at the daemon's MCP endpoint
// (agentmsg serve, Streamable HTTP over TCP), where who the caller is
// comes from the token it sends.
type MCPHTTP struct {
	URL string
	// Token is the one agent's token, written into the entry: the file is
	// that agent's alone. Empty: the entry refers to the environment
	// variable TokenEnv, which each agent's own environment holds.
	Token    string
	TokenEnv string
}

// MCPInstall asks for agentmsg's MCP server in one CLI's settings.
type MCPInstall struct {
	CLI       string
	Dir       string // for a file in the project
	Home      string // for a file in the home directory (default $HOME)
	LookupEnv func(string) (string, bool)
	Server    MCPServer
	// HTTP, when set, is written instead of Server.
	HTTP *MCPHTTP
	// Orchestrator: the server has the orchestrator's tools, whose calls
	// may last up to an hour (Codex is told a longer tool timeout).
	Orchestrator bool
	Print        bool // only report the file as it would be
	Now          time.Time
}

// MCPReport is what an install did, and the tokens of the agentmsg
// entries it replaced (to be revoked: the file no longer holds them).
type MCPReport struct {
	Report
	Replaced []string `json:"-"`
}

// ErrNotYours is a file, or the directory it is in, that another user
// owns or may write to: no secret is written there.
var ErrNotYours = errors.New("not yours alone")

// checkSecretHome refuses to put a token in path when the file it leads
// to (through links), or its directory, is another user's or open to
// other users' writes: they could read the token, or swap the file for
// one they can read.
func checkSecretHome(path string) error {
	target, err := followLinks(path)
	if err != nil {
		return err
	}
	if err := safedir.CheckFollow(filepath.Dir(target)); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("%w: %s would hold a token, in a directory that %w; nothing was written", ErrNotYours, path, err)
	}
	fi, err := os.Lstat(target)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	if st, ok := fi.Sys().(*syscall.Stat_t); ok && int(st.Uid) != os.Geteuid() {
		return fmt.Errorf("%w: %s would hold a token, but %s belongs to uid %d; nothing was written", ErrNotYours, path, target, st.Uid)
	}
	return nil
}

// InstallMCP sets agentmsg's entry in the CLI's MCP settings (an earlier
// agentmsg entry is replaced), leaving everything else as it was. A new
// file that will hold a token is made readable by its owner only.
func InstallMCP(r MCPInstall) (MCPReport, error) {
	cli, ok := Lookup(r.CLI)
	if !ok || cli.MCP == nil {
		return MCPReport{}, fmt.Errorf("%w %q", ErrUnknownCLI, r.CLI)
	}
	path, err := cli.MCP.Locate(r.Dir, r.Home, r.LookupEnv)
	if err != nil {
		return MCPReport{}, err
	}
	merge := func(old []byte) ([]byte, error) { return mergeJSONServer(old, r.jsonEntry(cli)) }
	if cli.MCP.Format == TOML {
		merge = func(old []byte) ([]byte, error) { return mergeTOMLServer(old, r.codexEntry()) }
	}
	fresh := fs.FileMode(newMode)
	if r.HTTP != nil && r.HTTP.Token != "" {
		fresh = secretMode
		if !r.Print {
			if err := checkSecretHome(path); err != nil {
				return MCPReport{}, err
			}
		}
	}
	// The tokens of every version of the file merged into: once the write
	// stands, agentmsg's entry replaced each of them.
	held := map[string]bool{}
	rep, err := install(cli.Name, path, func(old []byte) ([]byte, error) {
		if t := entryToken(cli.MCP.Format, old); t != "" {
			held[t] = true
		}
		return merge(old)
	}, fresh, r.Print, r.Now)
	var me *MergeError
	if errors.As(err, &me) {
		snippet, _ := merge(nil)
		me.Snippet = string(snippet)
	}
	rep.Note = cli.MCPNote
	out := MCPReport{Report: rep}
	if err == nil && rep.Written {
		for t := range held {
			if r.HTTP == nil || t != r.HTTP.Token {
				out.Replaced = append(out.Replaced, t)
			}
		}
	}
	return out, err
}

// jsonEntry is the value of mcpServers.agentmsg in cli's JSON settings.
func (r MCPInstall) jsonEntry(cli CLI) any {
	if r.HTTP == nil {
		return r.Server
	}
	e := jsonHTTPServer{Type: cli.HTTP.Type, Headers: map[string]string{"Authorization": r.HTTP.bearer("${" + r.HTTP.TokenEnv + "}")}}
	if cli.HTTP.URLKey == "httpUrl" {
		e.HTTPURL = r.HTTP.URL
	} else {
		e.URL = r.HTTP.URL
	}
	return e
}

// jsonHTTPServer is an HTTP server's entry in a JSON settings file, its
// members in the order people write them.
type jsonHTTPServer struct {
	Type    string            `json:"type,omitempty"`
	URL     string            `json:"url,omitempty"`
	HTTPURL string            `json:"httpUrl,omitempty"`
	Headers map[string]string `json:"headers"`
}

// bearer is the Authorization header's value: the token, or ref, which
// names the variable that holds it.
func (h MCPHTTP) bearer(ref string) string {
	if h.Token != "" {
		return "Bearer " + h.Token
	}
	return "Bearer " + ref
}

// entryToken is the token agentmsg's entry in a settings file's content
// holds (an HTTP entry's Authorization header), "" when none.
func entryToken(f Format, data []byte) string {
	var auth string
	if f == TOML {
		var doc struct {
			Servers map[string]struct {
				Headers map[string]string `toml:"http_headers"`
			} `toml:"mcp_servers"`
		}
		if _, err := toml.Decode(string(data), &doc); err != nil {
			return ""
		}
		auth = doc.Servers["agentmsg"].Headers["Authorization"]
	} else {
		doc, err := parseJSONDoc(data)
		if err != nil {
			return ""
		}
		n := doc.lookup("mcpServers", "agentmsg", "headers", "Authorization")
		if n == nil || json.Unmarshal(doc.plain[n.start:n.end], &auth) != nil {
			return ""
		}
	}
	token, ok := strings.CutPrefix(auth, "Bearer ")
	if !ok || strings.Contains(token, "$") {
		return "" // none, or a variable's name
	}
	return token
}

// mergeJSONServer sets mcpServers.agentmsg to entry in a JSON settings
// file (Claude Code's .mcp.json, Gemini CLI's and Qwen Code's
// settings.json), keeping every other byte.
func mergeJSONServer(old []byte, entry any) ([]byte, error) {
	doc, err := parseJSONDoc(old)
	if err != nil {
		return nil, err
	}
	servers := doc.lookup("mcpServers")
	switch {
	case servers == nil:
		err = doc.set(doc.root, "mcpServers", map[string]any{"agentmsg": entry})
	case servers.kind != '{':
		return nil, errors.New(`"mcpServers" is not an object`)
	default:
		err = doc.set(servers, "agentmsg", entry)
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

// mergeTOMLServer sets [mcp_servers.agentmsg] in Codex's config.toml, body
// being the inside of its table (codexEntry). It edits the text, so that every byte a person wrote stays (comments, blank
// lines, order, line ends): agentmsg's table is rewritten where it stands
// (appended when there is none) and its sub-tables are cut out. The result
// must parse, and hold the other settings unchanged, or nothing is written.
func mergeTOMLServer(old []byte, body string) ([]byte, error) {
	var before map[string]any
	if _, err := toml.Decode(string(old), &before); err != nil {
		return nil, fmt.Errorf("the file is not valid TOML: %w", err)
	}
	nl := "\n"
	if bytes.Contains(old, []byte("\r\n")) {
		nl = "\r\n"
	}
	body = strings.ReplaceAll(body, "\n", nl)
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

// codexEntry is the inside of agentmsg's table in Codex's config.toml,
// each line ending in "\n".
func (r MCPInstall) codexEntry() string {
	var b strings.Builder
	if h := r.HTTP; h != nil {
		fmt.Fprintf(&b, "url = %s\n", tomlString(h.URL))
		if h.Token != "" {
			fmt.Fprintf(&b, "http_headers = { Authorization = %s }\n", tomlString(h.bearer("")))
		} else {
			// Codex 0.169 sends this variable's value as the bearer
			// token.
			fmt.Fprintf(&b, "bearer_token_env_var = %s\n", tomlString(h.TokenEnv))
		}
	} else {
		codexCommand(&b, r.Server)
	}
	// Codex asks a person before every MCP tool call unless told not to:
	// an agent messaging unattended would stop at its first call.
	b.WriteString(approveComment + "\n")
	b.WriteString("default_tools_approval_mode = \"approve\"\n")
	// Codex ends a tool call after 60 s by default: wait_for_message may
	// wait 120 s, and a workflow up to an hour.
	limit := 180
	if r.Orchestrator {
		limit = 3660
	}
	fmt.Fprintf(&b, "tool_timeout_sec = %d\n", limit)
	return b.String()
}

// codexCommand writes the settings that make Codex start agentmsg's
// server e.
func codexCommand(b *strings.Builder, e MCPServer) {
	fmt.Fprintf(b, "command = %s\n", tomlString(e.Command))
	quoted := make([]string, len(e.Args))
	for i, a := range e.Args {
		quoted[i] = tomlString(a)
	}
	fmt.Fprintf(b, "args = [%s]\n", strings.Join(quoted, ", "))
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
		fmt.Fprintf(b, "env = { %s }\n", strings.Join(pairs, ", "))
	}
	// Codex gives an MCP server only a few variables of its own (HOME,
	// PATH, LANG, TERM, SHELL, seen with 0.169): without these the server
	// cannot tell which tmux session, so which agent, it serves, nor find
	// the mailbox and server the person chose. (An HTTP entry may not
	// have env_vars: Codex 0.169 refuses it, "not supported for
	// streamable_http".)
	quoted = make([]string, len(codexPassEnv))
	for i, v := range codexPassEnv {
		quoted[i] = tomlString(v)
	}
	fmt.Fprintf(b, "env_vars = [%s]\n", strings.Join(quoted, ", "))
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
