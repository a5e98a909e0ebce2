package config

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"
)

func envOf(m map[string]string) func(string) (string, bool) {
	return func(k string) (string, bool) {
		v, ok := m[k]
		return v, ok
	}
}

// writeConfig returns a config path in a fresh directory, holding body unless body is "".
func writeConfig(t *testing.T, body string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "config.toml")
	if body != "" {
		if err := os.WriteFile(path, []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	return path
}

type flag struct{ key, value string }

// load runs the three lower layers and then the flags, the way cmd will.
func load(t *testing.T, body string, env map[string]string, flags []flag) (*Loaded, string, error) {
	t.Helper()
	path := writeConfig(t, body)
	l, err := Load(envOf(env), path)
	if err != nil {
		return nil, path, err
	}
	for _, f := range flags {
		if err := l.Set(f.key, f.value, FlagSource(f.key)); err != nil {
			return nil, path, err
		}
	}
	return l, path, nil
}

func TestDefaults(t *testing.T) {
	t.Parallel()
	want := Settings{
		ReadyTimeout:   30 * time.Second,
		ConfirmTimeout: 5 * time.Second,
		Retries:        2,
		Settle:         0,
		Repress:        500 * time.Millisecond,
		Poll:           10 * time.Millisecond,
		Concurrency:    128,
		KeepCount:      1000,
		KeepAge:        720 * time.Hour,
	}
	if got := Defaults(); got != want {
		t.Fatalf("Defaults() = %+v, want %+v", got, want)
	}
	l, _, err := load(t, "", nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	if l.Settings != want {
		t.Errorf("Load with nothing set = %+v, want %+v", l.Settings, want)
	}
	for _, e := range l.Entries() {
		if e.Source != SourceDefault {
			t.Errorf("%s: source %q, want %q", e.Key, e.Source, SourceDefault)
		}
	}
}

func TestPrecedence(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		file    string
		env     map[string]string
		flags   []flag
		want    func(*Settings)
		sources map[string]string // "$F" stands for the file's path
	}{
		{
			name: "file overrides defaults",
			file: "ready_timeout = \"1m30s\"\nretries = 0\nconcurrency = 4\nfrom = \"ana\"\nsocket_name = \"agents\"\npoll = \"1ms\"\n",
			want: func(s *Settings) {
				s.ReadyTimeout, s.Retries, s.Concurrency, s.From, s.SocketName, s.Poll = 90*time.Second, 0, 4, "ana", "agents", time.Millisecond
			},
			sources: map[string]string{"ready_timeout": "file $F", "retries": "file $F", "confirm_timeout": "default"},
		},
		{
			name: "env overrides file",
			file: "ready_timeout = \"1m\"\nretries = 5\n",
			env:  map[string]string{"AGENTMSG_READY_TIMEOUT": "2m", "AGENTMSG_FROM": "bo", "UNRELATED": "x"},
			want: func(s *Settings) {
				s.ReadyTimeout, s.Retries, s.From = 2*time.Minute, 5, "bo"
			},
			sources: map[string]string{"ready_timeout": "env AGENTMSG_READY_TIMEOUT", "retries": "file $F", "from": "env AGENTMSG_FROM"},
		},
		{
			name:    "empty env var counts as unset",
			file:    "retries = 5\n",
			env:     map[string]string{"AGENTMSG_RETRIES": ""},
			want:    func(s *Settings) { s.Retries = 5 },
			sources: map[string]string{"retries": "file $F"},
		},
		{
			name:  "flag overrides env",
			file:  "settle = \"1s\"\n",
			env:   map[string]string{"AGENTMSG_SETTLE": "2s", "AGENTMSG_CONCURRENCY": "8"},
			flags: []flag{{"settle", "250ms"}, {"concurrency", "1000"}},
			want: func(s *Settings) {
				s.Settle, s.Concurrency = 250*time.Millisecond, 1000
			},
			sources: map[string]string{"settle": "flag --settle", "concurrency": "flag --concurrency"},
		},
		{
			name:  "a later flag wins",
			flags: []flag{{"retries", "1"}, {"retries", "3"}},
			want:  func(s *Settings) { s.Retries = 3 },
		},
		{
			name:    "zero waits are allowed",
			env:     map[string]string{"AGENTMSG_SETTLE": "0", "AGENTMSG_CONFIRM_TIMEOUT": "0s"},
			want:    func(s *Settings) { s.Settle, s.ConfirmTimeout = 0, 0 },
			sources: map[string]string{"settle": "env AGENTMSG_SETTLE"},
		},
		{
			name:    "socket from a higher layer clears socket_name from a lower one",
			file:    "socket_name = \"agents\"\n",
			env:     map[string]string{"AGENTMSG_SOCKET": "/tmp/s"},
			want:    func(s *Settings) { s.Socket = "/tmp/s" },
			sources: map[string]string{"socket": "env AGENTMSG_SOCKET", "socket_name": "env AGENTMSG_SOCKET"},
		},
		{
			name:    "socket_name flag clears socket from env",
			env:     map[string]string{"AGENTMSG_SOCKET": "/tmp/s"},
			flags:   []flag{{"socket_name", "other"}},
			want:    func(s *Settings) { s.SocketName = "other" },
			sources: map[string]string{"socket": "flag --socket-name", "socket_name": "flag --socket-name"},
		},
		{
			name:  "an empty socket conflicts with nothing",
			file:  "socket = \"\"\nsocket_name = \"agents\"\n",
			flags: []flag{{"socket", ""}},
			want:  func(s *Settings) { s.SocketName = "agents" },
		},
		{
			name: "quoted keys and comments",
			file: "# mine\n\"retries\" = 1 # fewer\n",
			want: func(s *Settings) { s.Retries = 1 },
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			l, path, err := load(t, tt.file, tt.env, tt.flags)
			if err != nil {
				t.Fatal(err)
			}
			want := Defaults()
			tt.want(&want)
			if l.Settings != want {
				t.Errorf("settings = %+v\nwant       %+v", l.Settings, want)
			}
			for key, src := range tt.sources {
				if got, want := l.Source(key), Source(strings.ReplaceAll(src, "$F", path)); got != want {
					t.Errorf("Source(%q) = %q, want %q", key, got, want)
				}
			}
		})
	}
}

