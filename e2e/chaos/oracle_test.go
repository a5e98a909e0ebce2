package chaos

import (
	"slices"
	"strings"
	"testing"
	"time"
)

// rules is the sorted rule names of vs, each once.
func rules(vs []Violation) []string {
	var out []string
	for _, v := range vs {
		if !slices.Contains(out, v.Rule) {
			out = append(out, v.Rule)
		}
	}
	slices.Sort(out)
	return out
}

func oneCopy(n int, text, id string, to *Program, c Copy) *Message {
	c.To = to
	if c.Content == "" && c.State != "" {
		c.Content = text
	}
	return &Message{N: n, Text: text, ID: id, Copies: []*Copy{&c}}
}

const (
	id1 = "MSG_LEAD_0000aaaa"
	id2 = "MSG_LEAD_0000bbbb"
)

func TestOracleRules(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	text1 := "zq1xL0 hello"
	lines1 := "zq1xL0 a\nzq1xL1 b\n/exit"
	tests := []struct {
		name        string
		copy        Copy
		text        string
		prompts     []string // of the recipient
		other       []string // of another program
		drafts      []string
		odd         []string
		restart     bool
		queueUnseen bool
		want        []string
	}{
		{name: "submitted and there once", copy: Copy{Verdict: "submitted", State: "submitted"}, prompts: []string{id1 + ": " + text1}},
		{name: "submitted, absent", copy: Copy{Verdict: "submitted", State: "submitted"}, want: []string{ruleClaimedAbsent}},
		{name: "deliver said submitted, absent", copy: Copy{Verdict: "deferred", State: "deferred", Delivers: []string{"submitted"}}, want: []string{ruleClaimedAbsent}},
		{name: "queued, the agent restarted with its queue", copy: Copy{Verdict: "queued", State: "queued", VerdictAt: t0}, restart: true},
		{name: "queued, absent", copy: Copy{Verdict: "queued", State: "queued", VerdictAt: t0}, want: []string{ruleClaimedAbsent}},
		{name: "twice", copy: Copy{Verdict: "submitted", State: "submitted"}, prompts: []string{id1 + ": " + text1, id1 + ": " + text1}, want: []string{ruleDoubled}},
		{name: "in another program", copy: Copy{Verdict: "submitted", State: "submitted"}, other: []string{id1 + ": " + text1}, want: []string{ruleClaimedAbsent, ruleMisdelivered}},
		{name: "a line of it elsewhere", copy: Copy{Verdict: "typed", State: "typed"}, other: []string{"zq1xL0 hello"}, want: []string{ruleMisdelivered}},
		{name: "line by line", text: lines1, copy: Copy{Verdict: "submitted", State: "submitted"},
			prompts: []string{id1 + ": zq1xL0 a", "zq1xL1 b", "/exit"}, want: []string{ruleSplit, ruleUnattributed}},
		{name: "cut short", copy: Copy{Verdict: "submitted", State: "submitted"}, prompts: []string{id1 + ": zq1xL0 hel"}, want: []string{ruleTruncated}},
		{name: "pointer", text: lines1, copy: Copy{Verdict: "submitted", State: "submitted"},
			prompts: []string{id1 + ": zq1xL0 a … (full text: agentmsg read " + id1 + ")"}},
		{name: "failed but there", copy: Copy{Verdict: "failed", State: "failed", LastVerdict: "failed"}, prompts: []string{id1 + ": " + text1}, want: []string{ruleFailedArrived}},
		{name: "unknown and there", copy: Copy{Verdict: "unknown", State: "failed", LastVerdict: "unknown"}, prompts: []string{id1 + ": " + text1}},
		{name: "unknown, not there", copy: Copy{Verdict: "unknown", State: "failed", LastVerdict: "unknown"}},
		{name: "typed, a person pressed Enter on it with their draft", copy: Copy{Verdict: "typed", State: "typed"}, drafts: []string{"zd1x d"},
			prompts: []string{"zd1x d" + id1 + ": " + text1}},
		{name: "submitted inside a draft", copy: Copy{Verdict: "submitted", State: "submitted"}, drafts: []string{"zd1x d"},
			prompts: []string{"zd1x d" + id1 + ": " + text1}, want: []string{ruleMerged}},
		{name: "a person typed as it was submitted", copy: Copy{Verdict: "submitted", State: "submitted"}, drafts: []string{"zd1x d"},
			prompts: []string{id1 + ": " + text1 + "zd1x d"}},
		{name: "the draft alone", copy: Copy{Verdict: "deferred", State: "deferred"}, drafts: []string{"zd1x d"}, prompts: []string{"zd1x d"}},
		{name: "deferred, arrived, still pending", copy: Copy{Verdict: "deferred", State: "deferred"}, prompts: []string{id1 + ": " + text1}, want: []string{ruleStillPending}},
		{name: "deferred and gone from the inbox", copy: Copy{Verdict: "deferred"}, want: []string{ruleLost}},
		{name: "failed, then kept to type again", copy: Copy{Verdict: "failed", State: "typing"}, want: []string{ruleFailedRevived}},
		{name: "sender killed, typing, there", copy: Copy{State: "typing"}, prompts: []string{id1 + ": " + text1}},
		{name: "keys in a dialog", copy: Copy{Verdict: "deferred", State: "deferred"}, odd: []string{"dialog-key x"}, want: []string{ruleKeysInDialog}},
		{name: "submitted, absent, restarted, a queue its profile cannot see", copy: Copy{Verdict: "typed", State: "submitted"}, restart: true, queueUnseen: true},
		{name: "submitted, absent, restarted, a queue its profile sees", copy: Copy{Verdict: "typed", State: "submitted"}, restart: true, want: []string{ruleClaimedAbsent}},
		{name: "submitted, absent, never restarted", copy: Copy{Verdict: "submitted", State: "submitted"}, queueUnseen: true, want: []string{ruleClaimedAbsent}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			text := tt.text
			if text == "" {
				text = text1
			}
			to := &Program{Label: "ana", Prompts: tt.prompts, Drafts: tt.drafts, Odd: tt.odd, QueueUnseen: tt.queueUnseen}
			if tt.restart {
				to.Restarts = []time.Time{t0.Add(time.Second)}
			}
			other := &Program{Label: "bob", Prompts: tt.other}
			m := oneCopy(1, text, id1, to, tt.copy)
			vs, _ := Check([]*Message{m}, []*Program{to, other})
			if got := rules(vs); !slices.Equal(got, tt.want) {
				t.Fatalf("rules %v, want %v:\n%v", got, tt.want, vs)
			}
		})
	}
}

