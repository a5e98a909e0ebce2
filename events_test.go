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

	"github.com/agentmsg/agentmsg/delivery"
	"github.com/agentmsg/agentmsg/eventlog"
	"github.com/agentmsg/agentmsg/mailbox"
)

// eventTypeText is a string that reads as an event's type.
var eventTypeText = regexp.MustCompile(`^(message|agent|events)\.[a-z_]+$`)

// The code writes no type of event that eventlog.Kinds (and so the API's
// document, one schema per type) does not list: every literal that reads
// as one is listed, no type is made by joining strings outside package
// eventlog (eventlog.MessageState and AgentState are the only ways), and
// every state those are given can be is a listed type.
func TestCodeWritesOnlyListedEventTypes(t *testing.T) {
	fset := token.NewFileSet()
	err := filepath.WalkDir(".", func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && (strings.HasPrefix(d.Name(), ".") || d.Name() == "e2e" || d.Name() == "testdata" || d.Name() == "node_modules") {
			return filepath.SkipDir
		}
		if d.IsDir() || !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return nil
		}
		f, err := parser.ParseFile(fset, path, nil, 0)
		if err != nil {
			return err
		}
		inEventlog := filepath.Dir(path) == "eventlog"
		ast.Inspect(f, func(n ast.Node) bool {
			switch n := n.(type) {
			case *ast.BasicLit:
				if n.Kind != token.STRING {
					return true
				}
				s, err := strconv.Unquote(n.Value)
				if err == nil && eventTypeText.MatchString(s) && !eventlog.Known(eventlog.Type(s)) && !inEventlog {
					t.Errorf("%s: %q reads as an event type that eventlog.Kinds does not list", fset.Position(n.Pos()), s)
				}
			case *ast.BinaryExpr:
				if lit, ok := n.X.(*ast.BasicLit); ok && n.Op == token.ADD && lit.Kind == token.STRING && !inEventlog {
					if s, _ := strconv.Unquote(lit.Value); s == "message." || s == "agent." || s == "events." {
						t.Errorf("%s: an event type made by joining strings: use eventlog.MessageState or AgentState", fset.Position(n.Pos()))
					}
				}
			}
			return true
		})
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}

	// What MessageState is given: a delivery state, a step of typing, a
	// verdict another host reports; AgentState: a screen state, exited.
	var messages []string
	for _, s := range mailbox.States {
		messages = append(messages, string(s.State))
	}
	for _, s := range []delivery.Step{delivery.Pasted, delivery.Unseen, delivery.Pressed} {
		messages = append(messages, string(s))
	}
	messages = append(messages, string(delivery.NotFound), string(delivery.VerdictUnknown))
	for _, s := range messages {
		if !eventlog.Known(eventlog.MessageState(s)) {
			t.Errorf("eventlog.MessageState(%q) is not a listed type", s)
		}
	}
	agents := []string{"exited"}
	for _, s := range delivery.States {
		if s.State != delivery.Locked && s.State != delivery.Gone { // never a screen the watcher reads
			agents = append(agents, string(s.State))
		}
	}
	for _, s := range agents {
		if !eventlog.Known(eventlog.AgentState(s)) {
			t.Errorf("eventlog.AgentState(%q) is not a listed type", s)
		}
	}
}
