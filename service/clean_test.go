package service

import (
	"context"
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/agentmsg/agentmsg/delivery"
	"github.com/agentmsg/agentmsg/mailbox"
	"github.com/agentmsg/agentmsg/message"
	"github.com/agentmsg/agentmsg/tmux/tmuxtest"
)

// The cleanings on a send's path, and what each is for. The text is
// cleaned (message.Clean) twice on its way to a pane: by
// dispatch.NewMessage, when service.Send stamps it, and by
// delivery.Deliver (message.Format), as it is typed. Neither is
// redundant, and these tests say why:
//
//   - Deliver's is the one on every path to a pane: delivery is the only
//     code that pastes (TestOnlyDeliveryPastes), and it cleans whatever it
//     is given, a text from the inbox too, which another writer than Send
//     may have left raw (TestDeliverCleansWhatTheInboxHolds). It keeps
//     the rule "every text typed goes through message.Clean" true.
//   - NewMessage's changes nothing of what is typed (Clean is idempotent,
//     FuzzClean in message), but it is what the inbox records, and what
//     says a text is empty once cleaned (dispatch's TestSendRefusesEmpty):
//     without it the mailbox, --json, the API and the events would carry
//     the raw text (TestSendRecordsAndTypesTheCleanedText).
//
// Metadata is cleaned to one line (message.CleanLine, in Envelope) for the
// same two reasons: what is recorded, and a key or value that stays on one
// line when it is typed before the text.
const dirty = "look\x1b[31m here\x1b[0m\r\x1b[201~\x03 now\u009b1m\x7f\n\n"

func TestSendRecordsAndTypesTheCleanedText(t *testing.T) {
	clean := message.Clean(dirty)
	if clean == dirty || message.Clean(clean) != clean {
		t.Fatalf("Clean(%q) = %q: the test wants a text that cleaning changes, once", dirty, clean)
	}
	srv := tmuxtest.New("agent-alpha-ana")
	s, _ := deliverService(t, srv, "lead", "", 50*time.Millisecond)
	res, err := s.Send(context.Background(), SendRequest{To: to(t, "ana"), Draft: Draft{Text: dirty}, Delivery: Delivery{Queue: true}})
	if err != nil || res.Verdict != delivery.Submitted {
		t.Fatalf("Send = %+v, %v", res, err)
	}
	env, _, err := s.Store.History("alpha", "ana", res.ID)
	if err != nil || env.Content != clean {
		t.Fatalf("ana's inbox records %q (%v), want the cleaned %q", env.Content, err, clean)
	}
	// What was typed is the same whether or not it was cleaned before:
	// Format cleans again, and cleaning a clean text changes nothing.
	if got := srv.Received("agent-alpha-ana"); len(got) != 1 || got[0] != message.Format(res.ID, clean) || got[0] != message.Format(res.ID, dirty) {
		t.Fatalf("ana received %q, want %q", got, message.Format(res.ID, clean))
	}
}

func TestDeliverCleansWhatTheInboxHolds(t *testing.T) {
	srv := tmuxtest.New("agent-alpha-ana")
	s, _ := deliverService(t, srv, "lead", "", 50*time.Millisecond)
	box, err := s.Store.Box("alpha", "ana")
	if err != nil {
		t.Fatal(err)
	}
	// As an older agentmsg, or a person editing the file, might leave it.
	const id = message.ID("MSG_LEAD_0000beef")
	if err := box.Append(mailbox.Envelope{ID: id, From: "lead", To: "ana", Type: mailbox.TypeText, Content: dirty,
		Timestamp: time.Now().UTC(), Delivery: &mailbox.Delivery{State: mailbox.StatePending}}); err != nil {
		t.Fatal(err)
	}
	res, err := s.Deliver(context.Background(), DeliverRequest{Team: "alpha"})
	if err != nil || res.Delivered() != 1 || res.Typed[0].Verdict == delivery.Deferred {
		t.Fatalf("Deliver = %+v, %v; want the message typed", res, err)
	}
	want := string(id) + ": " + message.Clean(dirty)
	if got := srv.Received("agent-alpha-ana"); len(got) != 1 || got[0] != want {
		t.Fatalf("ana received %q, want %q", got, want)
	}
}

// Only delivery pastes into a pane (tmux/ carries it out): every path to
// a pane goes through delivery.Deliver, which cleans what it types.
func TestOnlyDeliveryPastes(t *testing.T) {
	root := ".."
	fset := token.NewFileSet()
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, path)
		if d.IsDir() {
			if rel == "tmux" || rel == "e2e" || rel == "vendor" || strings.HasPrefix(d.Name(), ".") && rel != "." {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return nil
		}
		f, err := parser.ParseFile(fset, path, nil, 0)
		if err != nil {
			return err
		}
		ast.Inspect(f, func(n ast.Node) bool {
			call, ok := n.(*ast.CallExpr)
			if !ok {
				return true
			}
			if sel, ok := call.Fun.(*ast.SelectorExpr); ok && (sel.Sel.Name == "Paste" || sel.Sel.Name == "SendBytes") && filepath.Dir(rel) != "delivery" {
				t.Errorf("%s: %s is called outside delivery, which cleans what it types", fset.Position(call.Pos()), sel.Sel.Name)
			}
			return true
		})
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}
