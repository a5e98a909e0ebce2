// Command calibrate finds, for a real agent CLI, the shortest settle (the
// pause between seeing a pasted text in the input box and pressing submit)
// at which every send of a run is submitted by its first press.
//
// It runs the CLI offline against e2e/fakeapi on a private tmux server,
// like the live tests (e2e/clis), and sends through the built agentmsg
// with the profile's settle overridden in its config file, one candidate
// pause at a time, shortest first. A send whose first press did not submit
// (the engine had to press again: the CLI took the Enter as a newline, or
// swallowed it) fails the candidate at once; the fake API's log must hold
// every message exactly once either way. The first candidate with every
// send on one press is the measurement; a profile uses it with a margin
// (package profile says which). scripts/calibrate runs it.
package main

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/agentmsg/agentmsg/delivery"
	clisharness "github.com/agentmsg/agentmsg/e2e/clis"
	"github.com/agentmsg/agentmsg/e2e/fakeapi"
	"github.com/agentmsg/agentmsg/e2e/harness"
)

func main() {
	cli := flag.String("cli", "", "the CLI: claude, codex, gemini or qwen (required)")
	sends := flag.Int("sends", 100, "sends per candidate pause; all must submit on the first press")
	pauses := flag.String("pauses", "0,10,20,30,50,75,100,150,200,250,300,400,500", "candidate pauses in ms, tried in this order")
	height := flag.Int("height", 40, "pane height (width 100)")
	truecolor := flag.Bool("truecolor", true, "COLORTERM=truecolor")
	record := flag.String("record", "", "add the run to this calibration file (profile/calibration.json), which sets the profile's settle")
	flag.Parse()
	if !slices.Contains(clisharness.All, *cli) {
		fmt.Fprintf(os.Stderr, "calibrate: -cli %q: want one of %s\n", *cli, strings.Join(clisharness.All, ", "))
		os.Exit(2)
	}
	var candidates []time.Duration
	for _, f := range strings.Split(*pauses, ",") {
		ms, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || ms < 0 {
			fmt.Fprintf(os.Stderr, "calibrate: -pauses: %q is not a whole number of ms\n", f)
			os.Exit(2)
		}
		candidates = append(candidates, time.Duration(ms)*time.Millisecond)
	}
	c := &calibration{cli: *cli, sends: *sends, height: *height, truecolor: *truecolor, record: *record}
	err := c.run(candidates)
	c.close()
	harness.Cleanup()
	if err != nil {
		fmt.Fprintln(os.Stderr, "calibrate:", err)
		os.Exit(1)
	}
}

// calibration is one CLI running in a private tmux server, its fake API
// and the agentmsg under test.
type calibration struct {
	cli            string
	sends, height  int
	truecolor      bool
	dir, sock, bin string
	api            *fakeapi.Server
	agent          *clisharness.Agent
	seq            int
	version        string
	record         string // the calibration file to add the run to, or ""
}

// tally is what one candidate pause gave.
type tally struct {
	pause        time.Duration
	sent, first  int    // sends made, and submitted by their first press
	failure      string // the first send that needed more, or went wrong
	median, p95  time.Duration
	sendDuration []time.Duration
}

func (c *calibration) run(candidates []time.Duration) error {
	if err := c.start(); err != nil {
		return err
	}
	fmt.Fprintf(os.Stderr, "%s %s, pane 100x%d, truecolor %v: %d sends per pause, shortest first\n",
		c.cli, c.version, c.height, c.truecolor, c.sends)
	var tallies []tally
	var found *tally
	for _, p := range candidates {
		t, err := c.candidate(p)
		if err != nil {
			return err
		}
		tallies = append(tallies, t)
		status := fmt.Sprintf("%d of %d on the first press", t.first, t.sent)
		if t.failure != "" {
			status += "; " + t.failure
		}
		fmt.Fprintf(os.Stderr, "  settle %4d ms: %s\n", p.Milliseconds(), status)
		if t.first == c.sends {
			found = &tallies[len(tallies)-1]
			break
		}
	}
	fmt.Printf("\n%s %s (%s, pane 100x%d, truecolor %v)\n", c.cli, c.version, harness.TmuxVersion(), c.height, c.truecolor)
	fmt.Printf("%-10s %-24s %s\n", "settle", "first press", "send, process start to verdict")
	for _, t := range tallies {
		fmt.Printf("%-10s %-24s median %v, p95 %v\n", fmt.Sprintf("%d ms", t.pause.Milliseconds()),
			fmt.Sprintf("%d of %d", t.first, t.sent), t.median.Round(time.Millisecond), t.p95.Round(time.Millisecond))
	}
	if found == nil {
		return fmt.Errorf("no candidate pause had %d of %d sends submit on the first press", c.sends, c.sends)
	}
	fmt.Printf("shortest settle with %d of %d on the first press: %d ms\n", c.sends, c.sends, found.pause.Milliseconds())
	if c.record == "" {
		return nil
	}
	return c.recordRun(found.pause)
}