func TestErrors(t *testing.T) {
	t.Parallel()
	const known = "known keys: ready_timeout, confirm_timeout, retries, settle, repress, poll, concurrency, keep_count, keep_age, from, team, socket, socket_name, tmux"
	const both = "tmux takes a socket path (socket, -S) or a socket name (socket_name, -L), not both, so remove one"
	tests := []struct {
		name  string
		file  string
		env   map[string]string
		flags []flag
		want  string // "$F" stands for the file's path; a trailing "..." means a prefix
	}{
		{name: "duration that does not parse", file: "retries = 1\nready_timeout = \"3x\"\n",
			want: `ready_timeout = "3x" in $F:2: want a duration such as 30s or 250ms`},
		{name: "duration without quotes", file: "poll = 10\n",
			want: `poll = 10 in $F:1: want a duration in quotes, such as "30s" or "250ms"`},
		{name: "negative duration", file: "settle = \"-5ms\"\n",
			want: `settle = "-5ms" in $F:1: want 0s or more`},
		{name: "negative timeout", file: "confirm_timeout = \"-1s\"\n",
			want: `confirm_timeout = "-1s" in $F:1: want 0s or more`},
		{name: "poll below 1ms", file: "poll = \"500us\"\n",
			want: `poll = "500us" in $F:1: want 1ms or more`},
		{name: "retries above 10", file: "\n\nretries = 11\n",
			want: `retries = 11 in $F:3: want a whole number from 0 to 10`},
		{name: "negative retries", file: "retries = -1\n",
			want: `retries = -1 in $F:1: want a whole number from 0 to 10`},
		{name: "retries in quotes", file: "retries = \"3\"\n",
			want: `retries = "3" in $F:1: want a whole number from 0 to 10, without quotes`},
		{name: "retries as a float", file: "retries = 2.5\n",
			want: `retries = 2.5 in $F:1: want a whole number from 0 to 10`},
		{name: "concurrency 0", file: "concurrency = 0\n",
			want: `concurrency = 0 in $F:1: want a whole number from 1 to 1000`},
		{name: "concurrency above 1000", file: "concurrency = 1001\n",
			want: `concurrency = 1001 in $F:1: want a whole number from 1 to 1000`},
		{name: "string without quotes", file: "from = 3\n",
			want: `from = 3 in $F:1: want a string in quotes`},
		{name: "known key as a table", file: "[retries]\nx = 1\n",
			want: `retries = {...} in $F:1: want a whole number from 0 to 10`},
		{name: "unknown key", file: "retries = 1\ntimeout = \"3s\"\n",
			want: `unknown key "timeout" in $F:2; ` + known},
		{name: "unknown key in flag form", file: "ready-timeout = \"3s\"\n",
			want: `unknown key "ready-timeout" in $F:1 (did you mean ready_timeout?); ` + known},
		{name: "unknown table", file: "retries = 1\n\n[agents]\nana = 1\n",
			want: `unknown key "agents" in $F:3; ` + known},
		{name: "invalid TOML", file: "retries = 1\nready_timeout = \n",
			want: `$F:2: not valid TOML: ...`},
		{name: "duplicate key", file: "retries = 1\nretries = 2\n",
			want: `$F:2: not valid TOML: ...`},
		{name: "socket and socket_name in the file", file: "socket = \"/tmp/a\"\nsocket_name = \"b\"\n",
			want: `socket_name = "b" in $F:2: conflicts with socket = "/tmp/a" from file $F; ` + both},
		{name: "socket and socket_name in the env",
			env:  map[string]string{"AGENTMSG_SOCKET": "/tmp/a", "AGENTMSG_SOCKET_NAME": "b"},
			want: `AGENTMSG_SOCKET_NAME="b": conflicts with socket = "/tmp/a" from env AGENTMSG_SOCKET; ` + both},
		{name: "socket and socket_name as flags", flags: []flag{{"socket_name", "b"}, {"socket", "/tmp/a"}},
			want: `--socket "/tmp/a": conflicts with socket_name = "b" from flag --socket-name; ` + both},
		{name: "env duration that does not parse", env: map[string]string{"AGENTMSG_READY_TIMEOUT": "3x"},
			want: `AGENTMSG_READY_TIMEOUT="3x": want a duration such as 30s or 250ms`},
		{name: "env integer that does not parse", env: map[string]string{"AGENTMSG_RETRIES": "many"},
			want: `AGENTMSG_RETRIES="many": want a whole number from 0 to 10`},
		{name: "env concurrency out of range", env: map[string]string{"AGENTMSG_CONCURRENCY": "0"},
			want: `AGENTMSG_CONCURRENCY="0": want a whole number from 1 to 1000`},
		{name: "env error wins over a good file", file: "poll = \"5ms\"\n", env: map[string]string{"AGENTMSG_POLL": "0s"},
			want: `AGENTMSG_POLL="0s": want 1ms or more`},
		{name: "flag out of range", flags: []flag{{"retries", "11"}},
			want: `--retries "11": want a whole number from 0 to 10`},
		{name: "flag duration that does not parse", flags: []flag{{"confirm_timeout", "5"}},
			want: `--confirm-timeout "5": want a duration such as 30s or 250ms`},
		// Every duration has an upper bound: settle = "2562047h" made a
		// send sleep until it was killed.
		{name: "settle past its bound", file: "settle = \"2562047h\"\n",
			want: `settle = "2562047h" in $F:1: want 10s or less`},
		{name: "ready_timeout past its bound", file: "ready_timeout = \"25h\"\n",
			want: `ready_timeout = "25h" in $F:1: want 24h or less`},
		{name: "env confirm_timeout past its bound", env: map[string]string{"AGENTMSG_CONFIRM_TIMEOUT": "11m"},
			want: `AGENTMSG_CONFIRM_TIMEOUT="11m": want 10m or less`},
		{name: "env repress past its bound", env: map[string]string{"AGENTMSG_REPRESS": "2m"},
			want: `AGENTMSG_REPRESS="2m": want 1m or less`},
		{name: "flag poll past its bound", flags: []flag{{"poll", "1001ms"}},
			want: `--poll "1001ms": want 1s or less`},
		{name: "flag keep_age past its bound", flags: []flag{{"keep_age", "87601h"}},
			want: `--keep-age "87601h": want 87600h or less`},
		{name: "flag settle past its bound", flags: []flag{{"settle", "2562047h"}},
			want: `--settle "2562047h": want 10s or less`},
		{name: "unknown setting", flags: []flag{{"speed", "1"}},
			want: `unknown setting "speed"; known settings: ready_timeout, confirm_timeout, retries, settle, repress, poll, concurrency, keep_count, keep_age, from, team, socket, socket_name, tmux`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			_, path, err := load(t, tt.file, tt.env, tt.flags)
			if err == nil {
				t.Fatal("no error")
			}
			if !errors.Is(err, ErrInvalid) {
				t.Errorf("error %v does not wrap ErrInvalid", err)
			}
			want := strings.ReplaceAll(tt.want, "$F", path)
			if prefix, ok := strings.CutSuffix(want, "..."); ok {
				if !strings.HasPrefix(err.Error(), prefix) {
					t.Errorf("error:\n  %s\nwant prefix:\n  %s", err, prefix)
				}
			} else if err.Error() != want {
				t.Errorf("error:\n  %s\nwant:\n  %s", err, want)
			}
		})
	}
}

