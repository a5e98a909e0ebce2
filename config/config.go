// Package config works out the settings agentmsg runs with. Each key can come
// from four places, lowest precedence first:
//
//	default  built in, see Defaults
//	file     $XDG_CONFIG_HOME/agentmsg/config.toml (XDG_CONFIG_HOME defaults to ~/.config)
//	env      AGENTMSG_<KEY>, e.g. AGENTMSG_READY_TIMEOUT=1m
//	flag     --<key>, e.g. --ready-timeout 1m, applied by cmd through Loaded.Set
//
// Loaded remembers which place each value came from, so that `agentmsg config`
// can say why a value is what it is.
//
// The file is flat and strict, so that a typo fails loudly instead of being
// silently ignored:
//
//	ready_timeout = "45s"  # durations are strings: "250ms", "1m30s"
//	retries = 3            # counts are integers
//	socket_name = "agents"
//	tmux = "/opt/tmux-3.7c/bin/tmux"
//
// Nothing here reads the process environment: callers pass a lookup function
// (os.LookupEnv in production), which keeps tests hermetic.
package config

import (
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"
	"unicode"

	"github.com/BurntSushi/toml"
)

// Settings are the effective values agentmsg runs with.
type Settings struct {
	ReadyTimeout   time.Duration // how long to wait for an agent's input box to be empty and on screen
	ConfirmTimeout time.Duration // how long to wait for proof of submission after each submit
	Retries        int           // extra submit presses when the text is still in the box
	Settle         time.Duration // pause between typing the text and pressing submit
	Repress        time.Duration // press submit again when our text sits in the box this long
	Poll           time.Duration // screen poll interval while waiting
	Concurrency    int           // broadcast deliveries in flight at once
	KeepCount      int           // an inbox keeps at most this many messages (read and done ones go first)
	KeepAge        time.Duration // ...and drops read, done messages older than this
	From           string        // sender name; empty means detect it
	Team           string        // the sender's team, for mailbox commands; empty means detect it
	Socket         string        // tmux -S path
	SocketName     string        // tmux -L name
	Tmux           string        // the tmux binary to run; empty means the first tmux on $PATH
}

// Defaults returns the built-in settings. A delivery's timing is the same
// as delivery.DefaultOptions' (the engine's, for callers without a config
// file); config imports no engine package, so the two are held equal by a
// test in app, which joins them.
func Defaults() Settings {
	return Settings{
		ReadyTimeout:   30 * time.Second,
		ConfirmTimeout: 5 * time.Second,
		Retries:        2,
		Settle:         0, // each agent profile has its own; this only adds to it
		Repress:        500 * time.Millisecond,
		Poll:           10 * time.Millisecond,
		Concurrency:    128,
		KeepCount:      1000,
		KeepAge:        30 * 24 * time.Hour,
	}
}

// ErrInvalid is wrapped by every error Load and Set return, so that cmd can map
// a bad configuration to one exit code.
var ErrInvalid = errors.New("invalid configuration")

type invalidError struct {
	msg   string
	cause error
}

func (e *invalidError) Error() string { return e.msg }

func (e *invalidError) Unwrap() []error {
	if e.cause == nil {
		return []error{ErrInvalid}
	}
	return []error{ErrInvalid, e.cause}
}

func invalidf(format string, args ...any) error {
	return &invalidError{msg: fmt.Sprintf(format, args...)}
}

// Source says where a value came from: "default", "file <path>",
// "env AGENTMSG_READY_TIMEOUT" or "flag --ready-timeout".
type Source string

// SourceDefault marks a built-in value.
const SourceDefault Source = "default"

// FlagSource is the Source cmd passes to Set for the flag of key.
func FlagSource(key string) Source { return Source("flag --" + flagName(key)) }

// layer is the kind of place, without the path or name: "default", "file", "env" or "flag".
func (s Source) layer() string {
	layer, _, _ := strings.Cut(string(s), " ")
	return layer
}

