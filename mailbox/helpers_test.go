package mailbox

import (
	"fmt"
	"os"
	"testing"
	"time"

	"github.com/agentmsg/agentmsg/message"
)

const team = "core"

func newStore(t testing.TB) *Store {
	t.Helper()
	return New(t.TempDir())
}

func box(t testing.TB, s *Store, agent string) *Box {
	t.Helper()
	b, err := s.Box(team, agent)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func newEnv(t testing.TB, from, to, content string) Envelope {
	t.Helper()
	sender, err := message.Sender(from)
	if err != nil {
		t.Fatal(err)
	}
	id, err := message.NewID(sender, nil)
	if err != nil {
		t.Fatal(err)
	}
	return Envelope{ID: id, From: from, To: to, Type: TypeText, Content: content}
}

// appendN appends n messages from "lead" to b and returns them.
func appendN(t testing.TB, b *Box, n int) []Envelope {
	t.Helper()
	var out []Envelope
	for i := range n {
		e := newEnv(t, "lead", b.Agent, fmt.Sprintf("message %d", i))
		if err := b.Append(e); err != nil {
			t.Fatal(err)
		}
		out = append(out, e)
	}
	return out
}

func ids(envs []Envelope) []message.ID {
	out := make([]message.ID, len(envs))
	for i, e := range envs {
		out[i] = e.ID
	}
	return out
}

func mustRead(t testing.TB, s *Store, agent string) Batch {
	t.Helper()
	b, err := s.Read(team, agent)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func writeRaw(t testing.TB, path, data string) {
	t.Helper()
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o600)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := f.WriteString(data); err != nil {
		t.Fatal(err)
	}
}

// eventually polls cond until it holds or the deadline passes.
func eventually(t testing.TB, d time.Duration, cond func() bool) bool {
	t.Helper()
	deadline := time.Now().Add(d)
	for time.Now().Before(deadline) {
		if cond() {
			return true
		}
		time.Sleep(5 * time.Millisecond)
	}
	return cond()
}
