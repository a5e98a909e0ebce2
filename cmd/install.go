package cmd

import (
	"errors"
	"fmt"
	"path/filepath"
	"strings"

	"github.com/spf13/cobra"

	"github.com/agentmsg/agentmsg/integration"
)

// installHelp is what every install command does with its file, for --help.
const installHelp = `The file is written at once, atomically and keeping its mode: the old one
is first copied to FILE.bak-YYYYMMDD-HHMMSS beside it, and the change is shown
as a diff. Everything else in the file stays exactly as it was (the order of
its keys, its indentation and spacing, every comment and blank line); what is
added follows the file's indentation. A file that already holds what would be
written is left alone (no backup). A file that is a symbolic link (into a
dotfiles folder) is written through it: the file it leads to changes, the link
stays; a link to nothing is refused. When the agent CLI (or anything else)
changes the file while it is being written, the install merges into that
change, or leaves it standing and says why: no one's setting is lost. --print
prints the file as it would be written and writes nothing; --json prints
{cli, path, target, changed, written, backup, diff} (with --print also
content).`

// serverArgs are the -S / -L given on this command line ("-S", absolute
// path or "-L", name), to pass on to what the agent CLI will run.
func serverArgs(c *cobra.Command) []string {
	var out []string
	for _, f := range []struct{ flag, short string }{{"socket", "-S"}, {"socket-name", "-L"}} {
		if fl := c.Flag(f.flag); fl != nil && fl.Changed {
			v := fl.Value.String()
			if f.short == "-S" {
				if abs, err := filepath.Abs(v); err == nil {
					v = abs
				}
			}
			out = append(out, f.short, v)
		}
	}
	return out
}

// installErr words an integration error for the command line.
func installErr(err error) error {
	var me *integration.MergeError
	switch {
	case errors.Is(err, integration.ErrNoHome):
		return usagef("no home directory: give --home DIR")
	case errors.As(err, &me) && me.Snippet != "":
		return fmt.Errorf("%w (nothing was written; add this by hand:\n%s)", err, me.Snippet)
	case errors.As(err, &me):
		return fmt.Errorf("%w (nothing was written)", err)
	}
	return err
}

// printInstall reports rep for a person: the diff and what was done, or
// with print the file as it would be (on stdout, for a pipe). done is the
// sentence for a write.
func printInstall(io *IOStreams, rep integration.Report, print bool, done string) error {
	if print {
		fmt.Fprintf(io.ErrOut, "# %s as agentmsg would write it (nothing written; run again without --print to write it)\n", rep.Path)
		_, err := io.Out.Write([]byte(rep.Content))
		return err
	}
	if !rep.Changed {
		fmt.Fprintf(io.Out, "%s already holds agentmsg's settings: nothing written\n", rep.Path)
	} else {
		fmt.Fprint(io.Out, rep.Diff)
		if rep.Target != "" {
			fmt.Fprintf(io.Out, "%s is a symbolic link: the file it leads to, %s, was written (the link stays)\n", rep.Path, rep.Target)
		}
		if rep.Backup != "" {
			fmt.Fprintf(io.Out, "the old file is kept as %s\n", rep.Backup)
		}
		fmt.Fprintln(io.Out, done)
	}
	if rep.Note != "" {
		fmt.Fprintln(io.Out, rep.Note)
	}
	return nil
}

// orList is "a, b or c".
func orList(names []string) string {
	if len(names) < 2 {
		return strings.Join(names, "")
	}
	return strings.Join(names[:len(names)-1], ", ") + " or " + names[len(names)-1]
}
