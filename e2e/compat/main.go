// Command compat runs the live tests against the real agent CLIs (e2e/clis,
// and e2e/claude for Claude Code's own) and prints a compatibility matrix:
// one row per CLI and version, one column per case, each cell what the
// tests of that case said (pass, FAIL, skip). The table is Markdown, so it
// can go into the README as it is. scripts/compat runs it, for the pinned
// versions or, with --latest, for the newest of each on npm.
//
// It reads `go test -json`: a case is a top-level test (TestLiveBusy), a CLI
// its first subtest (TestLiveBusy/codex/24-256); a case passes for a CLI
// when every subtest of it passed.
package main

import (
	"bufio"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"slices"
	"strings"

	clisharness "github.com/agentmsg/agentmsg/e2e/clis"
)

// cases are the columns: the top-level tests of e2e/clis, named for people.
var cases = []struct{ test, name string }{
	{"TestLiveMessages", "1–60 lines, 5 KB, draft kept"},
	{"TestLiveBusy", "busy"},
	{"TestLiveDialogDeferred", "dialog or menu"},
	{"TestLiveWrapperThenExited", "wrapper, exited"},
	{"TestLiveHooks", "hooks"},
}

// mcpCase is the column of e2e/mcplive, whose one test has a real Claude
// Code and a real Codex message each other through agentmsg's MCP tools.
const mcpCase = "MCP tools"

// ownCase is the column for a CLI's own package of tests (e2e/claude).
const ownCase = "own tests"

// event is one line of `go test -json`.
type event struct {
	Action  string
	Package string
	Test    string
	Output  string
}

func main() {
	run := flag.String("run", "", "only tests matching this (go test -run)")
	timeout := flag.String("timeout", "60m", "go test -timeout")
	flag.Parse()
	pkgs := flag.Args()
	if len(pkgs) == 0 {
		for _, p := range []string{"./e2e/clis/", "./e2e/claude/", "./e2e/mcplive/"} {
			if _, err := os.Stat(p); err == nil {
				pkgs = append(pkgs, p)
			}
		}
	}
	// One package at a time: each Node CLI wants a core of its own.
	args := []string{"test", "-json", "-count=1", "-p", "1", "-timeout", *timeout}
	if *run != "" {
		args = append(args, "-run", *run)
	}
	args = append(args, pkgs...)
	cmd := exec.Command("go", args...)
	cmd.Stderr = os.Stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		fmt.Fprintln(os.Stderr, "compat:", err)
		os.Exit(1)
	}
	if err := cmd.Start(); err != nil {
		fmt.Fprintln(os.Stderr, "compat:", err)
		os.Exit(1)
	}
	m := newMatrix()
	m.read(out)
	testErr := cmd.Wait()
	m.print(os.Stdout)
	if testErr != nil || m.failed {
		fmt.Fprintln(os.Stderr, "compat: some cases failed (see above):", testErr)
		os.Exit(1)
	}
}

// matrix is CLI x case -> results of the subtests.
type matrix struct {
	cells  map[string]map[string]*cell
	output map[string][]string // each test's output so far
	failed bool
}

type cell struct{ pass, fail, skip int }

func (c *cell) String() string {
	switch {
	case c == nil:
		return "–"
	case c.fail > 0:
		return fmt.Sprintf("**FAIL** (%d of %d)", c.fail, c.pass+c.fail)
	case c.pass > 0:
		return "pass"
	}
	return "skip"
}

func newMatrix() *matrix {
	return &matrix{cells: map[string]map[string]*cell{}, output: map[string][]string{}}
}

// read consumes go test -json, echoing each test's verdict as it comes.
func (m *matrix) read(r io.Reader) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 1<<20), 16<<20)
	for sc.Scan() {
		var e event
		if json.Unmarshal(sc.Bytes(), &e) != nil {
			continue
		}
		if e.Action == "output" {
			m.output[e.Test] = append(m.output[e.Test], e.Output)
		}
		if e.Action == "fail" {
			// What the test said, so that a failure is not just a name.
			fmt.Fprint(os.Stderr, strings.Join(m.output[e.Test], ""))
		}
		if e.Action != "pass" && e.Action != "fail" && e.Action != "skip" || e.Test == "" {
			continue
		}
		clis, name := m.place(e.Package, e.Test)
		if len(clis) == 0 {
			continue
		}
		fmt.Fprintf(os.Stderr, "%-5s %s\n", e.Action, e.Test)
		for _, cli := range clis {
			m.count(cli, name, e.Action)
		}
	}
}

func (m *matrix) count(cli, name, action string) {
	if m.cells[cli] == nil {
		m.cells[cli] = map[string]*cell{}
	}
	c := m.cells[cli][name]
	if c == nil {
		c = &cell{}
		m.cells[cli][name] = c
	}
	switch action {
	case "pass":
		c.pass++
	case "fail":
		c.fail++
		m.failed = true
	case "skip":
		c.skip++
	}
}

// place says which CLIs and case a leaf test belongs to. In e2e/clis the
// CLI is the first subtest's name; every test of e2e/claude is Claude
// Code's own; e2e/mcplive's is both Claude Code's and Codex's. Parent
// tests are not counted, only their leaves.
func (m *matrix) place(pkg, test string) (clis []string, name string) {
	parts := strings.Split(test, "/")
	switch {
	case strings.HasSuffix(pkg, "/e2e/claude"):
		return []string{clisharness.Claude}, ownCase
	case strings.HasSuffix(pkg, "/e2e/mcplive"):
		return []string{clisharness.Claude, clisharness.Codex}, mcpCase
	}
	i := slices.IndexFunc(cases, func(c struct{ test, name string }) bool { return c.test == parts[0] })
	if i < 0 {
		return nil, ""
	}
	// Leaves only: TestLiveBusy/codex/24-256, or TestLiveHooks/codex.
	depth := 3
	if parts[0] == "TestLiveWrapperThenExited" || parts[0] == "TestLiveHooks" {
		depth = 2
	}
	if len(parts) != depth {
		return nil, ""
	}
	return []string{parts[1]}, cases[i].name
}

// print writes the Markdown table, with each CLI's version.
func (m *matrix) print(w io.Writer) {
	header := []string{"CLI", "version"}
	for _, c := range cases {
		header = append(header, c.name)
	}
	header = append(header, mcpCase, ownCase)
	fmt.Fprintf(w, "\n| %s |\n|%s\n", strings.Join(header, " | "), strings.Repeat("---|", len(header)))
	for _, cli := range clisharness.All {
		row := m.cells[cli]
		if row == nil {
			continue
		}
		cols := []string{cli, version(cli)}
		for _, c := range cases {
			cols = append(cols, row[c.name].String())
		}
		cols = append(cols, row[mcpCase].String(), row[ownCase].String())
		fmt.Fprintf(w, "| %s |\n", strings.Join(cols, " | "))
	}
}

// version is the CLI's --version, as the tests found it.
func version(cli string) string {
	exe, err := clisharness.Find(cli)
	if err != nil {
		return "?"
	}
	v, err := clisharness.Version(exe)
	if err != nil {
		return "?"
	}
	return strings.ReplaceAll(v, "|", "/")
}
