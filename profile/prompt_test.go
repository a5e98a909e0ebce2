package profile

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/agentmsg/agentmsg/delivery"
	"github.com/agentmsg/agentmsg/message"
)

func TestPromptReader(t *testing.T) {
	python, _ := Lookup("python")
	my := mustPrompt(`my> `)
	for _, tt := range []struct {
		name   string
		reader delivery.ScreenReader
		screen []string
		want   want
	}{
		{"python, empty prompt (its space trimmed)", python.Reader, []string{"Python 3.11.7", ">>> ", "", ""}, want{state: delivery.Ready, boxRow: 1}},
		{"python, a line typed", python.Reader, []string{">>> MSG_A: hi"}, want{state: delivery.Draft, box: "MSG_A: hi", boxRow: 0}},
		{"python, continuation", python.Reader, []string{">>> if x:", "... "}, want{state: delivery.Ready, boxRow: 1}},
		{"python, taken: a new prompt under it", python.Reader, []string{">>> MSG_A: hi", "SyntaxError: invalid syntax", ">>>"}, want{state: delivery.Ready, boxRow: 2}},
		{"python, working: no prompt at the bottom", python.Reader, []string{">>> work()", "step 1"}, want{state: delivery.Unknown, boxRow: -1}},
		{"python exited to a shell", python.Reader, []string{">>> exit()", "user@host:~$ "}, want{state: delivery.Unknown, boxRow: -1, shell: true}},
		{"read -p, empty", my, []string{"my> "}, want{state: delivery.Ready, boxRow: 0}},
		{"read -p, trimmed", my, []string{"my>"}, want{state: delivery.Ready, boxRow: 0}},
		{"read -p, a line typed", my, []string{"my> one", "my> MSG_B: two"}, want{state: delivery.Draft, box: "MSG_B: two", boxRow: 1}},
		{"read -p, a prompt only in the transcript", my, []string{"my> one", "done"}, want{state: delivery.Unknown, boxRow: -1}},
		{"empty screen", my, []string{"", ""}, want{state: delivery.Unknown, boxRow: -1}},
	} {
		t.Run(tt.name, func(t *testing.T) { check(t, tt.reader.Read(tt.screen), tt.want) })
	}
}

func TestNewPrompt(t *testing.T) {
	for pattern, wantErr := range map[string]string{
		`my> `:      "",
		`^my>`:      "",
		`db=[#>] `:  "",
		`cost \$`:   "",
		`^my> $`:    `ends in $`,
		`my>$`:      `ends in $`,
		`x*`:        "matches an empty row",
		`\s*`:       "matches an empty row",
		`(`:         "missing closing",
		`cost \\$`:  `ends in $`,
		`cost \\\$`: "",
	} {
		_, err := NewPrompt(pattern)
		switch {
		case wantErr == "" && err != nil:
			t.Errorf("NewPrompt(%q): %v", pattern, err)
		case wantErr != "" && (err == nil || !strings.Contains(err.Error(), wantErr)):
			t.Errorf("NewPrompt(%q) = %v, want an error containing %q", pattern, err, wantErr)
		}
	}
}

// A profile from the config file describes a prompt; its reader keeps the
// base's shell check and takes the config's busy and dialog patterns too.
func TestApplyPrompt(t *testing.T) {
	got, err := Apply(Builtin(), map[string]Override{
		"myrepl": {Base: "generic", Commands: []string{"myrepl"}, PromptPattern: `my> `, BusyPattern: `^working`},
	})
	if err != nil {
		t.Fatal(err)
	}
	p, _ := LookupIn(got, "myrepl")
	check(t, p.Reader.Read([]string{"my> "}), want{state: delivery.Ready, boxRow: 0})
	check(t, p.Reader.Read([]string{"my> hello"}), want{state: delivery.Draft, box: "hello", boxRow: 0})
	check(t, p.Reader.Read([]string{"working", "my> "}), want{state: delivery.Busy, boxRow: 1})
	for _, bad := range []string{`my> $`, `(`, `.*`} {
		_, err := Apply(Builtin(), map[string]Override{"x": {Base: "generic", PromptPattern: bad}})
		if err == nil || !strings.Contains(err.Error(), `profile "x": prompt pattern`) {
			t.Errorf("prompt %q: error %v", bad, err)
		}
	}
}

// The screen's rows are trimmed, so a pattern written with the prompt's
// trailing space ('^my> $', as the README showed) never matched; both
// spellings match now.
func TestPatternsMatchTheRowAsTheScreenShowsIt(t *testing.T) {
	for _, ready := range []string{`^my> $`, `^my>$`} {
		got, err := Apply(Builtin(), map[string]Override{"mine": {Base: "generic", ReadyPattern: ready}})
		if err != nil {
			t.Fatal(err)
		}
		p, _ := LookupIn(got, "mine")
		if rd := p.Reader.Read([]string{"my> "}); rd.State != delivery.Ready {
			t.Errorf("ready = %q: read as %s (%s)", ready, rd.State, rd.Detail)
		}
	}
}

// readLoop is a program that reads lines after a prompt, as a bash
// read -p loop or a REPL does: what is pasted shows after the prompt, a
// carriage return takes the line and prints a new prompt under it.
type readLoop struct {
	prompt string
	rows   []string
	input  string
	read   []string
}

