package e2e

import (
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	mrand "math/rand/v2"
	"os/exec"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agentmsg/agentmsg/e2e/harness"
)

// The daemon SIGKILLed at random moments (while it attaches, mid-paste,
// mid-press, mid-broadcast) while CLI senders and API clients send through
// it (issue 18): the tmux server lives through every kill; every message
// arrives once or is kept; every verdict a client got is true; a client
// that lost its answer reads the truth at GET /v1/messages/{id} after the
// restart. 30 kills; AGENTMSG_DAEMON_CHAOS=N for more.
func TestDaemonKilledAtRandom(t *testing.T) {
	if testing.Short() {
		t.Skip("kills the daemon for a while")
	}
	rounds := roundsFromEnv(t, "AGENTMSG_DAEMON_CHAOS", 30)
	s := harness.NewTestServer(t)
	if err := s.StopDaemon(); err != nil { // this test runs its own
		t.Fatal(err)
	}
	ana := s.StartAgent("agent-chaos-ana")
	bob := s.StartAgent("agent-chaos-bob", harness.BusyAfterSubmit(30*time.Millisecond))
	agents := map[string]*harness.TestAgent{"ana": ana, "bob": bob}
	segfaults := kernelSegfaults()

	type sent struct {
		to      []string // agents it was meant for
		text    string
		id      string // known to the client: chosen (API) or printed (CLI)
		verdict string // the client's, "" when it got none
		api     bool
	}
	var mu sync.Mutex
	var all []*sent
	record := func(m *sent) {
		mu.Lock()
		all = append(all, m)
		mu.Unlock()
	}
	newID := func() string {
		b := make([]byte, 4)
		_, _ = rand.Read(b)
		return "MSG_APP_" + hex.EncodeToString(b)
	}
	for round := range rounds {
		if err := s.StartDaemon(); err != nil {
			t.Fatalf("round %d: %v", round, err)
		}
		c := api(s)
		var wg sync.WaitGroup
		for k := range 2 {
			to := []string{"ana", "bob"}[k]
			wg.Go(func() { // a CLI sender, forwarded to the daemon
				m := &sent{to: []string{to}, text: fmt.Sprintf("round %d cli to %s", round, to)}
				res, err := s.Server.Run("--json", "send", "--ready-timeout", "2s", "chaos", to, m.text)
				if err == nil {
					var rep harness.SendReport
					if json.Unmarshal([]byte(res.Stdout), &rep) == nil && rep.ID != "" {
						m.id, m.verdict = rep.ID, rep.Verdict
					}
				}
				record(m)
			})
		}
		wg.Go(func() { // an app's send, with its own id
			m := &sent{to: []string{"ana"}, text: fmt.Sprintf("round %d api to ana", round), id: newID(), api: true}
			var rep struct{ Verdict string }
			body := fmt.Sprintf(`{"team":"chaos","agent":"ana","text":%q,"from":"app","id":%q,"ready_timeout":"2s"}`, m.text, m.id)
			if resp, err := c.Post("http://agentmsg/v1/send", "application/json", strings.NewReader(body)); err == nil {
				if json.NewDecoder(resp.Body).Decode(&rep) == nil {
					m.verdict = rep.Verdict
				}
				resp.Body.Close()
			}
			record(m)
		})
		wg.Go(func() { // an app's broadcast
			m := &sent{to: []string{"ana", "bob"}, text: fmt.Sprintf("round %d api broadcast", round), id: newID(), api: true}
			var rep struct{ Verdict string }
			body := fmt.Sprintf(`{"team":"chaos","text":%q,"from":"app","id":%q,"ready_timeout":"2s"}`, m.text, m.id)
			if resp, err := c.Post("http://agentmsg/v1/broadcast", "application/json", strings.NewReader(body)); err == nil {
				if json.NewDecoder(resp.Body).Decode(&rep) == nil && rep.Verdict == "delivered" {
					m.verdict = "submitted"
				}
				resp.Body.Close()
			}
			record(m)
		})
		time.Sleep(time.Duration(mrand.IntN(400)) * time.Millisecond)
		s.KillDaemon()
		wg.Wait()
		if _, err := s.Server.Tmux("has-session", "-t", "=_keep"); err != nil {
			t.Fatalf("round %d: the tmux server died with the daemon: %v", round, err)
		}
	}
	if n := kernelSegfaults(); n > segfaults {
		t.Fatalf("the kernel logged %d new tmux segfaults", n-segfaults)
	}

	// The truth after a restart: what a client that lost its answer reads.
	if err := s.StartDaemon(); err != nil {
		t.Fatal(err)
	}
	c := api(s)
	states := map[string]string{} // id -> the state of its first copy
	for _, m := range all {
		if !m.api || m.verdict != "" {
			continue
		}
		resp, err := c.Get("http://agentmsg/v1/messages/" + m.id)
		if err != nil {
			t.Fatal(err)
		}
		var doc struct {
			Copies []struct {
				Message struct {
					Delivery *struct{ State string }
				}
				Delivery []struct{ State string } // the records after the first
			}
		}
		_ = json.NewDecoder(resp.Body).Decode(&doc)
		resp.Body.Close()
		switch {
		case resp.StatusCode == 404:
		case resp.StatusCode != 200 || len(doc.Copies) == 0 || doc.Copies[0].Message.Delivery == nil:
			t.Errorf("GET /v1/messages/%s: %d %+v", m.id, resp.StatusCode, doc)
		case len(doc.Copies[0].Delivery) > 0:
			d := doc.Copies[0].Delivery
			states[m.id] = d[len(d)-1].State
		default:
			states[m.id] = doc.Copies[0].Message.Delivery.State
		}
	}
	if err := s.StopDaemon(); err != nil {
		t.Fatal(err)
	}
	// What waits is delivered, by a deliver of its own.
	s.RunsDirect()
	for range 5 { // until a pass finds nothing left
		res := s.Run("deliver", "--ready-timeout", "3s")
		if strings.Contains(res.Stdout, "nothing to deliver") {
			break
		}
	}
	kept := keptStates(t, s)

	arrived := map[string]map[string]int{} // agent -> text -> times
	for name, a := range agents {
		arrived[name] = map[string]int{}
		for _, p := range a.Received() {
			_, text, _ := strings.Cut(p, ": ")
			arrived[name][text]++
		}
	}
	counts := map[string]int{}
	for _, m := range all {
		// A broadcast is in every inbox it was for, or in none (issue 29).
		held := 0
		for _, name := range m.to {
			if kept[m.text+"\x00"+name] != "" {
				held++
			}
		}
		if held != 0 && held != len(m.to) {
			t.Errorf("%q: in %d of the %d inboxes it was for", m.text, held, len(m.to))
		}
		for name := range agents {
			n := arrived[name][m.text]
			meant := strings.Contains(strings.Join(m.to, " "), name)
			switch {
			case n > 1:
				t.Errorf("%q reached %s %d times", m.text, name, n)
			case n == 1 && !meant:
				t.Errorf("%q reached %s, who it was not for", m.text, name)
			case meant && n == 0 && (m.verdict == "submitted" || m.verdict == "queued"):
				t.Errorf("%q: the client was told %s, and %s never got it", m.text, m.verdict, name)
			case meant && n == 0 && m.verdict == "deferred" && !needsAPerson(kept[m.text+"\x00"+name]):
				t.Errorf("%q: deferred for %s, never delivered, and kept as %q", m.text, name, kept[m.text+"\x00"+name])
			case meant && n == 0 && m.verdict == "" && (kept[m.text+"\x00"+name] == "deferred" || kept[m.text+"\x00"+name] == "pending"):
				t.Errorf("%q: recorded for %s as %s, and a deliver never typed it", m.text, name, kept[m.text+"\x00"+name])
			case meant && n == 1 && m.api && m.verdict == "" && states[m.id] == "":
				t.Errorf("%q reached %s, yet GET /v1/messages/%s found nothing", m.text, name, m.id)
			}
			if meant {
				counts[fmt.Sprintf("arrived=%d verdict=%q kept=%q", n, m.verdict, kept[m.text+"\x00"+name])]++
			}
		}
	}
	t.Logf("%d kills; messages meant, by outcome: %v", rounds, counts)
}

// needsAPerson reports whether a kept message's state is one that waits for
// a person to look (its typing may have reached the agent unseen).
func needsAPerson(state string) bool {
	return state == "typed" || state == "unknown" || state == "failed" || state == "typing"
}

// keptStates is every kept message's delivery state, by content and inbox.
func keptStates(t *testing.T, s *harness.TestServer) map[string]string {
	t.Helper()
	res := s.Run("--json", "log")
	var doc struct {
		Messages []struct {
			Inbox    string
			Content  string
			Delivery *struct{ State string }
		}
	}
	if err := json.Unmarshal([]byte(res.Stdout), &doc); err != nil {
		t.Fatalf("%v\n%s", err, res)
	}
	out := map[string]string{}
	for _, m := range doc.Messages {
		if m.Delivery != nil {
			out[m.Content+"\x00"+m.Inbox] = m.Delivery.State
		}
	}
	return out
}

// kernelSegfaults counts the tmux segfaults in the kernel's log (-1 when it
// cannot be read).
func kernelSegfaults() int {
	out, err := exec.Command("dmesg").Output()
	if err != nil {
		return -1
	}
	return strings.Count(string(out), "segfault") - strings.Count(string(out), "segfault at") + strings.Count(string(out), "tmux: server")
}