// KeyInfo describes one key, for the cmd layer and the docs.
type KeyInfo struct {
	Key     string // as written in config.toml: "ready_timeout"
	Env     string // "AGENTMSG_READY_TIMEOUT"
	Flag    string // without the dashes: "ready-timeout"
	Default string // formatted like Entry.Value
	Help    string
	Type    string // "duration", "int" or "string", for --help
}

// Entry is one key with its effective value, formatted as a person would write
// it ("30s", "250ms"), and where that value came from.
type Entry struct {
	Key    string
	Value  string
	Source Source
	Help   string
}

// spec is one key. The table below is in the order of the Settings fields,
// which is the documented order of Keys and Entries.
type spec struct {
	key      string
	help     string
	min, max int64               // inclusive bounds: nanoseconds for durations; unused for strings
	field    func(*Settings) any // the pointer this key sets: *time.Duration, *int or *string
}

// maxSettle bounds a pause every message pays before its submit, in the
// settings and in each [profiles.NAME] table.
const maxSettle = 10 * time.Second

var specs = [...]spec{
	{key: "ready_timeout", min: 0, max: int64(24 * time.Hour), field: func(s *Settings) any { return &s.ReadyTimeout },
		help: "how long to wait for an agent's input box to be empty and on screen (at most 24h: past it the message waits in the inbox for deliver)"},
	{key: "confirm_timeout", min: 0, max: int64(10 * time.Minute), field: func(s *Settings) any { return &s.ConfirmTimeout },
		help: "how long to wait for proof of submission after each submit (at most 10m: proof shows within seconds, and the pane stays locked meanwhile)"},
	{key: "retries", min: 0, max: 10, field: func(s *Settings) any { return &s.Retries },
		help: "extra submit presses when the text is still in the box"},
	{key: "settle", min: 0, max: int64(maxSettle), field: func(s *Settings) any { return &s.Settle },
		help: "at least this pause between typing the text and pressing submit (each agent profile has its own: agentmsg doctor shows it; at most " + short(maxSettle) + ": every message pays it, and profiles need under 1s)"},
	{key: "repress", min: 0, max: int64(time.Minute), field: func(s *Settings) any { return &s.Repress },
		help: "press submit again when our text is still in the box this long after a press (while retries last; at most 1m: a press shows within seconds)"},
	// Polling faster than 1ms only burns CPU on tmux round trips.
	{key: "poll", min: int64(time.Millisecond), max: int64(time.Second), field: func(s *Settings) any { return &s.Poll },
		help: "screen poll interval while waiting (at most 1s: a wait can end one interval late)"},
	{key: "concurrency", min: 1, max: 1000, field: func(s *Settings) any { return &s.Concurrency },
		help: "broadcast deliveries in flight at once"},
	{key: "keep_count", min: 1, max: math.MaxInt32, field: func(s *Settings) any { return &s.KeepCount },
		help: "an inbox keeps at most this many messages (never an unread or undelivered one)"},
	{key: "keep_age", min: int64(time.Minute), max: int64(10 * 365 * 24 * time.Hour), field: func(s *Settings) any { return &s.KeepAge },
		help: "an inbox drops read, delivered messages older than this (at most 87600h, ten years: keep_count bounds an inbox anyway)"},
	{key: "from", field: func(s *Settings) any { return &s.From },
		help: "sender name (empty: detect it)"},
	{key: "team", field: func(s *Settings) any { return &s.Team },
		help: "your team, for mailbox commands (empty: detect it)"},
	{key: "socket", field: func(s *Settings) any { return &s.Socket },
		help: "tmux server socket path (tmux -S)"},
	{key: "socket_name", field: func(s *Settings) any { return &s.SocketName },
		help: "tmux server socket name (tmux -L)"},
	{key: "tmux", field: func(s *Settings) any { return &s.Tmux },
		help: "the tmux binary to run, a path or a name on $PATH (empty: the first tmux on $PATH)"},
}

func lookup(key string) (*spec, bool) {
	for i := range specs {
		if specs[i].key == key {
			return &specs[i], true
		}
	}
	return nil, false
}

func knownKeys() string {
	names := make([]string, len(specs))
	for i, sp := range specs {
		names[i] = sp.key
	}
	return strings.Join(names, ", ")
}

