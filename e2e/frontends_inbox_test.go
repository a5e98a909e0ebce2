package e2e

import (
	"encoding/json"
	"slices"
	"testing"

	"github.com/agentmsg/agentmsg/e2e/harness"
	"github.com/agentmsg/agentmsg/mailbox"
	"github.com/agentmsg/agentmsg/mcpserver"
	"github.com/agentmsg/agentmsg/message"
)

// The CLI (as ana) and MCP (as bob) read the same inbox contents through
// the same steps: a filtered wait, a wait for a type no message can have
// (MCP used to wait the whole timeout for it; the CLI refused it, as both
// do now), a wait that times out, and two reads. Every verdict matches.
func TestCLIAndMCPAgreeOnReadingAnInbox(t *testing.T) {
	t.Parallel()
	s := harness.NewTestServer(t)
	store := mailboxOf(s)
	seed := []struct {
		from    string
		typ     mailbox.Type
		content string
	}{{"lead", mailbox.TypeStatus, "build green"}, {"carol", mailbox.TypeText, "lunch?"}, {"lead", mailbox.TypeText, "review PR 7"}}
	for _, to := range []string{"ana", "bob"} {
		b, err := store.Box("t", to)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range seed {
			sender, _ := message.Sender(m.from)
			id, err := message.NewID(sender, nil)
			if err != nil {
				t.Fatal(err)
			}
			if err := b.Append(mailbox.Envelope{ID: id, From: m.from, To: to, Type: m.typ, Content: m.content}); err != nil {
				t.Fatal(err)
			}
		}
	}
	cli := func(args ...string) harness.Result {
		return s.Run(append([]string{"--team", "t", "--from", "ana", "--json"}, args...)...)
	}
	bob := startMCP(t, s, "bob", false)

	// A filtered wait takes the first match.
	res := cli("wait", "--sender", "lead", "--type", "text", "--timeout", "5s")
	var cliGot mailbox.Envelope
	if res.Code != 0 || json.Unmarshal([]byte(res.Stdout), &cliGot) != nil {
		t.Fatalf("CLI wait:\n%s", res)
	}
	var mcpGot mcpserver.WaitOutput
	bob.call(t, "wait_for_message", map[string]any{"from": "lead", "type": "text", "timeout_seconds": 5}, &mcpGot)
	if mcpGot.TimedOut || mcpGot.Message == nil || mcpGot.Message.Content != cliGot.Content || cliGot.Content != "review PR 7" {
		t.Fatalf("CLI waited for %q, MCP for %+v", cliGot.Content, mcpGot)
	}

	// A type no message can have is refused by both, at once.
	if res := cli("wait", "--type", "Claim!", "--timeout", "1s"); res.Code != 2 {
		t.Errorf("CLI wait --type Claim!: want exit 2\n%s", res)
	}
	var bad mcpserver.WaitOutput
	if err := bob.try(t.Context(), "wait_for_message", map[string]any{"type": "Claim!", "timeout_seconds": 1}, &bad); err == nil {
		t.Errorf("MCP wait_for_message type Claim!: want a tool error, got %+v", bad)
	}

	// Nothing from nobody: a timeout for both.
	if res := cli("wait", "--sender", "nobody", "--timeout", "200ms"); res.Code != 7 {
		t.Errorf("CLI wait --sender nobody: want exit 7\n%s", res)
	}
	var none mcpserver.WaitOutput
	bob.call(t, "wait_for_message", map[string]any{"from": "nobody", "timeout_seconds": 0.2}, &none)
	if !none.TimedOut || none.Message != nil {
		t.Errorf("MCP wait for nobody: %+v", none)
	}

	// Both reads see the same unread messages (the cursor never passed the
	// two the wait skipped), then nothing.
	for round := range 2 {
		res := cli("inbox")
		var doc struct {
			Messages []mailbox.Envelope `json:"messages"`
		}
		if res.Code != 0 || json.Unmarshal([]byte(res.Stdout), &doc) != nil {
			t.Fatalf("CLI inbox:\n%s", res)
		}
		var cliContents, mcpContents []string
		for _, e := range doc.Messages {
			cliContents = append(cliContents, e.Content)
		}
		var check mcpserver.CheckOutput
		bob.call(t, "check_messages", nil, &check)
		for _, m := range check.Messages {
			mcpContents = append(mcpContents, m.Content)
		}
		want := []string{"build green", "lunch?", "review PR 7"}
		if round == 1 {
			want = nil
		}
		if !slices.Equal(cliContents, want) || !slices.Equal(mcpContents, want) || check.Count != len(want) {
			t.Errorf("read %d: CLI %q, MCP %q (count %d); want %q", round, cliContents, mcpContents, check.Count, want)
		}
	}
}
