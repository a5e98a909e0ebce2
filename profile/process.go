package profile

import (
	"errors"
	"path/filepath"
	"slices"
	"strings"

	"github.com/agentmsg/agentmsg/internal/procs"
)

// Process-based detection. npm installs Codex, Gemini CLI and Qwen Code as
// Node launchers, so tmux names the pane's command "node" (or the shell of
// a wrapper script); what runs is in the foreground processes' arguments:
// "node /…/node_modules/.bin/gemini", "node /…/@openai/codex/bin/codex.js".
// Droid's npm shim ("node /…/node_modules/.bin/droid") runs its native
// binary as a child, "/…/@factory/cli-linux-x64/bin/droid", in the same
// process group; where npm ran the package's postinstall the shim is
// replaced by that binary and the command is "droid".

// Procs reads the processes of a pane.
type Procs struct {
	// Table is the process table; nil is the system's (package procs).
	Table Table
}

// Table is a process table: package procs's, or a test's.
type Table interface {
	Get(pid int) (procs.Proc, error)
	All() ([]procs.Proc, error)
	Children(pid int) ([]int, error)
	Argv(pid int) ([]string, error)
}

func (p Procs) table() Table {
	if p.Table == nil {
		return procs.System{}
	}
	return p.Table
}

// Foreground returns the arguments of the processes in the foreground of
// the pane whose first process is pid: the pane's foreground process
// group, found from pid's terminal (tpgid), and those of its members that
// descend from pid, parents before children. A wrapper that runs the agent
// without job control (bash -c 'codex; …') keeps it in its own group, so
// the agent is among them. Nil when nothing can be read.
func (p Procs) Foreground(pid int) [][]string {
	if pid <= 0 {
		return nil
	}
	t := p.table()
	first, err := t.Get(pid)
	if err != nil {
		return nil
	}
	children, pgrps := descendants(t, first)
	return foreground(pid, first.TPGID, children, pgrps, func(pid int) []string {
		argv, _ := t.Argv(pid)
		return argv
	})
}

// foreground walks the tree under pid, parents before children and
// siblings by pid, and returns the arguments of each process in the
// group tpgid (every one when tpgid is 0: no terminal) that has any.
func foreground(pid, tpgid int, children map[int][]int, pgrps map[int]int, argv func(int) []string) [][]string {
	var out [][]string
	queue := []int{pid}
	for len(queue) > 0 {
		cur := queue[0]
		queue = queue[1:]
		kids := children[cur]
		slices.Sort(kids)
		queue = append(queue, kids...)
		if tpgid > 0 && pgrps[cur] != tpgid {
			continue
		}
		if a := argv(cur); a != nil {
			out = append(out, a)
		}
	}
	return out
}

// maxTree bounds the processes a look follows under a pane.
const maxTree = 4096

// descendants maps first and every process under it to its children, and
// each to its process group. Where the kernel lists a process's children
// (Linux), it follows those lists from first, a few small reads; else
// (Darwin, or a build with the portable fallbacks forced) it reads the
// whole table once.
func descendants(t Table, first procs.Proc) (children map[int][]int, pgrps map[int]int) {
	children, pgrps = map[int][]int{}, map[int]int{first.PID: first.PGID}
	kids, err := t.Children(first.PID)
	if errors.Is(err, procs.ErrUnsupported) {
		all, _ := t.All()
		for _, q := range all {
			if q.PID == first.PID {
				continue
			}
			children[q.PPID] = append(children[q.PPID], q.PID)
			pgrps[q.PID] = q.PGID
		}
		return children, pgrps
	}
	children[first.PID] = kids
	queue := slices.Clone(kids)
	for len(queue) > 0 && len(pgrps) < maxTree {
		cur := queue[0]
		queue = queue[1:]
		q, err := t.Get(cur)
		if err != nil {
			continue // ended meanwhile
		}
		pgrps[cur] = q.PGID
		kids, _ := t.Children(cur)
		children[cur] = kids
		queue = append(queue, kids...)
	}
	return children, pgrps
}

// isInterpreter reports whether a program of that base name is one of
// interpreters, a versioned python ("python3.11") among them.
func isInterpreter(base string) bool {
	if slices.Contains(interpreters, base) {
		return true
	}
	v, ok := strings.CutPrefix(base, "python")
	return ok && v != "" && strings.Trim(v, "0123456789.") == ""
}

// interpreters run a script named in their arguments.
var interpreters = []string{"node", "nodejs", "bun", "deno", "python", "python3"}