func envName(key string) string  { return "AGENTMSG_" + strings.ToUpper(key) }
func flagName(key string) string { return strings.ReplaceAll(key, "_", "-") }

// Keys lists the known keys in the order of the Settings fields.
func Keys() []KeyInfo {
	def := Defaults()
	out := make([]KeyInfo, len(specs))
	for i, sp := range specs {
		out[i] = KeyInfo{Key: sp.key, Env: envName(sp.key), Flag: flagName(sp.key), Default: sp.format(&def), Help: sp.help, Type: sp.typeName()}
	}
	return out
}

func (sp *spec) typeName() string {
	var s Settings
	switch sp.field(&s).(type) {
	case *time.Duration:
		return "duration"
	case *int:
		return "int"
	}
	return "string"
}

func (sp *spec) format(s *Settings) string {
	switch p := sp.field(s).(type) {
	case *time.Duration:
		return p.String()
	case *int:
		return strconv.Itoa(*p)
	default:
		return *p.(*string)
	}
}

func (sp *spec) wantInt() string {
	return fmt.Sprintf("want a whole number from %d to %d", sp.min, sp.max)
}

// parse reads a value as written in the environment or on the command line.
func (sp *spec) parse(s string) (any, error) {
	switch sp.field(&Settings{}).(type) {
	case *time.Duration:
		d, err := time.ParseDuration(strings.TrimSpace(s))
		if err != nil {
			return nil, errors.New("want a duration such as 30s or 250ms")
		}
		return sp.check(d)
	case *int:
		n, err := strconv.ParseInt(strings.TrimSpace(s), 10, 64)
		if err != nil {
			return nil, errors.New(sp.wantInt())
		}
		return sp.check(n)
	default:
		return s, nil
	}
}

// parseTOML is strict about types: `retries = "3"` is probably a mistake, and
// `poll = 10` leaves the unit to a guess.
func (sp *spec) parseTOML(raw any) (any, error) {
	s, isString := raw.(string)
	switch sp.field(&Settings{}).(type) {
	case *time.Duration:
		if !isString {
			return nil, errors.New(`want a duration in quotes, such as "30s" or "250ms"`)
		}
		return sp.parse(s)
	case *int:
		n, ok := raw.(int64)
		if isString {
			return nil, errors.New(sp.wantInt() + ", without quotes")
		}
		if !ok {
			return nil, errors.New(sp.wantInt())
		}
		return sp.check(n)
	default:
		if !isString {
			return nil, errors.New("want a string in quotes")
		}
		return s, nil
	}
}

// check applies the bounds and returns the value in the field's type.
func (sp *spec) check(v any) (any, error) {
	switch v := v.(type) {
	case time.Duration:
		if int64(v) < sp.min {
			return nil, fmt.Errorf("want %v or more", time.Duration(sp.min))
		}
		if int64(v) > sp.max {
			return nil, fmt.Errorf("want %s or less", short(time.Duration(sp.max)))
		}
		return v, nil
	default:
		n := v.(int64)
		if n < sp.min || n > sp.max {
			return nil, errors.New(sp.wantInt())
		}
		return int(n), nil
	}
}

func (sp *spec) store(s *Settings, v any) {
	switch p := sp.field(s).(type) {
	case *time.Duration:
		*p = v.(time.Duration)
	case *int:
		*p = v.(int)
	default:
		*p.(*string) = v.(string)
	}
}

// exclusive names the key that cannot be set together with key, if any.
func exclusive(key string) string {
	switch key {
	case "socket":
		return "socket_name"
	case "socket_name":
		return "socket"
	}
	return ""
}

// Loaded holds the effective settings and where each one came from.
type Loaded struct {
	Settings Settings
	sources  map[string]Source
	// Profiles are the [profiles.NAME] tables of the config file.
	Profiles map[string]ProfileSettings
	// Serve is the [serve] table: the daemon.
	Serve ServeSettings
	// Hosts is the [hosts] table: this machine among many.
	Hosts HostsSettings
	// Panes is the [panes] table: which pane of an agent's session is the
	// agent's, by agent ("alpha/ana", "ralph-7") to a pane choice ("%3",
	// "1.0", a window name).
	Panes map[string]string
	// Alerts is the [alerts] table, DefaultAlerts without one.
	Alerts AlertSettings
}

