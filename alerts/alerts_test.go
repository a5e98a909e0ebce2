package alerts

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
)

var t0 = time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC)

func at(min int) time.Time { return t0.Add(time.Duration(min) * time.Minute) }

var rules = Rules{MessageWait: 10 * time.Minute, Dialog: 5 * time.Minute, Draft: 30 * time.Minute, Typed: true, Unknown: true}

// names lists alerts as "event team/agent[ id]".
func names(as []Alert) []string {
	out := []string{}
	for _, a := range as {
		s := string(a.Event) + " " + a.Team + "/" + a.Agent
		if a.MessageID != "" {
			s += " " + a.MessageID
		}
		out = append(out, s)
	}
	return out
}

// Each condition fires once while it holds, clears when it ends, and fires
// again when it comes back.
func TestEngine(t *testing.T) {
	msg := func(id, state, reason string, sent int) Message {
		return Message{Team: "alpha", Agent: "eve", ID: id, From: "lead", State: state, Reason: reason, Sent: at(sent), Updated: at(sent)}
	}
	eve := func(state string, since int) Agent {
		return Agent{Team: "alpha", Agent: "eve", State: state, Since: at(since)}
	}
	steps := []struct {
		name           string
		obs            Observation
		fired, cleared []string
		active         int
	}{
		{"a fresh deferral alerts nothing", Observation{Now: at(1), Messages: []Message{msg("M1", "deferred", "dialog", 0)}, Agents: []Agent{eve("dialog", 0)}},
			nil, nil, 0},
		{"past the thresholds", Observation{Now: at(10), Messages: []Message{msg("M1", "deferred", "dialog", 0)}, Agents: []Agent{eve("dialog", 0)}},
			[]string{"agent_dialog alpha/eve", "message_waiting alpha/eve M1"}, nil, 2},
		{"still so: nothing new", Observation{Now: at(11), Messages: []Message{msg("M1", "deferred", "dialog", 0)}, Agents: []Agent{eve("dialog", 0)}},
			nil, nil, 2},
		{"the dialog closes and the message is typed", Observation{Now: at(12), Messages: []Message{msg("M1", "submitted", "", 0)}, Agents: []Agent{eve("ready", 12)}},
			nil, []string{"agent_dialog alpha/eve", "message_waiting alpha/eve M1"}, 0},
		{"a new dialog: not yet", Observation{Now: at(13), Agents: []Agent{eve("dialog", 13)}},
			nil, nil, 0},
		{"the dialog comes back for long: again", Observation{Now: at(18), Agents: []Agent{eve("dialog", 13)}},
			[]string{"agent_dialog alpha/eve"}, nil, 1},
		{"typed and unknown alert at once", Observation{Now: at(19), Agents: []Agent{eve("dialog", 13)},
			Messages: []Message{msg("M2", "typed", "in_box", 19), msg("M3", "failed", "unknown", 19), msg("M4", "failed", "shell", 19)}},
			[]string{"delivery_typed alpha/eve M2", "delivery_unknown alpha/eve M3"}, nil, 3},
		{"a draft held past its threshold", Observation{Now: at(60), Agents: []Agent{eve("draft", 20)},
			Messages: []Message{msg("M2", "handled", "", 19), msg("M3", "handled", "", 19)}},
			[]string{"agent_draft alpha/eve"}, []string{"agent_dialog alpha/eve", "delivery_typed alpha/eve M2", "delivery_unknown alpha/eve M3"}, 1},
	}
	var e Engine
	e.Rules = rules
	for _, st := range steps {
		fired, cleared := e.Observe(st.obs)
		if got := names(fired); !equalSet(got, st.fired) {
			t.Errorf("%s: fired %q, want %q", st.name, got, st.fired)
		}
		if got := names(cleared); !equalSet(got, st.cleared) {
			t.Errorf("%s: cleared %q, want %q", st.name, got, st.cleared)
		}
		if n := len(e.Active()); n != st.active {
			t.Errorf("%s: %d active, want %d", st.name, n, st.active)
		}
	}
}

func equalSet(a, b []string) bool {
	a, b = slices.Clone(a), slices.Clone(b)
	slices.Sort(a)
	slices.Sort(b)
	return len(a) == len(b) && (len(a) == 0 || slices.Equal(a, b))
}

// A threshold of zero, or a verdict not asked for, never alerts.
func TestRulesOff(t *testing.T) {
	e := Engine{Rules: Rules{}}
	fired, _ := e.Observe(Observation{Now: at(1000),
		Agents:   []Agent{{Team: "a", Agent: "b", State: "dialog"}, {Team: "a", Agent: "c", State: "draft"}},
		Messages: []Message{{Team: "a", Agent: "b", ID: "M", State: "typed", Reason: "unknown"}}})
	if len(fired) != 0 {
		t.Errorf("fired %q with every rule off", names(fired))
	}
}

func TestAlertText(t *testing.T) {
	var e Engine
	e.Rules = rules
	fired, _ := e.Observe(Observation{Now: at(75),
		Agents:   []Agent{{Team: "alpha", Agent: "eve", State: "dialog", Detail: "selection menu: ❯ 1. Yes", Since: at(0)}},
		Messages: []Message{{Team: "alpha", Agent: "eve", ID: "MSG_LEAD_1a2b3c4d", From: "lead", State: "deferred", Reason: "dialog", Sent: at(3)}}})
	want := []string{
		"alpha/eve has been in a dialog for 1h15m: selection menu: ❯ 1. Yes",
		"alpha/eve: MSG_LEAD_1a2b3c4d from lead has waited 1h12m (deferred: dialog)",
	}
	var got []string
	for _, a := range fired {
		got = append(got, a.Text)
	}
	if !slices.Equal(got, want) {
		t.Errorf("texts %q, want %q", got, want)
	}
}

