package profile

import (
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
)

// Process-based detection. npm installs Codex, Gemini CLI and Qwen Code as
// Node launchers, so tmux names the pane's command "node" (or the shell of
// a wrapper script); what runs is in the foreground processes' arguments:
// "node /…/node_modules/.bin/gemini", "node /…/@openai/codex/bin/codex.js".
// Droid's npm shim ("node /…/node_modules/.bin/droid") runs its native
// binary as a child, "/…/@factory/cli-linux-x64/bin/droid", in the same
// process group; where npm ran the package's postinstall the shim is
// replaced by that binary and the command is "droid".

// Procs reads the processes of a pane from a /proc file system.
type Procs struct {
	// Root is the proc file system; "" means /proc.
	Root string
}

func (p Procs) root() string {
	if p.Root == "" {
		return "/proc"
	}
	return p.Root
}

// stat reads a process's parent, process group and its terminal's
// foreground process group (fields 4, 5 and 8 of /proc/PID/stat).
func (p Procs) stat(pid int) (ppid, pgrp, tpgid int, ok bool) {
	b, err := os.ReadFile(filepath.Join(p.root(), strconv.Itoa(pid), "stat"))
	if err != nil {
		return 0, 0, 0, false
	}
	s := string(b)
	i := strings.LastIndexByte(s, ')') // comm may hold spaces and parens
	if i < 0 {
		return 0, 0, 0, false
	}
	f := strings.Fields(s[i+1:])
	if len(f) < 6 {
		return 0, 0, 0, false
	}
	ppid, _ = strconv.Atoi(f[1])
	pgrp, _ = strconv.Atoi(f[2])
	tpgid, _ = strconv.Atoi(f[5])
	return ppid, pgrp, tpgid, true
}

// Argv returns a process's arguments (nil when it is gone or a zombie).
func (p Procs) Argv(pid int) []string {
	b, err := os.ReadFile(filepath.Join(p.root(), strconv.Itoa(pid), "cmdline"))
	if err != nil || len(b) == 0 {
		return nil
	}
	return strings.Split(strings.TrimRight(string(b), "\x00"), "\x00")
}

// Foreground returns the arguments of the processes in the foreground of
// the pane whose first process is pid: the pane's foreground process
// group, found from pid's terminal (tpgid), and those of its members that
// descend from pid, parents before children. A wrapper that runs the agent
// without job control (bash -c 'codex; …') keeps it in its own group, so
// the agent is among them. Nil when nothing can be read (no /proc).
func (p Procs) Foreground(pid int) [][]string {
	if pid <= 0 {
		return nil
	}
	_, _, tpgid, ok := p.stat(pid)
	if !ok {
		return nil
	}
	children, pgrps := p.descendants(pid)
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
		if argv := p.Argv(cur); argv != nil {
			out = append(out, argv)
		}
	}
	return out
}

// descendants maps pid and every process under it to its children, and
// each to its process group. It walks the kernel's children lists
// (/proc/PID/task/TID/children, one per thread: a Node process forks from
// any of them), a few small reads; only where those lists are missing does
// it read the stat of every process on the machine.
func (p Procs) descendants(pid int) (children map[int][]int, pgrps map[int]int) {
	children, pgrps = map[int][]int{}, map[int]int{}
	if _, err := os.Stat(filepath.Join(p.root(), strconv.Itoa(pid), "task", strconv.Itoa(pid), "children")); err != nil {
		entries, _ := os.ReadDir(p.root())
		for _, e := range entries {
			child, err := strconv.Atoi(e.Name())
			if err != nil {
				continue
			}
			if ppid, pgrp, _, ok := p.stat(child); ok {
				children[ppid] = append(children[ppid], child)
				pgrps[child] = pgrp
			}
		}
		return children, pgrps
	}
	queue := []int{pid}
	for len(queue) > 0 && len(pgrps) < 4096 {
		cur := queue[0]
		queue = queue[1:]
		if _, pgrp, _, ok := p.stat(cur); ok {
			pgrps[cur] = pgrp
		}
		tasks, _ := os.ReadDir(filepath.Join(p.root(), strconv.Itoa(cur), "task"))
		for _, t := range tasks {
			b, err := os.ReadFile(filepath.Join(p.root(), strconv.Itoa(cur), "task", t.Name(), "children"))
			if err != nil {
				continue
			}
			for _, f := range strings.Fields(string(b)) {
				if child, err := strconv.Atoi(f); err == nil && !slices.Contains(children[cur], child) {
					children[cur] = append(children[cur], child)
					queue = append(queue, child)
				}
			}
		}
	}
	return children, pgrps
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
	if slices.Contains(interpreters, filepath.Base(argv[0])) {
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

// program is what a process runs, by name: its executable's base name, or
// for a shell or an interpreter the base name of its script (its first
// argument that is no option) or module (python3 -m NAME); "" for a shell
// or an interpreter alone, or running code given inline (sh -c, node -e).
func program(argv []string) string {
	if len(argv) == 0 {
		return ""
	}
	base := filepath.Base(strings.TrimPrefix(argv[0], "-")) // "-bash": a login shell
	if !slices.Contains(interpreters, base) && !slices.Contains(shellCommands, base) {
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
