package hosts

import (
	"context"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"
)

// A message the embedded server acknowledged is still there after the server
// restarts on the same store: the store is what makes a send durable.
func TestEmbeddedKeepsAStreamAcrossRestarts(t *testing.T) {
	dir := t.TempDir()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()

	publish := func() {
		e, err := StartEmbedded(dir)
		if err != nil {
			t.Fatal(err)
		}
		defer e.Close()
		nc, err := e.Connect("test")
		if err != nil {
			t.Fatal(err)
		}
		defer nc.Close()
		js, _ := jetstream.New(nc)
		if _, err := js.CreateStream(ctx, jetstream.StreamConfig{Name: "T", Subjects: []string{"t.>"}}); err != nil {
			t.Fatal(err)
		}
		if _, err := js.Publish(ctx, "t.a", []byte("kept")); err != nil {
			t.Fatal(err)
		}
	}
	publish()

	e, err := StartEmbedded(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	nc, err := e.Connect("test")
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	js, _ := jetstream.New(nc)
	s, err := js.Stream(ctx, "T")
	if err != nil {
		t.Fatal(err)
	}
	m, err := s.GetLastMsgForSubject(ctx, "t.a")
	if err != nil {
		t.Fatalf("after a restart: %v", err)
	}
	if string(m.Data) != "kept" {
		t.Fatalf("after a restart: %q, want kept", m.Data)
	}
}
