package cmd

import (
	"strings"
	"testing"

	"github.com/agentmsg/agentmsg/mailbox"
)

// The types help is made from mailbox.Protocol, so it names every type and
// every value a type needs, and reads as it always has.
func TestTypesHelpFollowsTheProtocol(t *testing.T) {
	const want = `Message types (--type; the agent sees "[type] key=value ... text"):
  text               plain text (the default)
  status             a status update; needs --meta state=idle|working|blocked|pr_pending|complete|failed
  shutdown-request   lead to agent: finish up and stop
  shutdown-response  agent to lead; needs --meta accept=true|false (false: defer while finishing)
  plan               agent to lead: a plan for approval
  plan-approval      lead to agent; needs --meta approve=true|false
  task               lead to agent: a task assignment`
	if typesHelp != want {
		t.Errorf("typesHelp:\n%s\nwant:\n%s", typesHelp, want)
	}
	for _, typ := range mailbox.TypeNames() {
		if !strings.Contains(typesHelp, "\n  "+typ+" ") {
			t.Errorf("typesHelp does not name type %s", typ)
		}
	}
	if got := strings.Join(statusStates, "|"); !strings.Contains(typesHelp, "state="+got+"\n") {
		t.Errorf("status set's states %s are not the protocol's", got)
	}
}
