package chaos

import (
	"fmt"
	"regexp"
	"slices"
	"strings"
	"time"
)

// The oracle judges a round from what each program itself recorded (a
// stand-in's log, a REPL's own record of the lines it read) against what
// agentmsg said: each sender's verdict and, after the final drain, each
// inbox as `log --json` shows it. It knows nothing of how agentmsg works
// inside; only what its verdicts and inbox states promise (README):
//
//   - submitted, queued: the agent took the message; queued ones arrive
//     when its turn ends (unless the agent itself died with its queue).
//   - deferred: kept in the inbox; deliver types it later, exactly once.
//   - typed, unknown: it may or may not have arrived; a person must look.
//   - failed, not_ready, not_found: it did not arrive, and never will.
//
// Every message arrives in its recipient at most once, never anywhere
// else, never in pieces; one that has not arrived at the end is still in
// its inbox in a state that says so. A broadcast is in every inbox it
// could not have refused, or in none, and in each once.

// Program is anything running in a pane that records what it read: an
// agent, or a program beside one (a second window, a split pane, a shell).
type Program struct {
	Label string
	// Prompts is every prompt it submitted (a stand-in), every line it
	// read (a REPL, a read loop) or ran (a shell), in order.
	Prompts []string
	// Odd is what an agent should never get: keys while a dialog was open,
	// an interrupt.
	Odd []string
	// Drafts are texts a person typed into it (and pressed Enter on at the
	// end).
	Drafts []string
	// Restarts are when it was started again (its server restarted):
	// whatever it had queued then was lost with it.
	Restarts []time.Time
	// QueueUnseen: it queues a prompt submitted while it is busy and draws
	// the queue above its box as it draws its transcript, so the profile
	// it is read with (the stand-ins': generic, not trusted to queue)
	// reads a queued message as submitted. Such a verdict is no claim
	// once a restart has lost the queue (seeds 962471, 922327).
	QueueUnseen bool
}

// Message is one message a sender tried to send.
type Message struct {
	N      int    // its number in the round; its tag is messageTag(N)
	Text   string // as given to agentmsg
	ID     string // MSG_..., from the sender's report or the inbox; "" if never known
	Op     string // how it was sent, for the report
	Copies []*Copy
}

// Copy is a message to one recipient (a broadcast has one per agent).
type Copy struct {
	To        *Program
	Verdict   string    // the sender's verdict; "" when it said none (killed, crashed)
	VerdictAt time.Time // when the sender said it
	Error     string    // the sender's error, if any
	// From the inbox after the final drain ("" when it holds no record).
	State       string // delivery.state
	LastVerdict string // the first word of delivery.last_verdict
	Content     string // the text as the inbox keeps it (cleaned)
	// Later verdicts, from deliver runs.
	Delivers []string
	// Records: how many times the inbox holds it (once, or not at all).
	Records int
	// Tellable: a copy of a broadcast that nothing could refuse (its agent
	// the one pane of its session, and no server restarted while it ran):
	// if any inbox holds the message, this one's must (issue 29: a daemon
	// killed mid-broadcast left it in 9 inboxes of 12 for good).
	Tellable bool
}

// Violation is a broken promise.
type Violation struct {
	Rule   string // a short name, the same for every instance of one kind
	Where  string // the program it was seen in
	Msg    *Message
	Detail string
}

