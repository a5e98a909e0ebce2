package mailbox

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/agentmsg/agentmsg/message"
)

// The helper tests are the other processes of the multi-process tests:
// the test binary re-executed with helperEnv set. Each writer prints the
// id of every message once Append has returned, so the parent knows
// exactly which messages were acknowledged as stored.
const helperEnv = "AGENTMSG_MAILBOX_HELPER"

func TestHelperWriter(t *testing.T) {
	if os.Getenv(helperEnv) != "writer" {
		t.Skip("helper process")
	}
	s := New(os.Getenv("MB_ROOT"))
	b, err := s.Box(team, os.Getenv("MB_AGENT"))
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	n, _ := strconv.Atoi(os.Getenv("MB_N")) // < 0: until killed
	size, _ := strconv.Atoi(os.Getenv("MB_SIZE"))
	from := os.Getenv("MB_FROM")
	sender, _ := message.Sender(from)
	pad := strings.Repeat("x", size)
	var delivery *Delivery
	if st := os.Getenv("MB_STATE"); st != "" {
		delivery = &Delivery{State: DeliveryState(st)}
	}
	for i := 0; n < 0 || i < n; i++ {
		id, err := message.NewID(sender, nil)
		if err == nil {
			err = b.Append(Envelope{ID: id, From: from, To: b.Agent, Type: TypeText,
				Content: fmt.Sprintf("%d %s", i, pad), Delivery: delivery})
		}
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(2)
		}
		fmt.Println(id) // unbuffered: acknowledged before the next append
	}
	os.Exit(0)
}

