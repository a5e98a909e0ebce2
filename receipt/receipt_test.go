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

func TestRecordAndHas(t *testing.T) {
	l := &Log{Path: filepath.Join(t.TempDir(), "sub", "receipts.log")}
	if l.Has("MSG_A_00000001") {
		t.Fatal("Has before any Record")
	}
	var wg sync.WaitGroup
	for i := range 20 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := (&Log{Path: l.Path}).Record(message.ID(fmt.Sprintf("MSG_A_%08x", i))); err != nil {
				t.Error(err)
			}
		}()
	}
	wg.Wait()
	for i := range 20 {
		if id := message.ID(fmt.Sprintf("MSG_A_%08x", i)); !l.Has(id) {
			t.Errorf("%s not found", id)
		}
	}
	// A prefix of a recorded id is not a receipt.
	if l.Has("MSG_A_0000000") {
		t.Error("a prefix matched")
	}
}
