package mcpserver

import (
	"slices"
	"strings"
	"testing"
)

// send_message's metadata is typed with the message, so it is cleaned like
// the message: nothing in it can end the paste or submit a second prompt.
func TestSendMetadataIsCleaned(t *testing.T) {
	t.Parallel()
	tm := newTeam(t, "ana")
	lead, ana := tm.as("lead", false), tm.as("ana", false)
	var sent SendOutput
	lead.call("send_message", map[string]any{"to": "ana", "content": "body",
		"metadata": map[string]string{"k\x1b[31m": "v1\x1b[201~\rINJECTED\r"}}, &sent)
	want := []string{sent.MessageID + ": k=v1INJECTED body"}
	if got := tm.tmux.Received("agent-t-ana"); !slices.Equal(got, want) {
		t.Fatalf("ana's pane got %q, want %q", got, want)
	}
	var got Message
	ana.call("read_message", map[string]any{"message_id": sent.MessageID}, &got)
	if len(got.Metadata) != 1 || got.Metadata["k"] != "v1INJECTED" {
		t.Fatalf("stored metadata: %+v", got)
	}
}

// wait_for_message's from takes a sender in the spellings --from does, and
// refuses what no sender can be.
func TestWaitFromIsCanonical(t *testing.T) {
	t.Parallel()
	tm := newTeam(t, "ana")
	lead, ana := tm.as("lead", false), tm.as("ana", false)
	tm.tmux.SetDialog("agent-t-ana", true) // not typed into her pane: news to her
	lead.call("send_message", map[string]any{"to": "ana", "content": "hello"}, nil)
	var w WaitOutput
	ana.call("wait_for_message", map[string]any{"from": "LEAD", "timeout_seconds": 1}, &w)
	if w.TimedOut || w.Message == nil || w.Message.From != "lead" {
		t.Fatalf("wait from LEAD: %+v", w)
	}
	if got := ana.callErr("wait_for_message", map[string]any{"from": "Bad Name", "timeout_seconds": 1}); !strings.Contains(got, "Bad Name") {
		t.Errorf("wait from \"Bad Name\": %q", got)
	}
}

// An agent reads its own mail and what it sent, never another agent's by
// an id it saw in passing; the lead (orchestrator) reads any.
func TestReadMessageIsAnAgentsOwn(t *testing.T) {
	t.Parallel()
	tm := newTeam(t, "ana", "bob")
	lead, ana, bob := tm.as("lead", false), tm.as("ana", false), tm.as("bob", false)
	var toBob SendOutput
	lead.call("send_message", map[string]any{"to": "bob", "content": "for bob alone"}, &toBob)
	var got Message
	bob.call("read_message", map[string]any{"message_id": toBob.MessageID}, &got)
	lead.call("read_message", map[string]any{"message_id": toBob.MessageID}, &got)
	if msg := ana.callErr("read_message", map[string]any{"message_id": toBob.MessageID}); !strings.Contains(msg, "no inbox holds it") || strings.Contains(msg, "for bob alone") {
		t.Errorf("ana read bob's message: %q", msg)
	}
	tm.as("boss", true).call("read_message", map[string]any{"message_id": toBob.MessageID}, &got)
	if got.Content != "for bob alone" {
		t.Errorf("the orchestrator read %+v", got)
	}
}
