package cmd

import (
	"bytes"
	"strings"
	"testing"

	"github.com/agentmsg/agentmsg/delivery"
	"github.com/agentmsg/agentmsg/dispatch"
	"github.com/agentmsg/agentmsg/target"
)

// A send that finds no box or prompt its profile knows says so at once,
// once per agent: which profile read the screen, and how to describe the
// program's prompt (on main it only said "unknown" for the whole wait).
func TestAWaitForAnUnknownScreenSaysHowToDescribeThePrompt(t *testing.T) {
	for _, inline := range []bool{false, true} {
		var out bytes.Buffer
		p := newWaitPrinter(&out, inline)
		w := dispatch.Wait{Target: target.Target{Team: "alpha", Name: "py", Session: "agent-alpha-py"},
			Profile: "generic", ProfileWhy: "unknown program ghci: generic", Command: "ghci",
			Wait: delivery.Wait{State: delivery.Unknown, Detail: "no prompt"}}
		p.wait(w)
		p.wait(w)
		p.done()
		got := out.String()
		for _, want := range []string{"alpha/py is read as profile generic (unknown program ghci: generic)",
			"[profiles.NAME]", `commands = ["ghci"]`, "prompt = 'PROMPT '", "agentmsg doctor alpha py", "--agent NAME"} {
			if !strings.Contains(got, want) {
				t.Errorf("inline %v: %q does not say %q", inline, got, want)
			}
		}
		if n := strings.Count(got, "[profiles.NAME]"); n != 1 {
			t.Errorf("inline %v: the hint came %d times", inline, n)
		}
	}
	var out bytes.Buffer
	newWaitPrinter(&out, false).wait(dispatch.Wait{Target: target.Target{Team: "alpha", Name: "x", Session: "agent-alpha-x"},
		Profile: "shell", Command: "bash", Wait: delivery.Wait{State: delivery.Unknown}})
	if !strings.Contains(out.String(), `commands = ["SCRIPT"]`) {
		t.Errorf("a shell's pane: %q should name the script, not every shell", out.String())
	}
	out.Reset()
	newWaitPrinter(&out, false).wait(dispatch.Wait{Target: target.Target{Team: "alpha", Name: "x", Session: "agent-alpha-x"},
		Profile: "claude", Wait: delivery.Wait{State: delivery.Busy}})
	if strings.Contains(out.String(), "profiles.") {
		t.Errorf("a busy agent got the hint: %q", out.String())
	}
}
