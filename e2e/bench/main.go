// Command bench measures agentmsg against stand-in agents on a private tmux
// server: one send from process start to verdict, broadcasts to 20 and 100
// agents, and 8 concurrent senders to one agent. It prints a table; it never
// fails on a slow machine, it reports. scripts/bench runs it.
package main

import (
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"os"
	"regexp"
	"strings"
	"sync"
	"text/tabwriter"
	"time"

	"github.com/agentmsg/agentmsg/e2e/harness"
	"github.com/agentmsg/agentmsg/mailbox"
	"github.com/agentmsg/agentmsg/message"
)

func main() {
	sends := flag.Int("sends", 50, "single sends to time")
	senders := flag.Int("senders", 8, "concurrent senders to one agent")
	each := flag.Int("each", 25, "messages per concurrent sender")
	claude := flag.Bool("claude", true, "also time sends to the real Claude Code (needs it installed: scripts/claude.sh)")
	daemon := flag.Bool("daemon", true, "also time the same through the daemon (agentmsg serve)")
	only := flag.String("only", "", "run only the rows whose names match this regexp (see -list)")
	list := flag.Bool("list", false, "print the rows' names and exit")
	flag.StringVar(&profileDir, "profile", "", "write each daemon's CPU profile and execution trace into this directory (ROW.pprof, ROW.trace)")
	flag.Parse()
	err := run(benches(*sends, *senders, *each, *claude, *daemon), *only, *list)
	harness.Cleanup()
	if err != nil {
		fmt.Fprintln(os.Stderr, "bench:", err)
		os.Exit(1)
	}
}

type row struct{ what, result, target string }

// bench is one row of the table, by a name -only can pick.
type bench struct {
	name string
	run  func() (row, error)
}

func benches(sends, senders, each int, claude, daemon bool) []bench {
	// The stand-in drawn as a plain prompt is read by the generic profile,
	// which needs no pause before submit; drawn as Claude Code, it is read
	// as Claude Code, whose profile pauses 20 ms before submit.
	bs := []bench{
		{"send", func() (row, error) { return benchSend(sends, "plain", 0) }},
		// An agent that has had many messages: its inbox at the default
		// bound, which every send reads to keep older messages first.
		{"send-full-inbox", func() (row, error) { return benchSend(sends, "plain", fullInbox) }},
		{"send-claude-like", func() (row, error) { return benchSend(sends, "claude", 0) }},
		// A team's size: what the durable step a broadcast takes before
		// typing (its intent, mailbox.Intent) costs shows most here.
		{"broadcast-12", func() (row, error) { return benchBroadcast(12, 20) }},
		{"broadcast-20", func() (row, error) { return benchBroadcast(20, 5) }},
		{"broadcast-100", func() (row, error) { return benchBroadcast(100, 5) }},
		{"concurrent", func() (row, error) { return benchConcurrent(senders, each) }},
	}
	if claude {
		bs = append(bs, bench{"claude", func() (row, error) { return benchClaude(10) }})
	}
	if daemon {
		bs = append(bs,
			bench{"daemon-api-send", func() (row, error) { return benchAPISend(4 * sends) }},
			bench{"daemon-cli-send", func() (row, error) { return benchCLIThroughDaemon(sends) }},
			bench{"daemon-broadcast-12", func() (row, error) { return benchAPIBroadcast(12, 20) }},
			bench{"daemon-broadcast-100", func() (row, error) { return benchAPIBroadcast(100, 5) }},
			bench{"daemon-broadcast-500", func() (row, error) { return benchAPIBroadcast(500, 5) }},
			bench{"daemon-concurrent", func() (row, error) { return benchConcurrentThroughDaemon(senders, each) }},
		)
	}
	return bs
}