// start builds agentmsg, starts the fake API and the CLI.
func (c *calibration) start() error {
	exe, err := clisharness.Find(c.cli)
	if err != nil {
		if exe, err = clisharness.Ensure(c.cli); err != nil {
			return err
		}
	}
	if c.version, err = clisharness.Version(exe); err != nil {
		return fmt.Errorf("%s --version: %w", exe, err)
	}
	bins, err := harness.Build()
	if err != nil {
		return err
	}
	c.bin = bins.Agentmsg
	if c.dir, err = os.MkdirTemp("", "amk"); err != nil { // short: socket paths are limited
		return err
	}
	c.sock = filepath.Join(c.dir, "s")
	if c.api, err = fakeapi.New(fakeapi.Config{LogPath: filepath.Join(c.dir, "api.jsonl")}); err != nil {
		return err
	}
	if err := c.api.Start(); err != nil {
		return err
	}
	fmt.Fprintf(os.Stderr, "starting %s...\n", c.cli)
	c.agent, err = clisharness.Start(clisharness.Options{
		CLI: c.cli, Exe: exe, Socket: c.sock, Root: c.dir, APIURL: c.api.URL(),
		Session: "agent-cal-" + c.cli, Width: 100, Height: c.height, Truecolor: c.truecolor,
	})
	return err
}

func (c *calibration) close() {
	if c.agent != nil {
		_ = c.agent.Close()
	}
	if c.sock != "" {
		_ = exec.Command("tmux", "-S", c.sock, "kill-server").Run()
	}
	if c.api != nil {
		_ = c.api.Close()
	}
	if c.dir != "" {
		_ = harness.RemoveSettled(c.dir)
	}
}

// candidate makes up to c.sends sends with the profile's settle set to
// pause, stopping at the first that did not submit on its first press.
func (c *calibration) candidate(pause time.Duration) (tally, error) {
	t := tally{pause: pause}
	conf := fmt.Sprintf("[profiles.%s]\nsettle = %q\n", c.cli, fmt.Sprintf("%dms", pause.Milliseconds()))
	confPath := filepath.Join(c.dir, "config", "agentmsg", "config.toml")
	if err := os.MkdirAll(filepath.Dir(confPath), 0o700); err != nil {
		return t, err
	}
	if err := os.WriteFile(confPath, []byte(conf), 0o600); err != nil {
		return t, err
	}
	for t.sent < c.sends {
		c.seq++
		text := calibrationText(c.seq, pause)
		rep, took, err := c.send(text)
		if err != nil {
			return t, err
		}
		t.sent++
		t.sendDuration = append(t.sendDuration, took)
		if err := c.arrivedOnce(rep.ID); err != nil {
			return t, err
		}
		ok := rep.Presses == 1 && (rep.Verdict == "submitted" || rep.Verdict == "queued")
		if !ok {
			t.failure = fmt.Sprintf("send %d: verdict %s after %d presses", t.sent, rep.Verdict, rep.Presses)
			break
		}
		t.first++
		if t.sent%10 == 0 {
			fmt.Fprintf(os.Stderr, "    %d ms: %d sends\n", pause.Milliseconds(), t.sent)
		}
	}
	t.median, t.p95 = harness.Percentile(t.sendDuration, 50), harness.Percentile(t.sendDuration, 95)
	return t, nil
}

// calibrationText is the seq-th text sent: in turn one short line, two
// lines, a line as long as a pointer to a folded message, and a line of
// 300 characters, since a paste-burst guard may take longer pastes longer.
func calibrationText(seq int, pause time.Duration) string {
	head := fmt.Sprintf("calibration %d at %d ms", seq, pause.Milliseconds())
	switch seq % 4 {
	case 1:
		return head + "\nand a second line"
	case 2:
		return head + ": line 1 of 12: keep the id short and early … (full text: agentmsg read MSG_CALIBRATE_0123abcd)"
	case 3:
		return head + ": " + strings.Repeat("a long line of words ", 14)
	}
	return head
}

// send runs `agentmsg --json send cal CLI TEXT` and decodes its report.
func (c *calibration) send(text string) (harness.SendReport, time.Duration, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, c.bin, "-S", c.sock, "--json", "send", "cal", c.cli, text)
	cmd.Env = harness.AgentmsgEnv(c.dir, "calibrate") // the config candidate writes is under c.dir
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	start := time.Now()
	err := cmd.Run()
	took := time.Since(start)
	var ee *exec.ExitError
	if err != nil && !errors.As(err, &ee) {
		return harness.SendReport{}, took, err
	}
	rep, derr := harness.Decode[harness.SendReport](out.String())
	if derr != nil {
		return rep, took, fmt.Errorf("%w\nstderr: %s", derr, errOut.String())
	}
	return rep, took, nil
}

// arrivedOnce waits until the message reached the fake API and the agent
// is idle again, then checks that it arrived exactly once.
func (c *calibration) arrivedOnce(id string) error {
	count := func() int {
		n := 0
		for _, r := range c.api.Records() {
			if r.Kind == fakeapi.KindPrompt && strings.Contains(r.Text, id) {
				n++
			}
		}
		return n
	}
	deadline := time.Now().Add(time.Minute)
	for count() == 0 {
		if time.Now().After(deadline) {
			s, _ := c.agent.Capture()
			return fmt.Errorf("%s never reached the API\nscreen:\n%s", id, s)
		}
		time.Sleep(20 * time.Millisecond)
	}
	if s, err := c.agent.WaitState(time.Minute, delivery.Ready); err != nil {
		return fmt.Errorf("not idle after %s: %w\nscreen:\n%s", id, err, s)
	}
	if n := count(); n != 1 {
		return fmt.Errorf("%s reached the API %d times", id, n)
	}
	return nil
}
