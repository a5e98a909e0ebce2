// Package integration knows the agent CLIs agentmsg plugs into: where each
// keeps its settings and in which format, which hooks it has and what
// agentmsg's hooks run there, and how it registers an MCP server. One
// registry entry per CLI holds all of it.
//
// It merges agentmsg's entries into those files the way a person would
// edit them: every byte it does not change stays as it was (key order,
// indentation, every comment and blank line), what it adds follows the
// file's own indentation, the old file is copied to a timestamped backup
// first, and the change comes back as a diff. cmd/ only parses flags and
// prints.
package integration

import (
	"errors"
	"path/filepath"
	"slices"
)

// Format is a settings file's format.
type Format int

const (
	JSON Format = iota
	TOML
)

// Base is the directory a settings file's path is relative to.
type Base int

const (
	Project Base = iota // the project the agent works in
	Home                // the user's home directory
)

// File is where a CLI keeps one kind of setting.
type File struct {
	Base   Base
	Path   string // relative to Base, slash-separated: ".claude/settings.json"
	Format Format
	// EnvDir names a variable that, when set and no home directory was
	// given, is the directory that holds the file instead of the first
	// element of Path: CODEX_HOME stands for ~/.codex.
	EnvDir string
}

// Hooks are a CLI's hook events that agentmsg uses.
type Hooks struct {
	File File
	// Submit runs with each prompt the CLI really submits (a queued one
	// when it is sent): agentmsg's hook records the message id the prompt
	// starts with, a receipt that confirms delivery.
	Submit string
	// TurnEnd runs when a turn ends: agentmsg's hook delivers the
	// messages kept while the agent was busy (agentmsg deliver).
	TurnEnd string
	// ReplyJSON: the CLI reads a hook's stdout as JSON, so the hooks
	// print "{}" (Claude Code would add plain stdout to the prompt).
	ReplyJSON bool
	// Note is what a person must still do before the CLI runs the hooks.
	Note string
}

// CLI is one agent CLI.
type CLI struct {
	Name  string // as on the command line: "claude"
	Title string // "Claude Code"
	Hooks *Hooks // nil: no hook agentmsg can use
	// MCP is where agentmsg's MCP server is registered: mcpServers.agentmsg
	// in a JSON file, [mcp_servers.agentmsg] in a TOML one.
	MCP *File
	// MCPNote is what a person must still do before an agent of this CLI
	// can use the tools unattended.
	MCPNote string
	// HTTP is how a JSON settings file names a Streamable HTTP server
	// (Codex's TOML has its url key).
	HTTP HTTPForm
}

// HTTPForm is how a CLI's JSON settings name an MCP server it reaches
// over Streamable HTTP: {"type": Type, URLKey: URL, "headers": {...}}.
// Each expands ${VAR} in a header's value from its own environment
// (Claude Code 2.1.197, Gemini CLI 0.61, Qwen Code 0.24.4: read in their
// bundles).
type HTTPForm struct {
	URLKey string // "url" or "httpUrl"
	Type   string // "http", or "" for none
}

var registry = []CLI{
	{
		Name: "claude", Title: "Claude Code",
		Hooks: &Hooks{
			File:   File{Base: Project, Path: ".claude/settings.json", Format: JSON},
			Submit: "UserPromptSubmit", TurnEnd: "Stop",
		},
		MCP: &File{Base: Project, Path: ".mcp.json", Format: JSON},
		// Seen live with 2.1.197 (e2e/mcplive).
		MCPNote: `Claude Code asks at its next start whether to use a project's .mcp.json servers, and in its ` +
			`default permission mode before each agentmsg tool call. For agents that message unattended, put ` +
			`"enabledMcpjsonServers": ["agentmsg"] and "permissions": {"allow": ["mcp__agentmsg"]} in the ` +
			`project's .claude/settings.json.`,
		HTTP: HTTPForm{URLKey: "url", Type: "http"},
	},
	{
		Name: "codex", Title: "Codex CLI",
		// hooks.json beside the project's config layer; seen live in
		// 0.169.0: Claude Code's format, the prompt in "prompt".
		Hooks: &Hooks{
			File:   File{Base: Project, Path: ".codex/hooks.json", Format: JSON},
			Submit: "UserPromptSubmit", TurnEnd: "Stop",
			Note: `Codex runs a new or changed hook only once a person has trusted it: at Codex's next start ` +
				`choose "Trust all and continue" (or review them with /hooks). It reads a project's hooks ` +
				`only when the project is trusted.`,
		},
		MCP: &File{Base: Home, Path: ".codex/config.toml", Format: TOML, EnvDir: "CODEX_HOME"},
	},
	{
		Name: "gemini", Title: "Gemini CLI",
		Hooks: &Hooks{
			File:   File{Base: Project, Path: ".gemini/settings.json", Format: JSON},
			Submit: "BeforeAgent", TurnEnd: "AfterAgent", ReplyJSON: true,
			Note: "Gemini CLI runs a project's hooks only in a trusted folder, and warns once when it first sees them.",
		},
		MCP:  &File{Base: Home, Path: ".gemini/settings.json", Format: JSON},
		HTTP: HTTPForm{URLKey: "httpUrl"}, // "url" is SSE there
	},
	{
		Name: "qwen", Title: "Qwen Code",
		// Claude Code's events and format (0.24.4's hook registry).
		Hooks: &Hooks{
			File:   File{Base: Project, Path: ".qwen/settings.json", Format: JSON},
			Submit: "UserPromptSubmit", TurnEnd: "Stop",
			Note: "Qwen Code runs a project's hooks only in a trusted folder.",
		},
		MCP:  &File{Base: Home, Path: ".qwen/settings.json", Format: JSON},
		HTTP: HTTPForm{URLKey: "httpUrl"},
	},
}

// Lookup returns the CLI named name.
func Lookup(name string) (CLI, bool) {
	i := slices.IndexFunc(registry, func(c CLI) bool { return c.Name == name })
	if i < 0 {
		return CLI{}, false
	}
	return registry[i], true
}

// WithHooks are the names of the CLIs that have hooks agentmsg uses.
func WithHooks() []string {
	var out []string
	for _, c := range registry {
		if c.Hooks != nil {
			out = append(out, c.Name)
		}
	}
	return out
}

// WithMCP are the names of the CLIs agentmsg can register its MCP
// server with.
func WithMCP() []string {
	var out []string
	for _, c := range registry {
		if c.MCP != nil {
			out = append(out, c.Name)
		}
	}
	return out
}

// ErrNoHome: a file under the home directory, and none is known.
var ErrNoHome = errors.New("no home directory")

// ErrNoProject: a file under the project, and no project directory given.
var ErrNoProject = errors.New("no project directory")

// Locate is the file's path for the project dir, or the home directory
// (home, else $HOME; f.EnvDir first when home is not given).
func (f File) Locate(dir, home string, lookupEnv func(string) (string, bool)) (string, error) {
	rel := filepath.FromSlash(f.Path)
	if f.Base == Project {
		if dir == "" {
			return "", ErrNoProject
		}
		return filepath.Join(dir, rel), nil
	}
	if home == "" && f.EnvDir != "" {
		if v, ok := lookupEnv(f.EnvDir); ok && v != "" {
			return filepath.Join(v, filepath.Base(rel)), nil
		}
	}
	if home == "" {
		if v, ok := lookupEnv("HOME"); ok && v != "" {
			home = v
		}
	}
	if home == "" {
		return "", ErrNoHome
	}
	return filepath.Join(home, rel), nil
}