// Source says where the value of key came from; "" for an unknown key.
func (l *Loaded) Source(key string) Source { return l.sources[key] }

// Clone is a copy of l whose settings can be Set without touching l: a
// struct copy shares the map of sources, and a Set on it wrote into l's
// while others read l (the daemon crashed so: "concurrent map read and
// map write", a request naming its tmux server beside the presence
// announcer). The tables (profiles, panes, alerts) stay shared: Set
// never writes them.
func (l *Loaded) Clone() *Loaded {
	c := *l
	c.sources = maps.Clone(l.sources)
	return &c
}

// Entries lists every key with its value and source, in the order of Keys.
func (l *Loaded) Entries() []Entry {
	out := make([]Entry, len(specs))
	for i := range specs {
		sp := &specs[i]
		out[i] = Entry{Key: sp.key, Value: sp.format(&l.Settings), Source: l.sources[sp.key], Help: sp.help}
	}
	return out
}

// Set parses, validates and records one value. cmd calls it for each flag the
// user gave, with FlagSource(key), after Load; later calls win.
func (l *Loaded) Set(key, value string, src Source) error {
	sp, ok := lookup(key)
	if !ok {
		return invalidf("unknown setting %q; known settings: %s", key, knownKeys())
	}
	v, err := sp.parse(value)
	if err == nil {
		err = l.apply(sp, v, src)
	}
	if err != nil {
		return invalidf("%s: %v", describe(src, key, value), err)
	}
	return nil
}

// describe names a rejected value the way the user wrote it.
func describe(src Source, key, value string) string {
	_, name, _ := strings.Cut(string(src), " ")
	switch src.layer() {
	case "env":
		return fmt.Sprintf("%s=%q", name, value)
	case "flag":
		return fmt.Sprintf("%s %q", name, value)
	}
	return fmt.Sprintf("%s = %q from %s", key, value, src)
}

func (l *Loaded) apply(sp *spec, v any, src Source) error {
	// tmux reaches a server by socket path (-S) or by name (-L), never both.
	// Both in one place is a mistake; across places the higher one wins and
	// clears the other, so that --socket-name works with a socket in the file.
	if other := exclusive(sp.key); other != "" && v != "" {
		osp, _ := lookup(other)
		if cur := osp.format(&l.Settings); cur != "" {
			if l.sources[other].layer() == src.layer() {
				return fmt.Errorf("conflicts with %s = %q from %s; tmux takes a socket path (socket, -S) or a socket name (socket_name, -L), not both, so remove one",
					other, cur, l.sources[other])
			}
			osp.store(&l.Settings, "")
			l.sources[other] = src
		}
	}
	sp.store(&l.Settings, v)
	if l.sources == nil {
		l.sources = make(map[string]Source, len(specs))
	}
	l.sources[sp.key] = src
	return nil
}

// DefaultPath is $XDG_CONFIG_HOME/agentmsg/config.toml, falling back to
// $HOME/.config/agentmsg/config.toml. It is "" when neither variable is usable,
// and then Load reads no file.
func DefaultPath(lookupEnv func(string) (string, bool)) string {
	// The XDG base directory spec says a relative XDG_CONFIG_HOME is to be ignored.
	if dir, ok := lookupEnv("XDG_CONFIG_HOME"); ok && filepath.IsAbs(dir) {
		return filepath.Join(dir, "agentmsg", "config.toml")
	}
	if home, ok := lookupEnv("HOME"); ok && home != "" {
		return filepath.Join(home, ".config", "agentmsg", "config.toml")
	}
	return ""
}

