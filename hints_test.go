package main

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/agentmsg/agentmsg/cmd"
)

// hintText is a command agentmsg suggests in what it prints: "agentmsg "
// then a command word, up to where the sentence goes on.
var hintText = regexp.MustCompile(`agentmsg ((?:--?[a-z-]+ )*[a-z][a-z-]+(?: [^;:()"\n|&'>]*)?)`)

// Every command agentmsg suggests in what it prints names a command it
// has, with flags that command takes (issue 31, item 7: a hint that could
// not work). Each literal in the code that suggests one is parsed against
// the command tree; what the words mean is run by the tests of each hint
// (e2e TestASuggestedLogCommandAnswers runs the one a send to a host that
// is down prints).
func TestEverySuggestedCommandExists(t *testing.T) {
	root := cmd.NewCmdRoot(cmd.NewFactory(&cmd.IOStreams{}, func(string) (string, bool) { return "", false }))
	for words, bad := range map[string]bool{"log --id MSG_X_00000000": false, "log --idd MSG_X_00000000": true,
		"--team alpha --from ana heartbeat -q": false, "status set --working-on x": false, "status set --working x": true} {
		if got := suggestion(root, words); (got != "") != bad {
			t.Errorf("agentmsg %s: %q; the check is wrong", words, got)
		}
	}
	fset := token.NewFileSet()
	checked := 0
	err := filepath.WalkDir(".", func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && path != "." && (strings.HasPrefix(d.Name(), ".") || d.Name() == "e2e" || d.Name() == "testdata" || d.Name() == "internal" || d.Name() == "scripts") {
			return filepath.SkipDir
		}
		if d.IsDir() || !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return nil
		}
		f, err := parser.ParseFile(fset, path, nil, 0)
		if err != nil {
			return err
		}
		ast.Inspect(f, func(n ast.Node) bool {
			lit, ok := n.(*ast.BasicLit)
			if !ok || lit.Kind != token.STRING {
				return true
			}
			s, err := strconv.Unquote(lit.Value)
			if err != nil {
				return true
			}
			for _, m := range hintText.FindAllStringSubmatch(s, -1) {
				if problem := suggestion(root, m[1]); problem != "" {
					t.Errorf("%s: \"agentmsg %s\": %s", fset.Position(lit.Pos()), m[1], problem)
				}
				checked++
			}
			return true
		})
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if checked < 20 {
		t.Fatalf("only %d suggested commands found: the pattern no longer finds them", checked)
	}
}

// suggestion says what is wrong with the command line words suggests, ""
// when the tree has its command and every flag it names. Words that do
// not begin with a command (or a flag) are prose ("agentmsg was built
// without ...").
func suggestion(root *cobra.Command, words string) string {
	fields := strings.Fields(words)
	c := root
	args := false // an argument came: what follows is no subcommand
	for i := 0; i < len(fields); i++ {
		w := strings.TrimRight(fields[i], ".,")
		if w != fields[i] {
			fields = fields[:i+1] // the sentence goes on after it
		}
		if w == "--" || w == "-" {
			break // the message follows, or comes on stdin
		}
		if w == "--help" || w == "-h" {
			continue
		}
		if strings.HasPrefix(w, "-") {
			name, _, hasValue := strings.Cut(strings.TrimLeft(w, "-"), "=")
			fl := lookupFlag(c, root, name)
			if fl == nil {
				return c.CommandPath() + " takes no flag " + w
			}
			if fl.Value.Type() != "bool" && !hasValue {
				i++ // its value
			}
			continue
		}
		if args {
			continue
		}
		next, _, err := c.Find([]string{w})
		if err != nil || next == c || next.Name() != w && !next.HasAlias(w) {
			if c == root {
				if w == "help" {
					return ""
				}
				return "" // prose, not a command
			}
			args = true
			continue
		}
		c = next
	}
	return ""
}

// lookupFlag is the flag name (or shorthand) of c, or of the root.
func lookupFlag(c, root *cobra.Command, name string) *pflag.Flag {
	for _, fs := range []*pflag.FlagSet{c.Flags(), c.InheritedFlags(), c.PersistentFlags(), root.PersistentFlags()} {
		if fl := fs.Lookup(name); fl != nil {
			return fl
		}
		if len(name) == 1 {
			if fl := fs.ShorthandLookup(name); fl != nil {
				return fl
			}
		}
	}
	return nil
}