func TestLoadFile(t *testing.T) {
	t.Parallel()
	t.Run("missing file is fine", func(t *testing.T) {
		t.Parallel()
		path := filepath.Join(t.TempDir(), "nowhere", "config.toml")
		l, err := Load(envOf(nil), path)
		if err != nil {
			t.Fatal(err)
		}
		if l.Settings != Defaults() {
			t.Errorf("settings = %+v, want defaults", l.Settings)
		}
	})
	t.Run("unreadable file names the file", func(t *testing.T) {
		t.Parallel()
		path := t.TempDir() // a directory cannot be read as a file, even by root
		_, err := Load(envOf(nil), path)
		if err == nil || !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), path) {
			t.Fatalf("error = %v, want one naming %s and wrapping ErrInvalid", err, path)
		}
	})
	t.Run("empty path reads the default path", func(t *testing.T) {
		t.Parallel()
		xdg := t.TempDir()
		path := filepath.Join(xdg, "agentmsg", "config.toml")
		if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte("retries = 7\n"), 0o600); err != nil {
			t.Fatal(err)
		}
		l, err := Load(envOf(map[string]string{"XDG_CONFIG_HOME": xdg}), "")
		if err != nil {
			t.Fatal(err)
		}
		if l.Settings.Retries != 7 || l.Source("retries") != Source("file "+path) {
			t.Errorf("retries = %d from %q, want 7 from file %s", l.Settings.Retries, l.Source("retries"), path)
		}
	})
	t.Run("no HOME and no XDG_CONFIG_HOME reads no file", func(t *testing.T) {
		t.Parallel()
		l, err := Load(nil, "")
		if err != nil {
			t.Fatal(err)
		}
		if l.Settings != Defaults() {
			t.Errorf("settings = %+v, want defaults", l.Settings)
		}
	})
}