// Load applies the defaults, then the file at path if it exists, then the
// AGENTMSG_* variables found through lookupEnv (os.LookupEnv in production).
// path "" means DefaultPath(lookupEnv). A missing file is fine; an unreadable
// or invalid one is an error naming the file and, where it has one, the line.
// An empty variable counts as unset, as `AGENTMSG_RETRIES= agentmsg ...` is
// how people switch one off for a single run.
func Load(lookupEnv func(string) (string, bool), path string) (*Loaded, error) {
	if lookupEnv == nil {
		lookupEnv = func(string) (string, bool) { return "", false }
	}
	if path == "" {
		path = DefaultPath(lookupEnv)
	}
	l := &Loaded{Settings: Defaults(), sources: make(map[string]Source, len(specs)), Alerts: DefaultAlerts()}
	for _, sp := range specs {
		l.sources[sp.key] = SourceDefault
	}
	if path != "" {
		if err := l.loadFile(path); err != nil {
			return nil, err
		}
	}
	for _, sp := range specs {
		name := envName(sp.key)
		if v, ok := lookupEnv(name); ok && v != "" {
			if err := l.Set(sp.key, v, Source("env "+name)); err != nil {
				return nil, err
			}
		}
	}
	return l, nil
}

// fileValue lets each key be checked inside the TOML decoder, so that a
// rejected value comes back with the line it is on.
type fileValue struct{ check func(raw any) error }

func (v fileValue) UnmarshalTOML(raw any) error { return v.check(raw) }

func (l *Loaded) loadFile(path string) error {
	data, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return &invalidError{msg: fmt.Sprintf("cannot read config file: %v", err), cause: err}
	}
	var top map[string]toml.Primitive
	md, err := toml.Decode(string(data), &top)
	if err != nil {
		var pe toml.ParseError
		if errors.As(err, &pe) {
			return invalidf("%s:%d: not valid TOML: %s", path, pe.Position.Line, pe.Message)
		}
		return invalidf("%s: not valid TOML: %v", path, err)
	}
	src := Source("file " + path)
	for _, k := range md.Keys() {
		if len(k) != 1 {
			continue // inside a table, whose own key is reported as unknown
		}
		key := k[0]
		if key == "profiles" || key == "panes" || key == "alerts" || key == "serve" || key == "hosts" {
			continue // below
		}
		sp, known := lookup(key)
		var rejected error // why the value was refused, as opposed to a decoder failure
		var value any
		err := md.PrimitiveDecode(top[key], fileValue{check: func(raw any) error {
			value = raw
			if !known {
				rejected = errors.New("unknown key")
				return rejected
			}
			v, err := sp.parseTOML(raw)
			if err == nil {
				err = l.apply(sp, v, src)
			}
			rejected = err
			return err
		}})
		if err == nil {
			continue
		}
		if rejected == nil {
			return invalidf("%s: %v", path, err)
		}
		at := path
		var pe toml.ParseError
		if errors.As(err, &pe) && pe.Position.Line > 0 {
			at = fmt.Sprintf("%s:%d", path, pe.Position.Line)
		}
		if !known {
			hint := ""
			if alt := strings.ReplaceAll(key, "-", "_"); alt != key {
				if _, ok := lookup(alt); ok {
					hint = fmt.Sprintf(" (did you mean %s?)", alt)
				}
			}
			return invalidf("unknown key %q in %s%s; known keys: %s", key, at, hint, knownKeys())
		}
		return invalidf("%s = %s in %s: %v", key, literal(value), at, rejected)
	}
	if prim, ok := top["serve"]; ok {
		if err := l.loadServe(md, prim, path); err != nil {
			return err
		}
	}
	if prim, ok := top["hosts"]; ok {
		if err := l.loadHosts(md, prim, path); err != nil {
			return err
		}
	}
	if prim, ok := top["panes"]; ok {
		if err := l.loadPanes(md, prim, path); err != nil {
			return err
		}
	}
	if prim, ok := top["alerts"]; ok {
		if err := l.loadAlerts(md, prim, path); err != nil {
			return err
		}
	}
	// [profiles.NAME] tables: "profiles" itself is implicit, so it is
	// not among md.Keys().
	if prim, ok := top["profiles"]; ok {
		return l.loadProfiles(md, prim, path)
	}
	return nil
}

