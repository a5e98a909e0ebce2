// Command gendocs writes agentmsg's man pages, generated from its cobra
// command tree, its shell completions (what agentmsg completion prints)
// and the licenses of the modules built into it, for the release
// archives: DIR/man/agentmsg*.1, DIR/completions/agentmsg.{bash,zsh,fish}
// and DIR/THIRD_PARTY_LICENSES. .goreleaser.yaml runs it before the build,
// from the repository's root:
//
//	go run ./internal/gendocs -version 1.2.3 -date 2026-12-07T10:00:00Z DIR
package main

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/cobra/doc"

	"github.com/agentmsg/agentmsg/cmd"
)

func main() {
	version := flag.String("version", "dev", "the version the pages name")
	date := flag.String("date", "", "the date the pages carry (RFC 3339; default: now), for builds that come out the same")
	flag.Parse()
	if flag.NArg() != 1 {
		fmt.Fprintln(os.Stderr, "usage: gendocs [-version V] [-date RFC3339] DIR")
		os.Exit(2)
	}
	if err := run(flag.Arg(0), *version, *date); err != nil {
		fmt.Fprintln(os.Stderr, "gendocs:", err)
		os.Exit(1)
	}
}

func run(dir, version, date string) error {
	when := time.Now().UTC()
	if date != "" {
		t, err := time.Parse(time.RFC3339, date)
		if err != nil {
			return fmt.Errorf("-date: %w", err)
		}
		when = t.UTC()
	}
	man, comp := filepath.Join(dir, "man"), filepath.Join(dir, "completions")
	for _, d := range []string{man, comp} {
		// Made anew: no page of a command that has gone stays behind.
		if err := os.RemoveAll(d); err != nil {
			return err
		}
		if err := os.MkdirAll(d, 0o755); err != nil {
			return err
		}
	}
	root := cmd.NewCmdRoot(factory(&bytes.Buffer{}))
	walk(root, func(c *cobra.Command) { c.DisableAutoGenTag = true })
	header := &doc.GenManHeader{Title: "AGENTMSG", Section: "1", Date: &when,
		Source: "agentmsg " + strings.TrimPrefix(version, "v"), Manual: "agentmsg manual"}
	if err := doc.GenManTree(root, header, man); err != nil {
		return fmt.Errorf("man pages: %w", err)
	}
	for _, shell := range []string{"bash", "zsh", "fish"} {
		var out bytes.Buffer
		if code := cmd.Run(context.Background(), factory(&out), []string{"completion", shell}); code != 0 {
			return fmt.Errorf("agentmsg completion %s exited %d", shell, code)
		}
		if err := os.WriteFile(filepath.Join(comp, "agentmsg."+shell), out.Bytes(), 0o644); err != nil {
			return err
		}
	}
	return notices(filepath.Join(dir, "THIRD_PARTY_LICENSES"))
}

// notices writes the license of every module agentmsg's binary is built
// from (go list -deps), each under its path and version: MIT, BSD and
// Apache 2.0 licenses all ask for their text to go with the binary.
func notices(path string) error {
	out, err := exec.Command("go", "list", "-deps", "-f", "{{with .Module}}{{.Path}}\t{{.Version}}\t{{.Dir}}{{end}}", "github.com/agentmsg/agentmsg").Output()
	if err != nil {
		return fmt.Errorf("go list: %w", err)
	}
	var b bytes.Buffer
	b.WriteString("agentmsg is built from these modules besides its own; each one's license follows.\n")
	seen := map[string]bool{}
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	slices.Sort(lines)
	for _, line := range lines {
		f := strings.SplitN(line, "\t", 3)
		if len(f) != 3 {
			continue
		}
		mod, ver, dir := f[0], f[1], f[2]
		if mod == "" || seen[mod] || mod == "github.com/agentmsg/agentmsg" {
			continue
		}
		seen[mod] = true
		text, name, err := licenseIn(dir)
		if err != nil {
			return fmt.Errorf("%s %s: %w", mod, ver, err)
		}
		fmt.Fprintf(&b, "\n%s\n%s %s (%s)\n\n%s\n", strings.Repeat("=", 78), mod, ver, name, strings.TrimSpace(text))
	}
	return os.WriteFile(path, b.Bytes(), 0o644)
}

// licenseIn reads the license file at the top of a module's directory.
func licenseIn(dir string) (text, name string, err error) {
	ents, err := os.ReadDir(dir)
	if err != nil {
		return "", "", err
	}
	for _, e := range ents {
		n := strings.ToUpper(e.Name())
		if strings.HasPrefix(n, "LICENSE") || strings.HasPrefix(n, "LICENCE") || strings.HasPrefix(n, "COPYING") {
			b, err := os.ReadFile(filepath.Join(dir, e.Name()))
			return string(b), e.Name(), err
		}
	}
	return "", "", errors.New("no license file")
}

// factory is a CLI whose output goes to out, and that reads nothing of the
// environment: the pages must not depend on who builds them.
func factory(out *bytes.Buffer) *cmd.Factory {
	return cmd.NewFactory(&cmd.IOStreams{In: strings.NewReader(""), Out: out, ErrOut: os.Stderr},
		func(string) (string, bool) { return "", false })
}

func walk(c *cobra.Command, fn func(*cobra.Command)) {
	fn(c)
	for _, sub := range c.Commands() {
		walk(sub, fn)
	}
}