func TestDefaultPath(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		env  map[string]string
		want string
	}{
		{"XDG_CONFIG_HOME wins", map[string]string{"XDG_CONFIG_HOME": "/x/cfg", "HOME": "/home/ana"}, "/x/cfg/agentmsg/config.toml"},
		{"HOME fallback", map[string]string{"HOME": "/home/ana"}, "/home/ana/.config/agentmsg/config.toml"},
		{"empty XDG_CONFIG_HOME falls back", map[string]string{"XDG_CONFIG_HOME": "", "HOME": "/home/ana"}, "/home/ana/.config/agentmsg/config.toml"},
		{"relative XDG_CONFIG_HOME is ignored", map[string]string{"XDG_CONFIG_HOME": "cfg", "HOME": "/home/ana"}, "/home/ana/.config/agentmsg/config.toml"},
		{"neither", nil, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			if got := DefaultPath(envOf(tt.env)); got != tt.want {
				t.Errorf("DefaultPath = %q, want %q", got, tt.want)
			}
		})
	}
}

func TestEntries(t *testing.T) {
	t.Parallel()
	l, path, err := load(t, "ready_timeout = \"1m30s\"\nfrom = \"ana\"\n",
		map[string]string{"AGENTMSG_CONFIRM_TIMEOUT": "1500ms", "AGENTMSG_SOCKET": "/tmp/s"},
		[]flag{{"poll", "250ms"}, {"concurrency", "3"}})
	if err != nil {
		t.Fatal(err)
	}
	want := []struct{ key, value, source string }{
		{"ready_timeout", "1m30s", "file " + path},
		{"confirm_timeout", "1.5s", "env AGENTMSG_CONFIRM_TIMEOUT"},
		{"retries", "2", "default"},
		{"settle", "0s", "default"},
		{"repress", "500ms", "default"},
		{"poll", "250ms", "flag --poll"},
		{"concurrency", "3", "flag --concurrency"},
		{"keep_count", "1000", "default"},
		{"keep_age", "720h0m0s", "default"},
		{"from", "ana", "file " + path},
		{"team", "", "default"},
		{"socket", "/tmp/s", "env AGENTMSG_SOCKET"},
		{"socket_name", "", "default"},
		{"tmux", "", "default"},
	}
	got := l.Entries()
	if len(got) != len(want) {
		t.Fatalf("%d entries, want %d", len(got), len(want))
	}
	for i, w := range want {
		g := got[i]
		if g.Key != w.key || g.Value != w.value || g.Source != Source(w.source) || g.Help == "" {
			t.Errorf("entry %d = %+v, want {%s %q %s} with help", i, g, w.key, w.value, w.source)
		}
	}
}