func (v Violation) String() string {
	s := fmt.Sprintf("%s in %s", v.Rule, v.Where)
	if v.Msg != nil {
		s += fmt.Sprintf(": message %d (%s, %s)", v.Msg.N, orDash(v.Msg.ID), v.Msg.Op)
	}
	if v.Detail != "" {
		s += ": " + v.Detail
	}
	return s
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// The rules, by name.
const (
	ruleMisdelivered   = "misdelivered"      // a message, or a line of it, in a program it was not sent to
	ruleDoubled        = "doubled"           // arrived more than once
	ruleSplit          = "split"             // arrived in pieces: a line on its own, or a prompt that is not exactly it
	ruleTruncated      = "truncated"         // arrived cut short (a terminal's line limit)
	ruleMerged         = "merged"            // arrived inside a prompt with another message or a person's draft
	ruleClaimedAbsent  = "claimed-absent"    // said submitted or queued (by a sender, deliver or the inbox) and never arrived
	ruleFailedArrived  = "failed-arrived"    // said failed, not_ready or not_found, and arrived anyway
	ruleStillPending   = "still-pending"     // arrived, and its inbox still has it to type (it would come twice)
	ruleFailedRevived  = "failed-revived"    // said failed, and its inbox has it to type again
	ruleLost           = "lost"              // said deferred (kept), then neither arrived nor kept
	ruleUnattributed   = "unattributed"      // a prompt no message or person accounts for
	ruleKeysInDialog   = "keys-in-dialog"    // keys reached an open dialog
	ruleInterrupted    = "interrupted"       // an agent got a C-c
	ruleUnrecognisedID = "unknown-message"   // a prompt starting with an id no sender used
	ruleRecordedTwice  = "recorded-twice"    // an inbox holds one message more than once
	rulePartial        = "broadcast-partial" // a broadcast in some inboxes and not in another it could not have refused
	ruleRetryRefused   = "retry-refused"     // an app's broadcast asked again with its id, refused
)

var leadingID = regexp.MustCompile(`^(MSG_[A-Z0-9_]+_[0-9a-f]{8}): `)

var anyID = regexp.MustCompile(`MSG_[A-Z0-9_]+_[0-9a-f]{8}`)

// pointerSuffix ends the one line typed for a long message.
func pointerSuffix(id string) string { return " (full text: agentmsg read " + id + ")" }

// Check applies every rule. Notes are what is worth knowing but breaks no
// promise (messages kept that deliver did not type, refusals).
func Check(msgs []*Message, progs []*Program) (vs []Violation, notes []string) {
	byN := map[int]*Message{}
	byID := map[string]*Message{}
	for _, m := range msgs {
		byN[m.N] = m
		if m.ID != "" {
			byID[m.ID] = m
		}
	}
	adoptIDs(progs, byN, byID)
	arrivals := map[*Copy]int{}
	personMerged := map[*Copy]string{} // the prompt it arrived in with a draft: a person pressed Enter on it
	for _, p := range progs {
		for _, o := range p.Odd {
			rule := ruleKeysInDialog
			if o == "interrupt" {
				rule = ruleInterrupted
			}
			vs = append(vs, Violation{Rule: rule, Where: p.Label, Detail: clipText(o)})
		}
		for _, prompt := range p.Prompts {
			v, n := judgePrompt(p, prompt, byN, byID, arrivals, personMerged)
			vs, notes = append(vs, v...), append(notes, n...)
		}
	}
	for _, m := range msgs {
		for _, c := range m.Copies {
			v, n := judgeCopy(m, c, arrivals[c], personMerged[c])
			vs = append(vs, v...)
			notes = append(notes, n...)
		}
		vs = append(vs, judgeAllOrNone(m)...)
	}
	return vs, notes
}

// judgeAllOrNone holds a broadcast to being in every inbox it could not
// refuse, or in none.
func judgeAllOrNone(m *Message) (vs []Violation) {
	var held []string
	for _, c := range m.Copies {
		if c.State != "" {
			held = append(held, c.To.Label)
		}
	}
	if len(held) == 0 {
		return nil
	}
	for _, c := range m.Copies {
		if c.Tellable && c.State == "" {
			vs = append(vs, Violation{Rule: rulePartial, Where: c.To.Label, Msg: m,
				Detail: fmt.Sprintf("not in this inbox, but in %s; sender said %s", strings.Join(held, ", "), orDash(c.Verdict))})
		}
	}
	return vs
}

// adoptIDs learns the id of a message whose sender never said it (killed
// before it printed) from a prompt that carries both the id and the tag.
func adoptIDs(progs []*Program, byN map[int]*Message, byID map[string]*Message) {
	for _, p := range progs {
		for _, prompt := range p.Prompts {
			id := leadingIDOf(prompt)
			if id == "" || byID[id] != nil {
				continue
			}
			if ns := tagsIn(prompt); len(ns) == 1 {
				if m := byN[ns[0]]; m != nil && m.ID == "" {
					m.ID = id
					byID[id] = m
				}
			}
		}
	}
}

func leadingIDOf(s string) string {
	if m := leadingID.FindStringSubmatch(s); m != nil {
		return m[1]
	}
	return ""
}

// tagsIn is the numbers of the messages whose tags s holds, each once.
func tagsIn(s string) []int {
	var ns []int
	for _, m := range msgTag.FindAllStringSubmatch(s, -1) {
		var n int
		fmt.Sscan(m[1], &n)
		if !slices.Contains(ns, n) {
			ns = append(ns, n)
		}
	}
	return ns
}

func copyTo(m *Message, p *Program) *Copy {
	for _, c := range m.Copies {
		if c.To == p {
			return c
		}
	}
	return nil
}

// judgePrompt accounts for one prompt of p: which messages it holds, and
// whether each is whole and meant for p.
func judgePrompt(p *Program, prompt string, byN map[int]*Message, byID map[string]*Message,
	arrivals map[*Copy]int, personMerged map[*Copy]string) (vs []Violation, notes []string) {
	if strings.TrimSpace(prompt) == "" || slices.Contains(p.Drafts, prompt) {
		return nil, nil
	}
	seen := map[*Message]bool{}
	var found []*Message
	for _, id := range anyID.FindAllString(prompt, -1) {
		if m := byID[id]; m != nil && !seen[m] {
			seen[m] = true
			found = append(found, m)
		}
	}
	for _, n := range tagsIn(prompt) {
		if m := byN[n]; m != nil && !seen[m] {
			seen[m] = true
			found = append(found, m)
		}
	}
	if len(found) == 0 {
		if id := leadingIDOf(prompt); id != "" {
			return []Violation{{Rule: ruleUnrecognisedID, Where: p.Label, Detail: clipText(prompt)}}, nil
		}
		return []Violation{{Rule: ruleUnattributed, Where: p.Label, Detail: clipText(prompt)}}, nil
	}
	withDraft := draftTag.MatchString(prompt)
	lead := leadingIDOf(prompt)
	for _, m := range found {
		c := copyTo(m, p)
		if c == nil {
			vs = append(vs, Violation{Rule: ruleMisdelivered, Where: p.Label, Msg: m, Detail: clipText(prompt)})
			continue
		}
		switch {
		case m.ID != "" && lead == m.ID && len(found) == 1 && !withDraft:
			arrivals[c]++
			switch {
			case whole(m, c, prompt):
			case cutShort(m.ID+": "+c.Content, prompt):
				vs = append(vs, Violation{Rule: ruleTruncated, Where: p.Label, Msg: m,
					Detail: fmt.Sprintf("%d of %d bytes: %s", len(prompt), len(m.ID+": "+c.Content), clipText(prompt))})
			default:
				vs = append(vs, Violation{Rule: ruleSplit, Where: p.Label, Msg: m, Detail: "the prompt is not the whole message: " + clipText(prompt)})
			}
		case m.ID != "" && strings.Contains(prompt, m.ID+": "):
			arrivals[c]++
			switch {
			case withDraft && len(found) == 1 && draftTag.FindStringIndex(prompt)[0] > strings.Index(prompt, m.ID):
				// The person's keys came after our text: while agentmsg
				// pressed submit, after its last look. No look can close
				// that race, so it breaks no promise.
				notes = append(notes, fmt.Sprintf("a person typed into %s as message %d (%s) was submitted: %s",
					p.Label, m.N, m.ID, clipText(prompt)))
			case withDraft && len(found) == 1:
				// agentmsg's text came after the draft: it typed into it.
				personMerged[c] = prompt
			default:
				vs = append(vs, Violation{Rule: ruleMerged, Where: p.Label, Msg: m, Detail: clipText(prompt)})
			}
		default:
			vs = append(vs, Violation{Rule: ruleSplit, Where: p.Label, Msg: m, Detail: "a part of it arrived alone: " + clipText(prompt)})
		}
	}
	return vs, notes
}

// whole reports whether prompt is exactly message m as typed: its id and
// text as the inbox keeps it, or the pointer line for a long one. Without
// the inbox's text, every line's tag must be there, in order.
func whole(m *Message, c *Copy, prompt string) bool {
	if strings.HasSuffix(prompt, pointerSuffix(m.ID)) && !strings.Contains(prompt, "\n") {
		return true
	}
	if c.Content != "" {
		return prompt == m.ID+": "+c.Content
	}
	rest := prompt
	for _, t := range lineTags(m) {
		i := strings.Index(rest, t)
		if i < 0 {
			return false
		}
		rest = rest[i+len(t):]
	}
	return true
}

// cutShort reports whether prompt is the start of want cut off within a
// line (a first line alone is a split, not a cut).
func cutShort(want, prompt string) bool {
	return len(prompt) < len(want) && strings.HasPrefix(want, prompt) && want[len(prompt)] != '\n'
}

var lineTag = regexp.MustCompile(`zq\d+xL\d+`)

func lineTags(m *Message) []string { return lineTag.FindAllString(m.Text, -1) }

// judgeCopy holds what was said about one copy against how often it
// arrived.
func judgeCopy(m *Message, c *Copy, n int, withDraft string) (vs []Violation, notes []string) {
	bad := func(rule, detail string) {
		vs = append(vs, Violation{Rule: rule, Where: c.To.Label, Msg: m, Detail: detail})
	}
	said := fmt.Sprintf("sender said %s, inbox says %s (last verdict %s), deliver said %v",
		orDash(c.Verdict), orDash(c.State), orDash(c.LastVerdict), c.Delivers)
	if n > 1 {
		bad(ruleDoubled, fmt.Sprintf("arrived %d times; %s", n, said))
	}
	if c.Records > 1 {
		bad(ruleRecordedTwice, fmt.Sprintf("%d records of it in the inbox; %s", c.Records, said))
	}
	if withDraft != "" && !slices.Contains([]string{"typed", "unknown"}, c.Verdict) && !slices.Contains([]string{"typed", "unknown"}, c.LastVerdict) {
		bad(ruleMerged, "typed after a person's draft: "+clipText(withDraft)+"; "+said)
	}
	lostQueue := func(at time.Time) bool {
		for _, r := range c.To.Restarts {
			if at.IsZero() || r.After(at) {
				return true
			}
		}
		return false
	}
	// claimed: a verdict that says the message reached the agent. One it
	// may only have queued is not, once a restart lost the queue.
	claimed := func(verdict string, at time.Time) bool {
		switch verdict {
		case "submitted":
			return !(c.To.QueueUnseen && lostQueue(at))
		case "queued":
			return !lostQueue(at)
		}
		return false
	}
	claims := []string{}
	if claimed(c.Verdict, c.VerdictAt) {
		claims = append(claims, "the sender said "+c.Verdict)
	}
	if slices.ContainsFunc(c.Delivers, func(v string) bool { return v == "submitted" && claimed(v, time.Time{}) }) {
		claims = append(claims, "deliver said submitted")
	}
	if claimed(c.State, time.Time{}) {
		claims = append(claims, "the inbox says "+c.State)
	}
	if n == 0 && len(claims) > 0 {
		bad(ruleClaimedAbsent, strings.Join(claims, ", ")+"; "+said)
	}
	refused := slices.Contains([]string{"failed", "not_ready", "not_found"}, c.Verdict)
	if n > 0 && refused {
		bad(ruleFailedArrived, said)
	}
	if n > 0 && c.State == "failed" && slices.Contains([]string{"failed", "not_ready", "not_found"}, c.LastVerdict) {
		bad(ruleFailedArrived, "the inbox says it failed; "+said)
	}
	outstanding := slices.Contains([]string{"pending", "deferred"}, c.State)
	if n > 0 && outstanding {
		bad(ruleStillPending, said)
	}
	if refused && (outstanding || c.State == "typing") {
		bad(ruleFailedRevived, said)
	}
	if n == 0 && c.State == "" && c.Verdict == "deferred" {
		bad(ruleLost, said)
	}
	if n == 0 && outstanding {
		notes = append(notes, fmt.Sprintf("kept, not delivered: message %d (%s) to %s: %s", m.N, orDash(m.ID), c.To.Label, said))
	}
	return vs, notes
}

func clipText(s string) string {
	q := fmt.Sprintf("%q", s)
	if len(q) > 240 {
		q = q[:120] + "…" + q[len(q)-100:]
	}
	return q
}
