package chaos

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"os"
	"strings"
)

// progKind is a kind of program in a pane.
type progKind string

const (
	progStandin progKind = "standin" // Claude Code's screen, bracketed paste
	progPlain   progKind = "plain"   // a plain "> " prompt that never asks for bracketed paste
	progPython  progKind = "python"  // python3's >>>, with a profile in the config
	progAsker   progKind = "asker"   // a bash loop of read -p, logging each line it reads
	progShell   progKind = "shell"   // an interactive bash, its history written at each prompt
)

// replScript is python's REPL, recording each line it reads before it runs
// it. It imports no readline: no bracketed paste, the terminal's own line
// editing, as python3 started without one.
const replScript = `import code, json, sys
log = open(sys.argv[1], "a")
class Console(code.InteractiveConsole):
    def raw_input(self, prompt=""):
        sys.stdout.write(prompt)
        sys.stdout.flush()
        line = sys.stdin.readline()
        if not line:
            raise EOFError
        line = line.rstrip("\n")
        log.write(json.dumps(line) + "\n")
        log.flush()
        return line
Console().interact(banner="", exitmsg="")
`

// askerLoop is the read loop: $1 is its log, $2 its prompt.
const askerLoop = `while IFS= read -r -p "$2" line; do printf '%s\n' "$line" >> "$1"; done`

// readRecord reads a program's own record of what it read: prompts, and
// what it should never have got (keys in a dialog, an interrupt).
func readRecord(kind progKind, path string) (prompts, odd []string, err error) {
	b, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil, nil
	}
	if err != nil {
		return nil, nil, err
	}
	switch kind {
	case progStandin, progPlain:
		return standinRecord(b)
	case progPython:
		return pythonRecord(b)
	}
	// The read loop and the shell's history: a line each.
	s := strings.TrimSuffix(string(b), "\n")
	if s == "" {
		return nil, nil, nil
	}
	return strings.Split(s, "\n"), nil, nil
}

func standinRecord(b []byte) (prompts, odd []string, err error) {
	sc := bufio.NewScanner(bytes.NewReader(b))
	sc.Buffer(make([]byte, 0, 64*1024), 64*1024*1024)
	for sc.Scan() {
		var r struct{ Kind, Text string }
		if err := json.Unmarshal(sc.Bytes(), &r); err != nil {
			return nil, nil, err
		}
		switch r.Kind {
		case "prompt":
			prompts = append(prompts, r.Text)
		case "dialog-key":
			odd = append(odd, "dialog-key "+r.Text)
		case "interrupt":
			odd = append(odd, "interrupt")
		}
	}
	return prompts, odd, sc.Err()
}

func pythonRecord(b []byte) (prompts, odd []string, err error) {
	sc := bufio.NewScanner(bytes.NewReader(b))
	sc.Buffer(make([]byte, 0, 64*1024), 64*1024*1024)
	for sc.Scan() {
		var line string
		if err := json.Unmarshal(sc.Bytes(), &line); err != nil {
			return nil, nil, err
		}
		prompts = append(prompts, line)
	}
	return prompts, nil, sc.Err()
}
