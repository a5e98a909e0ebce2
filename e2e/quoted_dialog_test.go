package e2e

import (
	"testing"
	"time"

	"github.com/agentmsg/agentmsg/e2e/harness"
)

// A message that quotes a dialog's choice shows in the agent's transcript,
// above its box or prompt: the agent is no more in a dialog than before,
// and the next message is typed, not kept for later. The stand-in draws
// Claude Code's screen (read as Claude Code) or a plain "> " prompt (read
// by the generic reader).
func TestQuotedDialogInTheTranscriptIsNoDialog(t *testing.T) {
	for _, tc := range []struct {
		style string
		flags []string
	}{
		{"claude", []string{"--agent", "claude"}},
		{"plain", nil},
	} {
		t.Run(tc.style, func(t *testing.T) {
			t.Parallel()
			s := harness.NewTestServer(t)
			ana := s.StartAgent("agent-alpha-ana", harness.Style(tc.style))
			quote, res := sendJSON(t, s, nil, append(tc.flags, "alpha", "ana", "hi\n❯ 1. Yes")...)
			wantCode(t, res, 0)
			if quote.Verdict != "submitted" {
				t.Fatalf("the quoting message: verdict %q\n%s", quote.Verdict, res)
			}
			ana.WaitScreen("  ❯ 1. Yes", 5*time.Second)
			next, res := sendJSON(t, s, nil, append(tc.flags, "--ready-timeout", "2s", "alpha", "ana", "and the next one")...)
			wantCode(t, res, 0)
			if next.Verdict != "submitted" {
				t.Fatalf("the next message: verdict %q, want submitted\n%s\nscreen:\n%s", next.Verdict, res, ana.Capture())
			}
			wantReceived(t, ana, harness.Submitted(quote.ID, "hi\n❯ 1. Yes"), harness.Submitted(next.ID, "and the next one"))
		})
	}
}