func TestAge(t *testing.T) {
	for d, want := range map[time.Duration]string{
		-time.Second: "0s", 45 * time.Second: "45s", 12 * time.Minute: "12m", 3 * time.Hour: "3h",
		3*time.Hour + 5*time.Minute: "3h5m", 50 * time.Hour: "2d2h", 48 * time.Hour: "2d",
	} {
		if got := Age(d); got != want {
			t.Errorf("Age(%s) = %q, want %q", d, got, want)
		}
	}
}

var sample = Alert{Event: AgentDialog, Place: "/tmp/s", Team: "alpha", Agent: "eve", Reason: "dialog", Since: t0, Time: at(5), Text: "alpha/eve has been in a dialog for 5m"}

// The webhook gets the alert as JSON; the command gets it on stdin and
// its fields in the environment.
func TestNotify(t *testing.T) {
	posted := make(chan []byte, 1)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		if r.Method != http.MethodPost || r.Header.Get("Content-Type") != "application/json" {
			http.Error(w, "want a JSON POST", http.StatusBadRequest)
			return
		}
		posted <- b
	}))
	defer srv.Close()
	out := filepath.Join(t.TempDir(), "out")
	n := Notifier{Command: `cat > "$OUT"; echo "$AGENTMSG_ALERT_EVENT $AGENTMSG_ALERT_TEAM/$AGENTMSG_ALERT_AGENT $AGENTMSG_ALERT_REASON: $AGENTMSG_ALERT_TEXT" >> "$OUT"`,
		Webhook: srv.URL, Env: []string{"OUT=" + out, "PATH=" + os.Getenv("PATH")}}
	if err := n.Notify(context.Background(), sample); err != nil {
		t.Fatal(err)
	}
	var got Alert
	if err := json.Unmarshal(<-posted, &got); err != nil || got.Event != AgentDialog || got.Team != "alpha" || got.Agent != "eve" || got.Reason != "dialog" || !got.Since.Equal(t0) {
		t.Errorf("posted %+v, %v", got, err)
	}
	b, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(string(b)), "\n")
	if len(lines) != 2 || !strings.Contains(lines[0], `"event":"agent_dialog"`) || lines[1] != "agent_dialog alpha/eve dialog: alpha/eve has been in a dialog for 5m" {
		t.Errorf("the command saw %q", lines)
	}
}

// A failing command or webhook is an error naming it; one that hangs is
// cut off at the timeout, with what it started.
func TestNotifyFailures(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Error(w, "no such hook", http.StatusNotFound)
	}))
	defer srv.Close()
	err := Notifier{Command: "echo oops >&2; exit 3", Webhook: srv.URL}.Notify(context.Background(), sample)
	if err == nil || !strings.Contains(err.Error(), `alert command: "echo oops >&2; exit 3": exit status 3: "oops"`) ||
		!strings.Contains(err.Error(), `404 Not Found: "no such hook"`) {
		t.Errorf("err %v", err)
	}
	start := time.Now()
	err = Notifier{Command: "sleep 30 & sleep 30", Timeout: 200 * time.Millisecond}.Notify(context.Background(), sample)
	if err == nil || !strings.Contains(err.Error(), "did not finish within 200ms") {
		t.Errorf("a hanging command: %v", err)
	}
	if took := time.Since(start); took > 10*time.Second {
		t.Errorf("a hanging command held Notify %s", took)
	}
}

// countingTeller counts what it is told.
type countingTeller struct {
	mu   sync.Mutex
	told int
}

func (c *countingTeller) Enabled() bool { return true }
func (c *countingTeller) Notify(context.Context, Alert) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.told++
	return nil
}

// Two observers (two agentmsg top) that see one condition tell it once
// between them; when it comes back after it cleared, once again.
func TestOnceTellsEachConditionOnce(t *testing.T) {
	dir := t.TempDir()
	var mu sync.Mutex
	lock := func(context.Context, string) (func(), error) { mu.Lock(); return mu.Unlock, nil }
	c := &countingTeller{}
	tops := []Once{{Teller: c, Dir: dir, Lock: lock}, {Teller: c, Dir: dir, Lock: lock}}
	t0 := time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)
	dialog := func(since, at time.Time) Alert {
		return Alert{Event: AgentDialog, Team: "alpha", Agent: "ana", Since: since, Time: at}
	}
	var wg sync.WaitGroup
	for i, o := range tops {
		wg.Go(func() {
			// Each saw the dialog begin at its own look, a second apart.
			since := t0.Add(time.Duration(i) * time.Second)
			if err := o.Notify(context.Background(), dialog(since, since.Add(10*time.Minute))); err != nil {
				t.Error(err)
			}
		})
	}
	wg.Wait()
	if c.told != 1 {
		t.Fatalf("two tops told one dialog %d times", c.told)
	}
	back := t0.Add(time.Hour)
	for _, o := range tops {
		if err := o.Notify(context.Background(), dialog(back, back.Add(10*time.Minute))); err != nil {
			t.Fatal(err)
		}
	}
	if c.told != 2 {
		t.Errorf("the dialog came back and was told %d times in all; want 2", c.told)
	}
}