// cliMarks identify a CLI from one argument: an executable's or script's
// base name, or a package directory in its path.
var cliMarks = []struct {
	name   string
	bases  []string
	inPath []string
}{
	{"claude", []string{"claude", "claude.exe", "cli.js"}, []string{"/@anthropic-ai/claude-code/"}},
	{"codex", []string{"codex", "codex.js"}, []string{"/@openai/codex/"}},
	{"gemini", []string{"gemini", "gemini.js"}, []string{"/@google/gemini-cli/"}},
	{"qwen", []string{"qwen", "qwen.js"}, []string{"/@qwen-code/qwen-code/"}},
	{"droid", []string{"droid"}, []string{"/@factory/cli"}}, // a native binary, run by npm's Node shim
	{"aider", []string{"aider"}, []string{"/aider/"}},
}

// Identify names the agent CLI a process runs, from its arguments: the
// executable, or the script an interpreter (node, …) runs. "" when it is
// none of them.
func Identify(argv []string) string {
	if len(argv) == 0 {
		return ""
	}
	args := argv[:1]
	if isInterpreter(filepath.Base(argv[0])) {
		// The script: the first argument that is no option.
		for _, a := range argv[1:] {
			if !strings.HasPrefix(a, "-") {
				args = []string{a}
				break
			}
		}
	}
	for _, a := range args {
		base := filepath.Base(a)
		for _, m := range cliMarks {
			if slices.Contains(m.bases, base) && (base != "cli.js" || pathHas(a, m.inPath)) {
				return m.name
			}
			if pathHas(a, m.inPath) {
				return m.name
			}
		}
	}
	return ""
}

func pathHas(a string, parts []string) bool {
	for _, p := range parts {
		if strings.Contains(a, p) {
			return true
		}
	}
	return false
}

// IdentifyAll names the agent CLI among a pane's foreground processes (as
// Foreground returns them), and the process's arguments that told it; the
// deepest match wins (a wrapper's child over the wrapper).
func IdentifyAll(procs [][]string) (name string, argv []string) {
	for i := len(procs) - 1; i >= 0; i-- {
		if n := Identify(procs[i]); n != "" {
			return n, procs[i]
		}
	}
	return "", nil
}

// byProgram is the profile that claims, among its commands, a program a
// pane's foreground processes run (the deepest first): an executable's
// base name, or the script a shell or an interpreter runs ("bash
// /x/myrepl" runs "myrepl"). Shells and interpreters themselves name no
// program here, and a shell's profile is never picked this way.
func byProgram(profiles []Profile, procs [][]string) (p Profile, name string, argv []string, ok bool) {
	for i := len(procs) - 1; i >= 0; i-- {
		name := program(procs[i])
		if name == "" {
			continue
		}
		for j := len(profiles) - 1; j >= 0; j-- {
			if slices.Contains(profiles[j].Commands, name) && !isShellProfile(profiles[j]) {
				return profiles[j], name, procs[i], true
			}
		}
	}
	return Profile{}, "", nil, false
}

// Program is what a pane whose first process is pid runs, by name: the
// deepest of its foreground processes that runs a program of its own (an
// executable, or the script or module a shell or an interpreter runs);
// "" when none does (a shell alone, python3 at its own prompt) or the
// processes cannot be read.
func (p Procs) Program(pid int) string {
	fg := p.Foreground(pid)
	for i := len(fg) - 1; i >= 0; i-- {
		if name := program(fg[i]); name != "" {
			return name
		}
	}
	return ""
}

// RunsScripts reports whether command is a shell or an interpreter: a
// program that runs what its arguments name, so that its name alone says
// little about what a pane runs.
func RunsScripts(command string) bool {
	base := filepath.Base(strings.TrimPrefix(command, "-"))
	return isInterpreter(base) || slices.Contains(shellCommands, base)
}

// program is what a process runs, by name: its executable's base name, or
// for a shell or an interpreter the base name of its script (its first
// argument that is no option) or module (python3 -m NAME); "" for a shell
// or an interpreter alone, or running code given inline (sh -c, node -e).
func program(argv []string) string {
	if len(argv) == 0 {
		return ""
	}
	base := filepath.Base(strings.TrimPrefix(argv[0], "-")) // "-bash": a login shell
	if !isInterpreter(base) && !slices.Contains(shellCommands, base) {
		return base
	}
	for i, a := range argv[1:] {
		switch {
		case a == "-m" && i+2 < len(argv):
			return argv[i+2]
		case inlineCode(a):
			return ""
		case !strings.HasPrefix(a, "-"):
			return filepath.Base(a)
		}
	}
	return ""
}

// inlineCode: an option after which a shell or an interpreter runs code
// given as an argument, not a file ("-c", "-lc", "-e", "--eval").
func inlineCode(a string) bool {
	if a == "--eval" || a == "--command" {
		return true
	}
	return len(a) > 1 && a[0] == '-' && a[1] != '-' && strings.ContainsAny(a[1:], "ce")
}