func run(bs []bench, only string, list bool) error {
	pick, err := regexp.Compile(only)
	if err != nil {
		return fmt.Errorf("-only: %w", err)
	}
	var rows []row
	if !list {
		fmt.Fprintf(os.Stderr, "building and measuring on %s (a minute or so)...\n", harness.TmuxVersion())
	}
	for _, b := range bs {
		if !pick.MatchString(b.name) {
			continue
		}
		if list {
			fmt.Println(b.name)
			continue
		}
		current = b.name
		r, err := b.run()
		if err != nil {
			return fmt.Errorf("%s: %w", b.name, err)
		}
		rows = append(rows, r)
		fmt.Fprintf(os.Stderr, "  %s: %s\n", r.what, r.result)
	}
	if list {
		return nil
	}
	tw := tabwriter.NewWriter(os.Stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintf(tw, "on %s\n", harness.TmuxVersion())
	fmt.Fprintln(tw, "MEASURE\tRESULT\tTARGET")
	for _, r := range rows {
		fmt.Fprintf(tw, "%s\t%s\t%s\n", r.what, r.result, r.target)
	}
	return tw.Flush()
}

// withServer runs fn against a fresh private server with n ready agents of
// team "bench" (agent-bench-a000...).
func withServer(n int, fn func(s *harness.Server, agents []*harness.Agent) error, opts ...harness.AgentOption) error {
	s, err := harness.NewServer()
	if err != nil {
		return err
	}
	defer s.Close()
	agents := make([]*harness.Agent, n)
	var g sync.WaitGroup
	errs := make([]error, n)
	for i := range n {
		g.Add(1)
		go func() {
			defer g.Done()
			agents[i], errs[i] = s.StartAgent(fmt.Sprintf("agent-bench-a%03d", i), opts...)
		}()
	}
	g.Wait()
	if err := errors.Join(errs...); err != nil {
		return err
	}
	return fn(s, agents)
}

// fullInbox is the default bound of an inbox (keep_count).
const fullInbox = 1000

func benchSend(n int, style string, inbox int) (row, error) {
	var times []time.Duration
	var reps []claudeReport
	err := withServer(1, func(s *harness.Server, agents []*harness.Agent) error {
		if err := fillInbox(s, inbox); err != nil {
			return err
		}
		agent := []string{}
		if style == "claude" {
			agent = []string{"--agent", "claude"} // the stand-ins' own profile takes no settle
		}
		for i := range n {
			res, err := s.Run(append(append([]string{"--json", "send"}, agent...), "bench", "a000", fmt.Sprintf("message %d", i))...)
			if err != nil {
				return err
			}
			var rep claudeReport
			if res.Code != 0 || json.Unmarshal([]byte(res.Stdout), &rep) != nil {
				return fmt.Errorf("send %d: %s", i, res)
			}
			times = append(times, res.Elapsed)
			reps = append(reps, rep)
		}
		got, err := agents[0].WaitReceived(n, 10*time.Second)
		if err != nil || len(got) != n {
			return fmt.Errorf("agent received %d of %d: %v", len(got), n, err)
		}
		return nil
	}, harness.Style(style))
	if err != nil {
		return row{}, err
	}
	what, target := "send to a ready agent, process start to verdict", "median <= 20 ms, p95 <= 30 ms"
	if style == "claude" {
		what = fmt.Sprintf("send to a ready Claude-like agent (the claude profile: %v settle)", claudeSettle())
		target = "the same + its settle"
	}
	if inbox > 0 {
		what += fmt.Sprintf(", its inbox holding %d messages", inbox)
	}
	return row{
		what:   fmt.Sprintf("%s (n=%d)", what, n),
		result: fmt.Sprintf("median %s, p95 %s; %s", ms(harness.Percentile(times, 50)), ms(harness.Percentile(times, 95)), medianPhases(times, reps)),
		target: target,
	}, nil
}

// fillInbox gives agent a000 an inbox of n delivered messages, each with
// the updates a send leaves (pasted, pressed, submitted).
func fillInbox(s *harness.Server, n int) error {
	if n == 0 {
		return nil
	}
	box, err := s.Mailbox().Box("bench", "a000")
	if err != nil {
		return err
	}
	for i := range n {
		id, err := message.NewID("LEAD", nil)
		if err != nil {
			return err
		}
		env := mailbox.Envelope{ID: id, From: "lead", To: "a000", Type: mailbox.TypeText,
			Content:  fmt.Sprintf("earlier message %d: a line or two of what to do next and why", i),
			Delivery: &mailbox.Delivery{State: mailbox.StateTyping, Attempts: 1}}
		if err := box.Append(env); err != nil {
			return err
		}
		for _, d := range []mailbox.Delivery{
			{State: mailbox.StateTyping, Attempts: 1, Reached: "pasted"},
			{State: mailbox.StateTyping, Attempts: 1, Reached: "pressed"},
			{State: mailbox.StateSubmitted, Attempts: 1, LastVerdict: "submitted", Reached: "pressed"},
		} {
			if err := box.SetDelivery(id, d); err != nil {
				return err
			}
		}
	}
	return nil
}

func benchBroadcast(n, runs int) (row, error) {
	var times []time.Duration
	err := withServer(n, func(s *harness.Server, agents []*harness.Agent) error {
		for i := range runs {
			res, err := s.Run("--json", "broadcast", "bench", fmt.Sprintf("broadcast %d", i))
			if err != nil {
				return err
			}
			rep, err := harness.Decode[harness.BroadcastReport](res.Stdout)
			if err != nil || res.Code != 0 || rep.Delivered != n {
				return fmt.Errorf("broadcast to %d: %v\n%s", n, err, res)
			}
			times = append(times, res.Elapsed)
		}
		for _, a := range agents {
			if got, err := a.WaitReceived(runs, 10*time.Second); err != nil || len(got) != runs {
				return fmt.Errorf("%s received %d of %d: %v", a.Session, len(got), runs, err)
			}
		}
		return nil
	}, harness.Style("plain"), harness.NoCue())
	if err != nil {
		return row{}, err
	}
	return row{
		what:   fmt.Sprintf("broadcast to %d agents (%d runs)", n, runs),
		result: fmt.Sprintf("median %s, max %s", ms(harness.Percentile(times, 50)), ms(harness.Percentile(times, 100))),
		target: target(n, "100 agents <= 300 ms"),
	}, nil
}

// target is want for the sizes it names, "-" for another.
func target(n int, want string) string {
	if strings.HasPrefix(want, fmt.Sprint(n)+" ") {
		return want
	}
	return "-"
}

func benchConcurrent(senders, each int) (row, error) {
	var (
		elapsed time.Duration
		merged  int
		total   = senders * each
	)
	err := withServer(1, func(s *harness.Server, agents []*harness.Agent) error {
		want := map[string]bool{}
		var mu sync.Mutex
		start := time.Now()
		var g sync.WaitGroup
		errs := make([]error, senders)
		for w := range senders {
			g.Add(1)
			go func() {
				defer g.Done()
				for i := range each {
					text := fmt.Sprintf("sender %d message %d", w, i)
					res, err := s.Run("--json", "send", "bench", "a000", text)
					if err == nil && res.Code != 0 {
						err = fmt.Errorf("%s", res)
					}
					if err != nil {
						errs[w] = err
						return
					}
					rep, err := harness.Decode[harness.SendReport](res.Stdout)
					if err != nil {
						errs[w] = err
						return
					}
					mu.Lock()
					want[harness.Submitted(rep.ID, text)] = true
					mu.Unlock()
				}
			}()
		}
		g.Wait()
		elapsed = time.Since(start)
		if err := errors.Join(errs...); err != nil {
			return err
		}
		got, err := agents[0].WaitReceived(total, 10*time.Second)
		if err != nil {
			return err
		}
		for _, p := range got {
			if !want[p] {
				merged++ // not exactly one message: merged, split or mangled
			}
			delete(want, p)
		}
		merged += len(want) // never arrived whole
		return nil
	}, harness.Style("plain"))
	if err != nil {
		return row{}, err
	}
	return row{
		what:   fmt.Sprintf("%d senders x %d messages to one agent", senders, each),
		result: fmt.Sprintf("%.0f msgs/s, %d of %d merged or lost", float64(total)/elapsed.Seconds(), merged, total),
		target: ">= 60 msgs/s, 0 merged",
	}, nil
}

func ms(d time.Duration) string { return fmt.Sprintf("%.1f ms", float64(d.Microseconds())/1000) }