func TestHelperClaimer(t *testing.T) {
	if os.Getenv(helperEnv) != "claimer" {
		t.Skip("helper process")
	}
	_, err := New(os.Getenv("MB_ROOT")).Claim(team, os.Getenv("MB_REQUEST"), os.Getenv("MB_FROM"))
	var ce *ClaimedError
	switch {
	case err == nil:
		fmt.Println("won")
	case errors.As(err, &ce):
		fmt.Println("lost", ce.By)
	default:
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	os.Exit(0)
}

type helper struct {
	cmd *exec.Cmd
	in  io.WriteCloser // closing it tells a holder to let go
	out io.ReadCloser
	err strings.Builder
}

func startHelper(t *testing.T, ctx context.Context, kind string, env ...string) *helper {
	t.Helper()
	run := map[string]string{"writer": "TestHelperWriter", "claimer": "TestHelperClaimer", "limited": "TestHelperLimitedAppend",
		"holder": "TestHelperHolder", "fanout": "TestHelperFanout",
		"poster": "TestHelperPoster", "claimteller": "TestHelperClaimTeller"}[kind]
	h := &helper{cmd: exec.CommandContext(ctx, os.Args[0], "-test.run=^"+run+"$", "-test.count=1")}
	h.cmd.Env = append(os.Environ(), append([]string{helperEnv + "=" + kind}, env...)...)
	h.cmd.Stderr = &h.err
	var err error
	if h.out, err = h.cmd.StdoutPipe(); err != nil {
		t.Fatal(err)
	}
	if h.in, err = h.cmd.StdinPipe(); err != nil {
		t.Fatal(err)
	}
	if err := h.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	return h
}

// lines reads the helper's stdout to EOF, then waits for it.
func (h *helper) lines() ([]string, error) {
	var out []string
	sc := bufio.NewScanner(h.out)
	for sc.Scan() {
		out = append(out, sc.Text())
	}
	err := h.cmd.Wait()
	if err != nil {
		err = fmt.Errorf("%v: %s", err, h.err.String())
	}
	return out, err
}

func writerEnv(root, agent, from string, n, size int) []string {
	return []string{"MB_ROOT=" + root, "MB_AGENT=" + agent, "MB_FROM=" + from,
		"MB_N=" + strconv.Itoa(n), "MB_SIZE=" + strconv.Itoa(size)}
}

func testCtx(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 120*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// checkAll asserts that every acknowledged id is in batch exactly once and
// that each writer's messages are in the order it wrote them.
func checkAll(t *testing.T, batch Batch, acked map[string][]string) {
	t.Helper()
	pos := map[message.ID]int{}
	for i, e := range batch.Envelopes {
		if _, dup := pos[e.ID]; dup {
			t.Fatalf("%s read twice", e.ID)
		}
		pos[e.ID] = i
	}
	for w, list := range acked {
		last := -1
		for _, id := range list {
			i, ok := pos[message.ID(id)]
			if !ok {
				t.Fatalf("writer %s: acknowledged %s is missing", w, id)
			}
			if i < last {
				t.Fatalf("writer %s: %s out of order", w, id)
			}
			last = i
		}
	}
}

func TestMultiProcessAppend(t *testing.T) {
	if testing.Short() {
		t.Skip("multi-process")
	}
	s := newStore(t)
	ctx := testCtx(t)
	const procs, each = 16, 60
	acked := map[string][]string{}
	var mu sync.Mutex
	var wg sync.WaitGroup
	for p := range procs {
		from := fmt.Sprintf("w%d", p)
		// Mixed sizes, some larger than a page, so writes take time.
		h := startHelper(t, ctx, "writer", writerEnv(s.Root, "ana", from, each, 100+p*700)...)
		wg.Go(func() {
			lines, err := h.lines()
			if err != nil {
				t.Error(err)
			}
			mu.Lock()
			acked[from] = lines
			mu.Unlock()
		})
	}
	wg.Wait()
	batch := mustRead(t, s, "ana")
	if len(batch.Corrupt) != 0 {
		t.Fatalf("corrupt lines: %v", batch.Corrupt)
	}
	if len(batch.Envelopes) != procs*each {
		t.Fatalf("read %d, want %d", len(batch.Envelopes), procs*each)
	}
	checkAll(t, batch, acked)
	data, _ := os.ReadFile(box(t, s, "ana").path())
	if data[len(data)-1] != '\n' {
		t.Fatal("inbox ends with a torn line")
	}
}

func TestMultiProcessKilledWriter(t *testing.T) {
	if testing.Short() {
		t.Skip("multi-process")
	}
	s := newStore(t)
	ctx := testCtx(t)
	acked := map[string][]string{}
	var mu sync.Mutex
	var wg sync.WaitGroup
	for p := range 3 {
		from := fmt.Sprintf("steady%d", p)
		h := startHelper(t, ctx, "writer", writerEnv(s.Root, "ana", from, 40, 2000)...)
		wg.Go(func() {
			lines, err := h.lines()
			if err != nil {
				t.Error(err)
			}
			mu.Lock()
			acked[from] = lines
			mu.Unlock()
		})
	}
	// The victim writes 256 KiB lines forever, so a kill very likely lands
	// inside a write or while it holds the lock.
	victim := startHelper(t, ctx, "writer", writerEnv(s.Root, "ana", "victim", -1, 256<<10)...)
	acks := make(chan string, 1024)
	go func() {
		sc := bufio.NewScanner(victim.out)
		for sc.Scan() {
			acks <- sc.Text()
		}
		close(acks)
	}()
	var victimAcks []string
	for len(victimAcks) < 5 {
		victimAcks = append(victimAcks, <-acks)
	}
	// Kill at an arbitrary instant of the victim's loop, not just after an
	// ack (where it would only be marshalling).
	time.Sleep(time.Duration(rand.IntN(4000)) * time.Microsecond)
	if err := victim.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	for id := range acks { // acks printed before the kill
		victimAcks = append(victimAcks, id)
	}
	victim.cmd.Wait()
	wg.Wait()
	acked["victim"] = victimAcks

	batch := mustRead(t, s, "ana")
	checkAll(t, batch, acked)
	if len(batch.Corrupt) > 1 {
		t.Fatalf("more than the victim's fragment is corrupt: %v", batch.Corrupt)
	}
	// The inbox keeps working after the crash.
	after := appendN(t, box(t, s, "ana"), 1)
	batch = mustRead(t, s, "ana")
	if last := batch.Envelopes[len(batch.Envelopes)-1]; last.ID != after[0].ID {
		t.Fatalf("append after crash not read back: last is %s", last.ID)
	}
	if len(batch.Corrupt) > 1 {
		t.Fatalf("corrupt: %v", batch.Corrupt)
	}
	t.Logf("victim acked %d; %d messages; %d corrupt fragment(s)", len(victimAcks), len(batch.Envelopes), len(batch.Corrupt))
}

func TestMultiProcessClaim(t *testing.T) {
	if testing.Short() {
		t.Skip("multi-process")
	}
	s := newStore(t)
	ctx := testCtx(t)
	if err := s.Post(team, Request{ID: "REQ_X", From: "lead", Description: "one of you"}); err != nil {
		t.Fatal(err)
	}
	var hs []*helper
	for p := range 8 {
		hs = append(hs, startHelper(t, ctx, "claimer", "MB_ROOT="+s.Root, "MB_REQUEST=REQ_X", fmt.Sprintf("MB_FROM=worker-%d", p)))
	}
	var winners []string
	losersSay := map[string]bool{}
	for p, h := range hs {
		lines, err := h.lines()
		if err != nil || len(lines) != 1 {
			t.Fatalf("claimer %d: %v %v", p, lines, err)
		}
		if lines[0] == "won" {
			winners = append(winners, fmt.Sprintf("worker-%d", p))
		} else {
			losersSay[strings.TrimPrefix(lines[0], "lost ")] = true
		}
	}
	if len(winners) != 1 {
		t.Fatalf("winners = %v, want exactly one", winners)
	}
	if len(losersSay) != 1 || !losersSay[winners[0]] {
		t.Fatalf("losers name %v, winner %s", losersSay, winners[0])
	}
}

func TestMultiProcessCompactWhileAppending(t *testing.T) {
	if testing.Short() {
		t.Skip("multi-process")
	}
	s := newStore(t)
	ctx := testCtx(t)
	const reader = "tui"
	if err := s.Advance(team, "ana", reader, Position{}); err != nil { // register the reader
		t.Fatal(err)
	}
	acked := map[string][]string{}
	var mu sync.Mutex
	var writers sync.WaitGroup
	for p := range 8 {
		from := fmt.Sprintf("w%d", p)
		// Delivered messages: only the reader's cursor protects them.
		h := startHelper(t, ctx, "writer", append(writerEnv(s.Root, "ana", from, 60, 300), "MB_STATE=submitted")...)
		writers.Go(func() {
			lines, err := h.lines()
			if err != nil {
				t.Error(err)
			}
			mu.Lock()
			acked[from] = lines
			mu.Unlock()
		})
	}
	done := make(chan struct{})
	var compactions, dropped int
	var bg sync.WaitGroup
	bg.Go(func() {
		for {
			select {
			case <-done:
				return
			default:
			}
			res, err := s.Compact(team, "ana", Retention{MaxCount: 3})
			if err != nil {
				t.Error(err)
				return
			}
			compactions++
			dropped += res.Dropped
		}
	})
	var got []Envelope
	consume := func() {
		u, err := s.Unread(team, "ana", reader)
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, u.Envelopes...)
		if err := s.Advance(team, "ana", reader, u.End); err != nil {
			t.Fatal(err)
		}
	}
	writersDone := make(chan struct{})
	go func() { writers.Wait(); close(writersDone) }()
	for running := true; running; {
		select {
		case <-writersDone:
			running = false
		case <-time.After(3 * time.Millisecond):
		}
		consume()
	}
	close(done)
	bg.Wait()
	consume()

	checkAll(t, Batch{Envelopes: got}, acked)
	if n := len(got); n != 8*60 {
		t.Fatalf("consumed %d, want %d", n, 8*60)
	}
	if dropped == 0 {
		t.Fatalf("compaction never dropped anything in %d runs; test proves nothing", compactions)
	}
	t.Logf("%d compactions dropped %d read messages while 8 writers appended", compactions, dropped)
}