func TestKeys(t *testing.T) {
	t.Parallel()
	keys := Keys()
	fields := reflect.TypeFor[Settings]()
	if len(keys) != fields.NumField() {
		t.Fatalf("%d keys for %d Settings fields", len(keys), fields.NumField())
	}
	def := Defaults()
	for i, k := range keys {
		// The documented order is the order of the fields; the key is the field name in snake case.
		if got := strings.ReplaceAll(k.Key, "_", ""); !strings.EqualFold(got, fields.Field(i).Name) {
			t.Errorf("key %d is %q, but field %d is %s", i, k.Key, i, fields.Field(i).Name)
		}
		if want := "AGENTMSG_" + strings.ToUpper(k.Key); k.Env != want {
			t.Errorf("%s: env %q, want %q", k.Key, k.Env, want)
		}
		if want := strings.ReplaceAll(k.Key, "_", "-"); k.Flag != want {
			t.Errorf("%s: flag %q, want %q", k.Key, k.Flag, want)
		}
		if k.Help == "" {
			t.Errorf("%s: no help", k.Key)
		}
		// Every default must survive a round trip through Set, or `agentmsg config` output could not be pasted back.
		var l Loaded
		l.Settings = def
		if err := l.Set(k.Key, k.Default, SourceDefault); err != nil {
			t.Errorf("%s: default %q does not parse: %v", k.Key, k.Default, err)
		}
	}
	if FlagSource("socket_name") != "flag --socket-name" {
		t.Errorf("FlagSource(socket_name) = %q", FlagSource("socket_name"))
	}
}

func TestProfileTables(t *testing.T) {
	l, _, err := load(t, `retries = 3

[profiles.codex]
settle = "200ms"

[profiles.mycli]
base = "generic"
commands = ["mycli", "mycli-beta"]
queues = true
fold_bytes = 2000
ready = '^\$ $'

[profiles.myrepl]
base = "generic"
prompt = 'my> '
`, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	if l.Settings.Retries != 3 || l.Profiles["codex"].Settle != "200ms" {
		t.Errorf("settings %+v, profiles %+v", l.Settings, l.Profiles)
	}
	my := l.Profiles["mycli"]
	if my.Base != "generic" || len(my.Commands) != 2 || my.Queues == nil || !*my.Queues || *my.FoldBytes != 2000 || my.Ready != `^\$ $` {
		t.Errorf("mycli = %+v", my)
	}
	if l.Profiles["myrepl"].Prompt != "my> " {
		t.Errorf("myrepl = %+v", l.Profiles["myrepl"])
	}
	for body, want := range map[string]string{
		"[profiles.x]\nspeed = 1\n":             "unknown key",
		"[profiles.x]\nsettle = \"x\"\n":        "want a duration",
		"[profiles.x]\nsettle = \"2562047h\"\n": `[profiles.x] settle = "2562047h": want a duration from 0s to 10s`,
		"[profiles.x]\nsettle = \"-1s\"\n":      `[profiles.x] settle = "-1s": want a duration from 0s to 10s`,
	} {
		if _, _, err := load(t, body, nil, nil); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%q: err %v, want %q", body, err, want)
		}
	}
}

