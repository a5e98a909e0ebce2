package cmd

import (
	"strings"
	"testing"

	"github.com/agentmsg/agentmsg/mailbox"
)

// agentmsg request does what the MCP tool request_task does (issue 12):
// the description is cleaned like every text typed into a pane, and an
// agent that is on the status board but has no inbox yet is told too.
func TestRequestCleansAndTellsTheBoard(t *testing.T) {
	m := newMBHome(t)
	m.send("lead", "ana", mailbox.TypeText, "hi")
	m.want(m.run("bob", "status", "set", "--state", "working"), ExitOK)
	r := m.want(m.run("lead", "--json", "request", "alpha", "review\x1b[31m", "PR\x0012"), ExitOK)
	doc := decodeJSON[struct {
		RequestID   string   `json:"request_id"`
		Description string   `json:"description"`
		Notified    []string `json:"notified"`
	}](t, r.stdout)
	if doc.Description != "review PR12" || strings.Join(doc.Notified, ",") != "ana,bob" {
		t.Fatalf("request: %+v\n%s", doc, r)
	}
	list, err := m.store.Requests("alpha")
	if err != nil || len(list) != 1 || list[0].Description != "review PR12" {
		t.Fatalf("stored: %+v %v", list, err)
	}
}

// request writes inboxes; nothing is typed until a deliver (or a turn-end
// hook) runs: it said "told ana, bob", as if the agents had seen it.
func TestRequestSaysItRecordedAndWhatTypesIt(t *testing.T) {
	m := newMBHome(t)
	m.send("lead", "ana", mailbox.TypeText, "hi")
	r := m.want(m.run("lead", "request", "alpha", "review PR 12"), ExitOK)
	if strings.Contains(r.stderr, "told") || !strings.Contains(r.stderr, "recorded in the inboxes of ana; the next agentmsg deliver types it") {
		t.Errorf("request's report:\n%s", r)
	}
}
