package cmd

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"time"

	"github.com/agentmsg/agentmsg/internal/textdiff"
)

// installHelp is what every install command does with its file, for --help.
const installHelp = `The file is written at once, atomically and keeping its mode: the old one
is first copied to FILE.bak-YYYYMMDD-HHMMSS beside it, and the change is shown
as a diff. A file that already holds what would be written is left alone (no
backup). --print prints the file as it would be written and writes nothing;
--json prints {cli, path, changed, written, backup, diff} (with --print also
content).`

// installReport is what an install command did to its settings file.
type installReport struct {
	CLI     string `json:"cli"`
	Path    string `json:"path"`
	Changed bool   `json:"changed"` // the file differs from what it would be
	Written bool   `json:"written"`
	Backup  string `json:"backup,omitempty"` // the old file, copied before the write
	Diff    string `json:"diff,omitempty"`
	Content string `json:"content,omitempty"` // --print: the file as it would be
}

// installFile makes path hold merged (old is its current content, nil when
// there is none): with print it only reports; otherwise it backs the old
// file up and writes merged. mcp install and hooks install go through it,
// so that both behave alike.
func installFile(cli, path string, old, merged []byte, print bool, now time.Time) (installReport, error) {
	rep := installReport{CLI: cli, Path: path, Changed: !bytes.Equal(old, merged)}
	if rep.Changed {
		rep.Diff = textdiff.Unified(path, path, string(old), string(merged))
	}
	if print {
		rep.Content = string(merged)
		return rep, nil
	}
	if !rep.Changed {
		return rep, nil
	}
	if old != nil {
		b, err := backupFile(path, old, now)
		if err != nil {
			return rep, fmt.Errorf("backing up %s (nothing was written): %w", path, err)
		}
		rep.Backup = b
	}
	if err := writeFileKeepMode(path, merged); err != nil {
		return rep, err
	}
	rep.Written = true
	return rep, nil
}

// backupFile copies data, path's content, to a new file beside it named by
// now, with path's mode; it never replaces an earlier backup.
func backupFile(path string, data []byte, now time.Time) (string, error) {
	mode := os.FileMode(0o600)
	if fi, err := os.Stat(path); err == nil {
		mode = fi.Mode().Perm()
	}
	base := path + ".bak-" + now.Format("20060102-150405")
	for i := 1; ; i++ {
		name := base
		if i > 1 {
			name = fmt.Sprintf("%s-%d", base, i)
		}
		f, err := os.OpenFile(name, os.O_WRONLY|os.O_CREATE|os.O_EXCL, mode)
		if errors.Is(err, os.ErrExist) && i < 100 {
			continue
		}
		if err != nil {
			return "", err
		}
		_, err = f.Write(data)
		if err == nil {
			err = f.Sync()
		}
		if cerr := f.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			os.Remove(name)
			return "", err
		}
		return name, nil
	}
}

// printInstall reports rep for a person: the diff and what was done, or
// with print the file as it would be (on stdout, for a pipe). done is the
// sentence for a write.
func printInstall(io *IOStreams, rep installReport, print bool, done string) error {
	if print {
		fmt.Fprintf(io.ErrOut, "# %s as agentmsg would write it (nothing written; run again without --print to write it)\n", rep.Path)
		_, err := io.Out.Write([]byte(rep.Content))
		return err
	}
	if !rep.Changed {
		fmt.Fprintf(io.Out, "%s already holds agentmsg's settings: nothing written\n", rep.Path)
		return nil
	}
	fmt.Fprint(io.Out, rep.Diff)
	if rep.Backup != "" {
		fmt.Fprintf(io.Out, "the old file is kept as %s\n", rep.Backup)
	}
	fmt.Fprintln(io.Out, done)
	return nil
}
