package profile

import (
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/agentmsg/agentmsg/delivery"
)

// realWant is what a reader must make of a captured screen; the box row is
// not pinned (it moves with the size), only whether there is a box.
type realWant struct {
	state  delivery.State
	box    string
	noBox  bool
	queued bool
	shell  bool
	hold   bool
}

func lines(prefix string, n int) string {
	out := []string{fmt.Sprintf("MSG_%04d: line 1 of %d", n, n)}
	for i := 2; i <= n; i++ {
		out = append(out, fmt.Sprintf("line %d of %d", i, n))
	}
	_ = prefix
	return strings.Join(out, "\n")
}

// from is the text's lines k..n, as a scrolled composer shows them.
func from(n, k int) string {
	return strings.Join(strings.Split(lines("", n), "\n")[k-1:], "\n")
}

// Screens captured from the real CLIs (testdata/README.md says how): every
// state at 120x40 and 80x24, with COLORTERM=truecolor and without.
func TestRealScreens(t *testing.T) {
	gemini := map[string]realWant{
		// A message, or an answer, quoting dialogs and busy rows of every
		// CLI: transcript, read as such (recorded 2026-11-25).
		"quoted-dialog":       {state: delivery.Ready},
		"reply-quotes-dialog": {state: delivery.Ready},
		"quoted-status":       {state: delivery.Ready},
		"quoted-dialog-busy":  {state: delivery.Busy},
		"quoted-status-busy":  {state: delivery.Busy},
		"idle":                {state: delivery.Ready},
		"typed":               {state: delivery.Draft, box: "MSG_0001: hello there"},
		"after-submit":        {state: delivery.Ready},
		"busy":                {state: delivery.Busy},
		"busy-typed":          {state: delivery.Busy, box: "MSG_0003: while busy"},
		"busy-queued":         {state: delivery.Busy, queued: true},
		"idle-after-queue":    {state: delivery.Ready},
		// Its folder-trust menu at the first start (e2e/clis, trust-menu).
		"trust-menu": {state: delivery.Dialog, noBox: true},
		// Running agentmsg's hooks after a turn (TestLiveHooks).
		"hooks-running": {state: delivery.Busy, hold: true},
		// One hook ("Executing Hook:"), shown for 3 s after it ends; and
		// a paste made then, doubled in the box.
		"hooks-running-one":   {state: delivery.Busy, hold: true},
		"hooks-paste-doubled": {state: delivery.Busy, hold: true, box: "MSG_TESTER_3a2a02f9: a long taskMSG_TESTER_3a2a02f9: a long task"},
		"tall-2":              {state: delivery.Draft, box: lines("", 2)},
		"tall-12":             {state: delivery.Draft, box: "[Pasted Text: 12 lines]"},
		"tall-30":             {state: delivery.Draft, box: "[Pasted Text: 30 lines]"},
		"tall-60":             {state: delivery.Draft, box: "[Pasted Text: 60 lines]"},
		"after-tall":          {state: delivery.Ready},
		"draft":               {state: delivery.Draft, box: "I was typing this by hand"},
		"dialog-tool":         {state: delivery.Dialog, noBox: true},
		"after-dialog":        {state: delivery.Ready},
		"slash-picker":        {state: delivery.Draft, box: "/quit"},
		"exited":              {state: delivery.Unknown, noBox: true, shell: true},
		// An Enter 120 ms after a paste became a newline: a blank row in
		// the box, then the next paste after it.
		"enter-as-newline": {state: delivery.Draft, box: "MSG_TESTER_111: line 1 of 12: keep the id short and early … (full text: agentmsg read\nMSG_TESTER_111)"},
		"paste-after-newline": {state: delivery.Draft, box: "MSG_TESTER_111: line 1 of 12: keep the id short and early … (full text: agentmsg read\nMSG_TESTER_111)\n" +
			"MSG_TESTER_222: line 1 of 12: keep the id short and early … (full text: agentmsg read\nMSG_TESTER_222)"},
	}
	codex := map[string]realWant{
		// A message, or an answer, quoting dialogs and busy rows of every
		// CLI: transcript, read as such (recorded 2026-11-25).
		"quoted-dialog":       {state: delivery.Ready},
		"reply-quotes-dialog": {state: delivery.Ready},
		"quoted-status":       {state: delivery.Ready},
		"quoted-dialog-busy":  {state: delivery.Busy},
		"quoted-status-busy":  {state: delivery.Busy},
		"idle":                {state: delivery.Ready},
		"typed":               {state: delivery.Draft, box: "MSG_0001: hello there"},
		"after-submit":        {state: delivery.Ready},
		"busy":                {state: delivery.Busy},
		"busy-typed":          {state: delivery.Busy, box: "MSG_0003: while busy"},
		"busy-steer":          {state: delivery.Busy},
		"idle-after-steer":    {state: delivery.Ready},
		"tall-2":              {state: delivery.Draft, box: lines("", 2)},
		"tall-12":             {state: delivery.Draft, box: lines("", 12)},
		// Taller than its room: the composer scrolls (↑), its start hidden.
		"tall-30":                 {state: delivery.Draft, box: "…\n" + from(30, 7)},
		"tall-60":                 {state: delivery.Draft, box: "…\n" + from(60, 37)},
		"80x24-truecolor/tall-30": {state: delivery.Draft, box: "…\n" + from(30, 17)},
		"80x24-256/tall-30":       {state: delivery.Draft, box: "…\n" + from(30, 17)},
		"80x24-truecolor/tall-60": {state: delivery.Draft, box: "…\n" + from(60, 47)},
		"80x24-256/tall-60":       {state: delivery.Draft, box: "…\n" + from(60, 47)},
		"tall-2-after-enter":      {state: delivery.Ready},
		"tall-12-after-enter":     {state: delivery.Ready},
		"tall-30-after-enter":     {state: delivery.Ready},
		"tall-60-after-enter":     {state: delivery.Ready},
		"draft":                   {state: delivery.Draft, box: "I was typing this by hand"},
		"warnings-overlay":        {state: delivery.Dialog, noBox: true},
		"after-ctrl-c":            {state: delivery.Ready},
		"slash-picker":            {state: delivery.Draft, box: "/quit"},
		"exited":                  {state: delivery.Unknown, noBox: true, shell: true},
		"startup-menu":            {state: delivery.Dialog, noBox: true},
		// Its approval of an MCP tool call (e2e/clis, codex/mcp-approval).
		"mcp-approval": {state: delivery.Dialog, noBox: true},
		// A reply streaming: no "Working" line, only the missing "Worked for".
		"busy-streaming":       {state: delivery.Busy},
		"busy-streaming-typed": {state: delivery.Busy, box: "MSG_0003: typed while it streams"},
		"streamed-then-typed":  {state: delivery.Draft, box: "MSG_0003: typed while it streams"},
	}
	qwen := map[string]realWant{
		// A message, or an answer, quoting dialogs and busy rows of every
		// CLI: transcript, read as such (recorded 2026-11-25).
		"quoted-dialog":       {state: delivery.Ready},
		"reply-quotes-dialog": {state: delivery.Ready},
		"quoted-status":       {state: delivery.Ready},
		"quoted-dialog-busy":  {state: delivery.Busy},
		"quoted-status-busy":  {state: delivery.Busy},
		"idle":                {state: delivery.Ready},
		"typed":               {state: delivery.Draft, box: "MSG_0001: hello there"},
		"after-submit":        {state: delivery.Ready},
		"busy":                {state: delivery.Busy},
		"busy-typed":          {state: delivery.Busy, box: "MSG_0003: while busy"},
		"busy-queued":         {state: delivery.Busy, queued: true},
		// A long loading phrase wraps the busy row's end ("(2s · esc to" /
		// "cancel)"); recorded with the longest of its phrases set as
		// ui.customWittyPhrases. The reader read Ready: CI's flake of
		// TestLiveBusy/qwen (1 phrase in 127 is that long at 100 columns).
		"busy-long-phrase": {state: delivery.Busy},
		// In tmux ($TMUX set, as for every real user) its spinner is ". "
		// or "..", not braille (RespondingSpinner.tsx, TMUX_SPINNER_FRAMES).
		"busy-in-tmux": {state: delivery.Busy},
		// After a turn Qwen Code shows a suggested next prompt, dimmed, in
		// the box (here "ok", from the fake model). Without colours it is
		// text: read as a draft, never typed over (see e2e/clis/NOTES.md).
		"idle-after-queue":                     {state: delivery.Draft, box: "ok"},
		"80x24-256/after-tall":                 {state: delivery.Draft, box: "ok"},
		"120x40-truecolor/after-approval-mode": {state: delivery.Draft, box: "ok"},
		"tall-2":                               {state: delivery.Draft, box: lines("", 2)},
		"tall-12":                              {state: delivery.Draft, box: "[Pasted Content 168 chars]"},
		"tall-30":                              {state: delivery.Draft, box: "[Pasted Content 420 chars]"},
		"tall-60":                              {state: delivery.Draft, box: "[Pasted Content 840 chars]"},
		"after-tall":                           {state: delivery.Ready},
		"draft":                                {state: delivery.Draft, box: "I was typing this by hand"},
		"after-approval-mode":                  {state: delivery.Ready},
		"dialog-tool":                          {state: delivery.Dialog, noBox: true},
		"after-dialog":                         {state: delivery.Ready},
		"slash-picker":                         {state: delivery.Draft, box: "/quit"},
		"exited":                               {state: delivery.Unknown, noBox: true, shell: true},
	}
	droid := map[string]realWant{
		// A message, or an answer, quoting dialogs and busy rows of every
		// CLI: transcript, read as such (recorded 2026-11-25).
		"quoted-dialog":       {state: delivery.Ready},
		"reply-quotes-dialog": {state: delivery.Ready},
		"quoted-status":       {state: delivery.Ready},
		"quoted-dialog-busy":  {state: delivery.Busy},
		"quoted-status-busy":  {state: delivery.Busy},
		// Without a Factory login (no Airgap Mode): a menu, no box.
		"login": {state: delivery.Dialog, noBox: true},
		// "Trust this folder?" on a folder's first start.
		"startup-menu":        {state: delivery.Dialog, noBox: true},
		"idle":                {state: delivery.Ready},
		"typed":               {state: delivery.Draft, box: "MSG_0001: hello there"},
		"after-submit":        {state: delivery.Ready},
		"tall-2":              {state: delivery.Draft, box: "MSG_0002: line 1 of 2\nline 2 of 2"},
		"tall-2-after-enter":  {state: delivery.Ready},
		"tall-12":             {state: delivery.Draft, box: "[MSG_0012: line 1 of 12 line 2 of 12 line 3 of 12 l... 12 lines]"},
		"tall-12-after-enter": {state: delivery.Ready},
		"busy":                {state: delivery.Busy},
		// Typed while busy: the steer hint is a row of the box, not text.
		"busy-typed": {state: delivery.Busy, box: "MSG_0004: while busy"},
		// Enter while busy: "Steering messages:", sent after the turn.
		"busy-queued":      {state: delivery.Busy, queued: true},
		"busy-streaming":   {state: delivery.Busy, queued: true},
		"idle-after-queue": {state: delivery.Ready},
		"draft":            {state: delivery.Draft, box: "I was typing this by hand"},
		// One Ctrl+C empties the box ("Press Ctrl+C again to exit.").
		"after-ctrl-c": {state: delivery.Ready},
		"dialog-tool":  {state: delivery.Dialog, noBox: true},
		"after-dialog": {state: delivery.Ready},
		"slash-picker": {state: delivery.Draft, box: "/quit"},
		"exited":       {state: delivery.Unknown, noBox: true, shell: true},
	}
	for _, c := range []struct {
		dir    string
		reader delivery.ScreenReader
		want   map[string]realWant
	}{
		{"testdata/droid/0.225.2", Droid{}, droid},
		{"testdata/qwen/0.24.4", Gemini{Product: "Qwen Code"}, qwen},
		{"testdata/gemini/0.61.0", Gemini{Product: "Gemini CLI"}, gemini},
		{"testdata/codex/0.169.0", Codex{}, codex},
	} {
		files, _ := filepath.Glob(filepath.Join(c.dir, "*", "*.txt"))
		if len(files) < 30 {
			t.Fatalf("%s: only %d screens", c.dir, len(files))
		}
		for _, f := range files {
			rel, _ := filepath.Rel(c.dir, f)
			rel = strings.TrimSuffix(rel, ".txt")
			state := filepath.Base(rel)
			t.Run(strings.TrimPrefix(c.dir, "testdata/")+"/"+rel, func(t *testing.T) {
				w, ok := c.want[rel]
				if !ok {
					w, ok = c.want[state]
				}
				if !ok {
					t.Fatalf("no expectation for %s", state)
				}
				got := c.reader.Read(readScreen(t, f))
				if got.State != w.state || got.Box != w.box || (got.BoxRow < 0) != w.noBox || got.Queued != w.queued || got.Shell != w.shell || got.Hold != w.hold {
					t.Errorf("Read = %+v\nwant %+v", got, w)
				}
				if got.State != delivery.Ready && got.Detail == "" {
					t.Errorf("state %s without a detail", got.State)
				}
			})
		}
	}
}