// loadPanes reads the [panes] table: "team/agent" (or "ralph-ID") = a
// pane choice. The names are checked where they are used, with the rest
// of a target; here only that each is a plain string a person could mean.
func (l *Loaded) loadPanes(md toml.MetaData, prim toml.Primitive, path string) error {
	var panes map[string]string
	if err := md.PrimitiveDecode(prim, &panes); err != nil {
		return invalidf("%s: [panes]: want \"team/agent\" = \"WINDOW.PANE\" (or a pane id %%N, or a window name): %v", path, err)
	}
	for agent, pane := range panes {
		if strings.TrimSpace(pane) == "" || strings.ContainsFunc(pane+agent, unicode.IsControl) {
			return invalidf("%s: [panes] %q = %q: want a pane such as \"1.0\", \"%%3\" or a window name", path, agent, pane)
		}
	}
	l.Panes = panes
	return nil
}

// ProfileSettings is one [profiles.NAME] table of the config file: changes
// to a built-in agent profile, or a new profile based on another.
type ProfileSettings struct {
	Base     string   `toml:"base" json:"base,omitempty"`         // the profile this one starts from (a new one)
	Commands []string `toml:"commands" json:"commands,omitempty"` // foreground commands that identify it
	Settle   string   `toml:"settle" json:"settle,omitempty"`     // a duration: "150ms"
	Queues   *bool    `toml:"queues" json:"queues,omitempty"`
	// BracketedPaste: the program turns bracketed paste on (a multi-line
	// message is pasted whole, not as a pointer line).
	BracketedPaste *bool `toml:"bracketed_paste" json:"bracketed_paste,omitempty"`
	FoldBytes      *int  `toml:"fold_bytes" json:"fold_bytes,omitempty"`
	FoldLines      *int  `toml:"fold_lines" json:"fold_lines,omitempty"`
	// Prompt: a regular expression for the prompt of a program that reads
	// lines (a REPL, a read loop), matched at the start of the last row.
	Prompt string `toml:"prompt" json:"prompt,omitempty"`
	// Regular expressions matched against the bottom rows of the screen.
	Ready       string `toml:"ready" json:"ready,omitempty"`
	Busy        string `toml:"busy" json:"busy,omitempty"`
	Dialog      string `toml:"dialog" json:"dialog,omitempty"`
	Placeholder string `toml:"placeholder" json:"placeholder,omitempty"`
}

func (l *Loaded) loadProfiles(md toml.MetaData, prim toml.Primitive, path string) error {
	var profiles map[string]ProfileSettings
	if err := md.PrimitiveDecode(prim, &profiles); err != nil {
		return invalidf("%s: [profiles]: %v", path, err)
	}
	for _, k := range md.Undecoded() {
		if len(k) > 0 && k[0] == "profiles" {
			return invalidf("%s: unknown key %q in [profiles]; known: base, commands, settle, queues, bracketed_paste, fold_bytes, fold_lines, prompt, ready, busy, dialog, placeholder", path, k.String())
		}
	}
	for name, p := range profiles {
		if p.Settle != "" {
			d, err := time.ParseDuration(p.Settle)
			if err != nil {
				return invalidf("%s: [profiles.%s] settle = %q: want a duration like \"150ms\"", path, name, p.Settle)
			}
			if d < 0 || d > maxSettle {
				return invalidf("%s: [profiles.%s] settle = %q: want a duration from 0s to %s", path, name, p.Settle, short(maxSettle))
			}
		}
	}
	l.Profiles = profiles
	return nil
}

// literal shows a TOML value roughly as it was written.
func literal(raw any) string {
	switch v := raw.(type) {
	case string:
		return strconv.Quote(v)
	case map[string]any:
		return "{...}"
	case []any, []map[string]any:
		return "[...]"
	}
	return fmt.Sprint(raw)
}

// short writes a bound as a person would: "24h", "10m", "1s", "500ms".
func short(d time.Duration) string {
	s := d.String()
	for _, zero := range []string{"m0s", "h0m"} {
		if t, ok := strings.CutSuffix(s, zero); ok {
			s = t + zero[:1]
		}
	}
	return s
}