// Each duration's bound is at once the most its key accepts and what its
// help says; the largest values within the bounds load.
func TestDurationBounds(t *testing.T) {
	t.Parallel()
	for _, k := range Keys() {
		if k.Type != "duration" {
			continue
		}
		sp, _ := lookup(k.Key)
		most := time.Duration(sp.max)
		if most <= 0 || most > 100*365*24*time.Hour {
			t.Errorf("%s: no sane upper bound (%v)", k.Key, most)
			continue
		}
		if !strings.Contains(k.Help, "at most "+short(most)) {
			t.Errorf("%s: help %q does not give its bound, %s", k.Key, k.Help, short(most))
		}
		l, _, err := load(t, "", map[string]string{k.Env: most.String()}, nil)
		if err != nil {
			t.Errorf("%s at its bound: %v", k.Key, err)
			continue
		}
		if got := sp.format(&l.Settings); got != most.String() {
			t.Errorf("%s = %s, want %s", k.Key, got, most)
		}
	}
}

// [alerts]: thresholds in bounds or 0 (off), the verdicts that alert, a
// command and an http(s) webhook; without the table, the defaults.
func TestAlertsTable(t *testing.T) {
	t.Parallel()
	l, _, err := load(t, "", nil, nil)
	if err != nil || !reflect.DeepEqual(l.Alerts, DefaultAlerts()) {
		t.Fatalf("no table: %+v, %v; want the defaults", l, err)
	}
	l, _, err = load(t, `[alerts]
message_wait = "15m"
dialog = "0"
verdicts = ["unknown"]
command = "notify-send agentmsg \"$AGENTMSG_ALERT_TEXT\""
webhook = "https://hooks.example.com/T1"
`, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	want := AlertSettings{MessageWait: 15 * time.Minute, Dialog: 0, Draft: 30 * time.Minute, Verdicts: []string{"unknown"},
		Command: `notify-send agentmsg "$AGENTMSG_ALERT_TEXT"`, Webhook: "https://hooks.example.com/T1"}
	if !reflect.DeepEqual(l.Alerts, want) {
		t.Errorf("alerts %+v, want %+v", l.Alerts, want)
	}
	for body, want := range map[string]string{
		"[alerts]\nmessage_wait = \"5s\"\n":     `[alerts] message_wait = "5s": want "0" (off) or a duration from 10s to 24h`,
		"[alerts]\ndraft = \"25h\"\n":           `[alerts] draft = "25h": want "0" (off) or a duration from 10s to 24h`,
		"[alerts]\ndialog = 10\n":               "[alerts]",
		"[alerts]\nverdicts = [\"failed\"]\n":   `verdicts: "failed" is none of typed, unknown`,
		"[alerts]\nwebhook = \"file:///x\"\n":   "want an http:// or https:// URL",
		"[alerts]\nwebhook = \"hooks.example\"": "want an http:// or https:// URL",
		"[alerts]\ncommand = \"a\\nb\"\n":       "want one line of shell",
		"[alerts]\nmessage-wait = \"1m\"\n":     `unknown key "alerts.message-wait" in [alerts]`,
	} {
		if _, _, err := load(t, body, nil, nil); err == nil || !strings.Contains(err.Error(), want) || !errors.Is(err, ErrInvalid) {
			t.Errorf("%q: err %v, want %q", body, err, want)
		}
	}
}

// A clone's settings are set without touching the original, which others
// read meanwhile (the daemon's config, read by every request while one
// names its own tmux server): a struct copy shared the map of sources.
func TestACloneIsSetAlone(t *testing.T) {
	l, err := Load(envOf(nil), "")
	if err != nil {
		t.Fatal(err)
	}
	before := l.Source("socket")
	var wg sync.WaitGroup
	for i := range 8 {
		wg.Go(func() {
			c := l.Clone()
			if err := c.Set("socket", fmt.Sprintf("/tmp/s%d", i), Source("request")); err != nil {
				t.Error(err)
			}
			if c.Source("socket") != "request" {
				t.Errorf("the clone's socket came from %q", c.Source("socket"))
			}
		})
		wg.Go(func() { _ = l.Source("socket") })
	}
	wg.Wait()
	if got := l.Source("socket"); got != before || l.Settings.Socket != "" {
		t.Fatalf("the original's socket: %q from %q; want it untouched (from %q)", l.Settings.Socket, got, before)
	}
}