// Once the banner has scrolled away, a live box is still known by its
// footer: every captured screen with a box is recognised with the banner's
// lines blanked.
func TestRecognizedWithoutBanner(t *testing.T) {
	for _, c := range []struct {
		glob   string
		reader recognizer
		banner []string
	}{
		{"testdata/codex/0.169.0/*/*.txt", Codex{}, []string{"OpenAI Codex", "Codex"}},
		{"testdata/gemini/0.61.0/*/*.txt", Gemini{Product: "Gemini CLI"}, []string{"Gemini CLI", "Tips for getting started"}},
		{"testdata/droid/0.225.2/*/*.txt", Droid{}, []string{"D R O I D", "███", "v0.225.2"}},
	} {
		files, _ := filepath.Glob(c.glob)
		for _, f := range files {
			screen := readScreen(t, f)
			for i, l := range screen {
				for _, b := range c.banner {
					if strings.Contains(l, b) {
						screen[i] = ""
					}
				}
			}
			rd := c.reader.(delivery.ScreenReader).Read(screen)
			if rd.BoxRow < 0 {
				continue
			}
			if why, ok := c.reader.recognize(trimScreen(screen)); !ok {
				t.Errorf("%s: not recognised without its banner (%+v)", f, rd)
			} else if why == "" {
				t.Errorf("%s: no reason", f)
			}
		}
	}
}

// Gemini's hooks row is its status row, not any line that mentions hooks:
// a reply saying "Executing Hooks: …" right above the box leaves an idle
// Gemini ready, and the real row, with or without its spinner, holds it.
func TestGeminiHooksRowIsTheStatusRow(t *testing.T) {
	screen := readScreen(t, filepath.Join("testdata", "gemini", "0.61.0", "120x40-256", "after-submit.txt"))
	// The row over "? for shortcuts", where Gemini draws its status.
	i := slices.IndexFunc(screen, func(l string) bool { return strings.HasSuffix(l, "? for shortcuts") }) - 1
	if i < 0 {
		t.Fatal("no status row on the screen")
	}
	for line, hold := range map[string]bool{
		"✦ Executing Hooks: is what it shows while they run": false,
		"  the words executing hook: are in this reply":      false,
		" ⠙ Executing Hook: /bin/true":                       true,
		"  Executing Hooks: /bin/true, /bin/false":           true,
	} {
		s := slices.Clone(screen)
		s[i] = line
		got := Gemini{}.Read(s)
		if got.Hold != hold || (got.State == delivery.Busy) != hold {
			t.Errorf("with %q above the box: %+v, want hold %v", line, got, hold)
		}
	}
}