func (p *readLoop) LeaveMode(context.Context, string) error { return nil }
func (p *readLoop) Capture(context.Context, string, int) ([]string, error) {
	return append(append([]string{}, p.rows...), p.prompt+p.input, "", ""), nil
}
func (p *readLoop) Paste(_ context.Context, _ string, text string) error {
	p.input += text
	return nil
}
func (p *readLoop) SendBytes(context.Context, string, ...byte) error {
	p.rows = append(p.rows, p.prompt+p.input)
	p.read, p.input = append(p.read, p.input), ""
	return nil
}

type noLocks struct{}

func (noLocks) Pane(context.Context, string, string) (func(), error) { return func() {}, nil }

type clock struct{ now time.Time }

func (c *clock) Now() time.Time { return c.now }
func (c *clock) Sleep(_ context.Context, d time.Duration) error {
	c.now = c.now.Add(d)
	return nil
}

func deliverTo(prog *readLoop, reader delivery.ScreenReader, text string) delivery.Result {
	opts := delivery.DefaultOptions()
	opts.Reader = reader
	d := &delivery.Deliverer{Term: prog, Locks: noLocks{}, Clock: &clock{now: time.Unix(0, 0)}, Socket: "/s", Opts: opts}
	return d.Deliver(context.Background(), "%1", message.ID("MSG_T_0badcafe"), text)
}

// A send to a read loop whose profile describes its prompt is submitted,
// proven by the new prompt under the line, and read once. A ready pattern
// alone (the README's old example) describes the prompt too: on main the
// text was typed and never seen in a box (exit 5, left on the prompt).
func TestAPromptProfileDelivers(t *testing.T) {
	got, err := Apply(Builtin(), map[string]Override{
		"myrepl": {Base: "generic", PromptPattern: `my> `},
		"ready1": {Base: "generic", ReadyPattern: `^my>$`},
		"ready2": {Base: "generic", ReadyPattern: `^my> $`},
	})
	if err != nil {
		t.Fatal(err)
	}
	reader := func(name string) delivery.ScreenReader {
		p, _ := LookupIn(got, name)
		return p.Reader
	}
	for _, tt := range []struct {
		prompt string
		reader delivery.ScreenReader
	}{{"my> ", reader("myrepl")}, {">>> ", reader("python")}, {"my> ", reader("ready1")}, {"my> ", reader("ready2")}} {
		prog := &readLoop{prompt: tt.prompt}
		res := deliverTo(prog, tt.reader, "hello")
		if res.Verdict != delivery.Submitted || res.Presses != 1 || len(prog.read) != 1 || prog.read[0] != "MSG_T_0badcafe: hello" {
			t.Errorf("%q %T: verdict %s (%v), %d presses, read %q", tt.prompt, tt.reader, res.Verdict, res.Err, res.Presses, prog.read)
		}
	}
}

// python3 in the foreground is its REPL unless it runs an agent CLI or a
// program the config names; a script a shell runs is known by its name.
func TestDetectPromptPrograms(t *testing.T) {
	profiles, err := Apply(Builtin(), map[string]Override{
		"myrepl": {Base: "generic", Commands: []string{"myrepl"}, PromptPattern: `my> `},
	})
	if err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		command string
		procs   [][]string
		screen  []string
		want    string
		why     string
	}{
		{"python3", [][]string{{"python3", "-q"}}, []string{">>> "}, "python", "foreground command python3"},
		{"python", nil, nil, "python", "foreground command python"},
		{"python3", [][]string{{"python3", "-m", "aider"}}, nil, "aider", "foreground process aider (python3 -m aider)"},
		{"bash", [][]string{{"/bin/bash", "/home/u/bin/myrepl"}}, []string{"my> "}, "myrepl", "foreground process myrepl (/bin/bash /home/u/bin/myrepl)"},
		{"bash", [][]string{{"-bash"}, {"python3", "/srv/myrepl", "-v"}}, nil, "myrepl", "foreground process myrepl (python3 /srv/myrepl -v)"},
		{"myrepl", nil, nil, "myrepl", "foreground command myrepl"},
		// Inline code names no program, and a shell alone is a shell.
		{"bash", [][]string{{"bash", "-c", "myrepl"}}, []string{"$ "}, "shell", "foreground command bash: a shell"},
		{"bash", [][]string{{"-bash"}}, []string{"$ "}, "shell", "foreground command bash: a shell"},
	} {
		procs := func() [][]string { return tt.procs }
		p, why := DetectPane(profiles, Pane{Command: tt.command, Procs: procs}, tt.screen)
		if p.Name != tt.want || why != tt.why {
			t.Errorf("%s %q: %s, %q; want %s, %q", tt.command, tt.procs, p.Name, why, tt.want, tt.why)
		}
	}
}

func TestSuggestPrompt(t *testing.T) {
	for _, tt := range []struct {
		screen []string
		want   string
	}{
		{[]string{"hello", "my> ", ""}, "my> "},
		{[]string{">>>"}, ">>> "},
		{[]string{"(Pdb)"}, `\(Pdb\) `},
		{[]string{"a long line of output from the program."}, ""},
		{[]string{"working on step 3"}, ""},
		{[]string{"user@host:~$ "}, ""},
		{nil, ""},
	} {
		got, ok := SuggestPrompt(tt.screen)
		if got != tt.want || ok != (tt.want != "") {
			t.Errorf("SuggestPrompt(%q) = %q, %v; want %q", tt.screen, got, ok, tt.want)
		}
		if ok {
			if rd := mustPrompt(got).Read(tt.screen); rd.State != delivery.Ready {
				t.Errorf("the suggestion %q reads %q as %s", got, tt.screen, rd.State)
			}
		}
	}
}