// A broadcast whose daemon was killed as it recorded it: in some inboxes
// and not in another that nothing could have refused is broken (issue
// 29); not in one whose pane could not be told is a refusal; in none is
// a broadcast never taken; twice in one inbox is broken.
func TestOracleBroadcastAllOrNone(t *testing.T) {
	text := "zq5xL0 all hands"
	progs := []*Program{{Label: "ana", Prompts: []string{id1 + ": " + text}}, {Label: "bob"}, {Label: "cy"}}
	msg := func(bob, cy Copy) *Message {
		ana := Copy{To: progs[0], State: "submitted", Content: text, Records: 1, Tellable: true}
		bob.To, cy.To = progs[1], progs[2]
		return &Message{N: 5, Text: text, ID: id1, Copies: []*Copy{&ana, &bob, &cy}}
	}
	tests := []struct {
		name    string
		bob, cy Copy
		want    []string
	}{
		{"in all", Copy{State: "deferred", Content: text, Records: 1, Tellable: true}, Copy{State: "deferred", Content: text, Records: 1, Tellable: true}, nil},
		{"in some", Copy{State: "deferred", Content: text, Records: 1, Tellable: true}, Copy{Tellable: true}, []string{rulePartial}},
		{"one refused", Copy{State: "deferred", Content: text, Records: 1, Tellable: true}, Copy{Verdict: "not_found"}, nil},
		{"twice in one", Copy{State: "deferred", Content: text, Records: 2, Tellable: true}, Copy{State: "deferred", Content: text, Records: 1, Tellable: true}, []string{ruleRecordedTwice}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			vs, _ := Check([]*Message{msg(tt.bob, tt.cy)}, progs)
			if got := rules(vs); !slices.Equal(got, tt.want) {
				t.Fatalf("rules %v, want %v:\n%v", got, tt.want, vs)
			}
		})
	}
	none := &Message{N: 6, Text: "zq6xL0 never taken", Copies: []*Copy{{To: progs[1], Tellable: true}, {To: progs[2], Tellable: true}}}
	if vs, _ := Check([]*Message{none}, progs[1:]); len(vs) != 0 {
		t.Fatalf("in no inbox: %v", vs)
	}
}

// Two senders' texts in one prompt (an unlocked pane): neither arrived
// whole, and one is inside the other's prompt.
func TestOracleMergedMessages(t *testing.T) {
	ana := &Program{Label: "ana", Prompts: []string{id1 + ": zq1xL0 a" + id2 + ": zq2xL0 b"}}
	m1 := oneCopy(1, "zq1xL0 a", id1, ana, Copy{Verdict: "submitted", State: "submitted"})
	m2 := oneCopy(2, "zq2xL0 b", id2, ana, Copy{Verdict: "submitted", State: "submitted"})
	vs, _ := Check([]*Message{m1, m2}, []*Program{ana})
	if got := rules(vs); !slices.Equal(got, []string{ruleMerged}) {
		t.Fatalf("rules %v:\n%v", got, vs)
	}
}

// A sender killed before it printed the id: the prompt's id and tag tie it
// to the message.
func TestOracleLearnsTheIDOfAKilledSender(t *testing.T) {
	ana := &Program{Label: "ana", Prompts: []string{id1 + ": zq4xL0 hi", id1 + ": zq4xL0 hi"}}
	m := &Message{N: 4, Text: "zq4xL0 hi", Copies: []*Copy{{To: ana}}}
	vs, _ := Check([]*Message{m}, []*Program{ana})
	if got := rules(vs); !slices.Equal(got, []string{ruleDoubled}) || m.ID != id1 {
		t.Fatalf("rules %v id %q", got, m.ID)
	}
}

func TestTextsCarryTheirTagOnEveryLine(t *testing.T) {
	rng := newRand(1)
	for _, shape := range append(nastyShapes, shapeShort) {
		text := messageText(rng, 12, shape)
		first, _, _ := strings.Cut(text, "\n")
		if !strings.HasPrefix(first, "zq12xL0 ") {
			t.Errorf("%s: first line %q", shape, first)
		}
		if ns := tagsIn(text); !slices.Equal(ns, []int{12}) {
			t.Errorf("%s: tags %v", shape, ns)
		}
	}
}
