package mcpserver

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
)

// syncBuffer is a bytes.Buffer safe for the server's concurrent writes.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// serveLines runs the agent-mode server for ana over Stdio on lines, with
// stdin ending after them, and returns each reply by id ("null" for
// errors without one, in order).
func serveLines(t *testing.T, maxLine int, lines ...string) map[string][]string {
	t.Helper()
	tm := newTeam(t, "ana")
	var out syncBuffer
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	in := strings.NewReader(strings.Join(lines, "\n") + "\n")
	if err := New(tm.deps("ana"), false).Run(ctx, &Stdio{In: in, Out: &out, MaxLine: maxLine}); err != nil && ctx.Err() != nil {
		t.Fatalf("the server did not end after its input: %v", err)
	}
	replies := map[string][]string{}
	for _, l := range strings.Split(strings.TrimSpace(out.String()), "\n") {
		var r struct {
			ID json.RawMessage `json:"id"`
		}
		if err := json.Unmarshal([]byte(l), &r); err != nil {
			t.Fatalf("not JSON: %q", l)
		}
		replies[string(r.ID)] = append(replies[string(r.ID)], l)
	}
	return replies
}

const initLine = `{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}` +
	"\n" + `{"jsonrpc":"2.0","method":"notifications/initialized"}`

// A call still running when stdin ends is answered before the session
// ends; a cancelled one is not waited for.
func TestStdioAnswersCallsInFlightAtEOF(t *testing.T) {
	t.Parallel()
	start := time.Now()
	replies := serveLines(t, 0, initLine,
		`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"wait_for_message","arguments":{"timeout_seconds":0.5}}}`,
		`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"wait_for_message","arguments":{"timeout_seconds":60}}}`,
		`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":2}}`,
	)
	if r := replies["1"]; len(r) != 1 || !strings.Contains(r[0], `"timed_out":true`) {
		t.Fatalf("the wait in flight at EOF: %q", r)
	}
	if took := time.Since(start); took > 30*time.Second {
		t.Errorf("waited %s: the cancelled call was waited for", took)
	}
}

// A reused id of a call in flight is refused, not dropped (the session
// would wait for its answer forever); a line over the limit is refused.
func TestStdioDuplicateIDAndLongLine(t *testing.T) {
	t.Parallel()
	replies := serveLines(t, 200, initLine,
		`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"wait_for_message","arguments":{"timeout_seconds":0.3}}}`,
		`{"jsonrpc":"2.0","id":1,"method":"ping"}`,
		`{"jsonrpc":"2.0","id":3,"method":"ping","params":{"x":"`+strings.Repeat("y", 300)+`"}}`,
		`{"jsonrpc":"2.0","id":4,"method":"ping"}`,
	)
	if r := replies["1"]; len(r) != 2 || !strings.Contains(strings.Join(r, ""), "already in use") || !strings.Contains(strings.Join(r, ""), "timed_out") {
		t.Errorf("id 1: %q", r)
	}
	if r := replies["null"]; len(r) != 1 || !strings.Contains(r[0], "-32600") || !strings.Contains(r[0], "longer than 200 bytes") {
		t.Errorf("the long line: %q", r)
	}
	if len(replies["3"]) != 0 || len(replies["4"]) != 1 {
		t.Errorf("replies: %q", replies)
	}
}

// Past MaxInFlight calls not yet answered the transport takes no more
// from stdin until one is answered, so a client that never reads its
// answers makes the server hold at most that many (100,000 unread calls
// grew it past 600 MB). A correct transport passes whatever the timing;
// the short grace is how long a wrong one has to show itself.
func TestStdioBoundsCallsInFlight(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	in, feed := io.Pipe()
	conn, err := (&Stdio{In: in, Out: io.Discard, MaxInFlight: 2}).Connect(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	go func() {
		for id := 1; id <= 3; id++ {
			fmt.Fprintf(feed, `{"jsonrpc":"2.0","id":%d,"method":"ping"}`+"\n", id)
		}
	}()
	var calls []*jsonrpc.Request
	for range 2 {
		msg, err := conn.Read(ctx)
		if err != nil {
			t.Fatal(err)
		}
		calls = append(calls, msg.(*jsonrpc.Request))
	}
	third := make(chan jsonrpc.Message, 1)
	go func() {
		msg, _ := conn.Read(ctx)
		third <- msg
	}()
	select {
	case msg := <-third:
		t.Fatalf("a third call was taken in while two were unanswered: %v", msg)
	case <-time.After(200 * time.Millisecond):
	}
	if err := conn.Write(ctx, &jsonrpc.Response{ID: calls[0].ID, Result: json.RawMessage(`{}`)}); err != nil {
		t.Fatal(err)
	}
	select {
	case msg := <-third:
		if req, ok := msg.(*jsonrpc.Request); !ok || req.ID.Raw() != int64(3) {
			t.Fatalf("after an answer the transport took %v, want call 3", msg)
		}
	case <-ctx.Done():
		t.Fatal("an answer did not make room for the next call")
	}
}
