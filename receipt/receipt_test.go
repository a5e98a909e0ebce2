package receipt

import (
	"fmt"
	"path/filepath"
	"sync"
	"testing"

	"github.com/agentmsg/agentmsg/message"
)

func TestFromPrompt(t *testing.T) {
	tests := []struct {
		prompt string
		want   message.ID
		ok     bool
	}{
		{"MSG_ANA_0123abcd: hello", "MSG_ANA_0123abcd", true},
		{"MSG_DEMO_LEAD_0123abcd: line 1\nline 2", "MSG_DEMO_LEAD_0123abcd", true},
		{"please see MSG_ANA_0123abcd: quoted", "", false},
		{"hello", "", false},
		{"MSG_ANA_0123ABCD: upper-case hex is not ours", "", false},
	}
	for _, tt := range tests {
		got, ok := FromPrompt(tt.prompt)
		if got != tt.want || ok != tt.ok {
			t.Errorf("FromPrompt(%q) = %q, %v; want %q, %v", tt.prompt, got, ok, tt.want, tt.ok)
		}
	}
}

var ana = Recipient{Pane: "%1", ServerPID: 100, Socket: "/tmp/tmux-0/default"}

func TestRecordAndHas(t *testing.T) {
	l := &Log{Path: filepath.Join(t.TempDir(), "sub", "receipts.log")}
	if l.Has("MSG_A_00000001", ana) {
		t.Fatal("Has before any Record")
	}
	var wg sync.WaitGroup
	for i := range 20 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := (&Log{Path: l.Path}).Record(message.ID(fmt.Sprintf("MSG_A_%08x", i)), ana); err != nil {
				t.Error(err)
			}
		}()
	}
	wg.Wait()
	for i := range 20 {
		if id := message.ID(fmt.Sprintf("MSG_A_%08x", i)); !l.Has(id, ana) {
			t.Errorf("%s not found", id)
		}
	}
	// A prefix of a recorded id is not a receipt.
	if l.Has("MSG_A_0000000", ana) {
		t.Error("a prefix matched")
	}
}

// A broadcast gives every copy one id: one agent's receipt proves its own
// copy, never another pane's, nor a pane of another server or of a server
// restarted at the same socket (issue 17, item 4).
func TestReceiptProvesOneRecipient(t *testing.T) {
	l := &Log{Path: filepath.Join(t.TempDir(), "receipts.log")}
	const id = "MSG_LEAD_0123abcd"
	if err := l.Record(id, ana); err != nil {
		t.Fatal(err)
	}
	if !l.Has(id, ana) {
		t.Fatal("the recipient's own receipt is not found")
	}
	for _, other := range []Recipient{
		{Pane: "%2", ServerPID: 100, Socket: ana.Socket},        // bob, beside ana
		{Pane: "%1", ServerPID: 101, Socket: ana.Socket},        // a restarted server's %1
		{Pane: "%1", ServerPID: 100, Socket: "/tmp/other/sock"}, // another server's %1
		{Pane: "%1", ServerPID: 100, Socket: ana.Socket + " x"}, // a longer socket path
	} {
		if l.Has(id, other) {
			t.Errorf("ana's receipt proves %+v's copy", other)
		}
	}
	if err := l.Record("MSG_LEAD_89abcdef", Recipient{}); err == nil {
		t.Error("a receipt without a recipient was recorded")
	}
}
