package main

import (
	"os"
	"path/filepath"
	"testing"
	"time"
)

func TestEventLogFormat(t *testing.T) {
	path := filepath.Join(t.TempDir(), "log")
	l, err := openEventLog(path)
	if err != nil {
		t.Fatal(err)
	}
	err = l.write([]record{
		{T: "2025-01-02T03:04:05Z", Kind: "prompt", Text: "a<b> & \"q\"\n\t#{x}"},
		{T: "2025-01-02T03:04:06Z", Kind: "prompt", Text: "z", Queued: true},
	})
	if err != nil {
		t.Fatal(err)
	}
	got, _ := os.ReadFile(path)
	want := `{"t":"2025-01-02T03:04:05Z","kind":"prompt","text":"a<b> & \"q\"\n\t#{x}"}` + "\n" +
		`{"t":"2025-01-02T03:04:06Z","kind":"prompt","text":"z","queued":true}` + "\n"
	if string(got) != want {
		t.Fatalf("got\n%s\nwant\n%s", got, want)
	}
}

func TestParseFlags(t *testing.T) {
	o, err := parseFlags([]string{"-log", "x", "-style", "plain", "-state", "dialog", "-queue",
		"-busy-after-submit", "2s", "-fold-bytes", "10", "-fold-lines", "0", "-drop-enter", "2", "-enter-guard", "120ms"})
	if err != nil {
		t.Fatal(err)
	}
	want := config{style: "plain", queue: true, busyAfterSubmit: 2 * time.Second,
		enterGuard: 120 * time.Millisecond, foldBytes: 10, foldLines: 0, dropEnter: 2, bracketedPaste: true}
	if o.cfg != want || o.initial != stateDialog || o.logPath != "x" {
		t.Fatalf("got %+v", o)
	}
	o, err = parseFlags([]string{"-log", "x", "-bracketed-paste=false", "-on-submit", "rec", "-on-turn-end", "deliver"})
	if err != nil {
		t.Fatal(err)
	}
	if o.cfg.bracketedPaste || o.cfg.onSubmit != "rec" || o.cfg.onTurnEnd != "deliver" {
		t.Fatalf("got %+v", o.cfg)
	}
	for _, bad := range [][]string{{}, {"-log", "x", "-style", "fancy"}, {"-log", "x", "-state", "asleep"}} {
		if _, err := parseFlags(bad); err == nil {
			t.Errorf("parseFlags(%q) succeeded", bad)
		}
	}
}
