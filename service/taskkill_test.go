package service

import (
	"bufio"
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/agentmsg/agentmsg/courier"
	"github.com/agentmsg/agentmsg/delivery"
	"github.com/agentmsg/agentmsg/dispatch"
	"github.com/agentmsg/agentmsg/lock"
	"github.com/agentmsg/agentmsg/mailbox"
	"github.com/agentmsg/agentmsg/message"
	"github.com/agentmsg/agentmsg/tmux"
	"github.com/agentmsg/agentmsg/tmux/tmuxtest"
)

// helperEnv names the helper a re-executed test binary runs (the other
// process of a multi-process test).
const helperEnv = "AGENTMSG_SERVICE_HELPER"

// A task assign SIGKILLed at random moments, many times: after Complete
// (what a deliver pass does first), each message a task was to carry is
// inside one task recorded in the agent's inbox and marked read, or
// outstanding again, for a deliver to type on its own: never marked read
// inside no task (lost: only `inbox` would show it), never inside a task
// and outstanding too, nor inside two tasks (typed twice).
func TestAssignTaskKilledCarriesAllOrNone(t *testing.T) {
	if testing.Short() {
		t.Skip("multi-process")
	}
	dir := t.TempDir()
	store := mailbox.New(filepath.Join(dir, "mailbox"))
	if err := os.Mkdir(filepath.Join(dir, "locks"), 0o700); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	caught := 0 // messages a kill left marked read, in no task yet
	twice, lost := map[message.ID]bool{}, map[message.ID]bool{}
	// check says what breaks the promise now, once for each message.
	check := func(round int) (inTasks, waiting int) {
		for id, c := range carriage(t, store) {
			switch {
			case len(c.tasks) > 1 && !twice[id]:
				twice[id] = true
				t.Errorf("after kill %d and Complete: %s is inside %d tasks %v: typed twice", round+1, id, len(c.tasks), c.tasks)
			case len(c.tasks) == 1 && c.state.Outstanding() && !twice[id]:
				twice[id] = true
				t.Errorf("after kill %d and Complete: %s is inside task %s and %s too: typed twice", round+1, id, c.tasks[0], c.state)
			case len(c.tasks) == 0 && !c.state.Outstanding() && !lost[id]:
				lost[id] = true
				t.Errorf("after kill %d and Complete: %s is %s and inside no task: lost (no deliver types it)", round+1, id, c.state)
			case len(c.tasks) == 1 && !c.state.Outstanding():
				inTasks++
			case len(c.tasks) == 0 && c.state.Outstanding():
				waiting++
			}
		}
		return inTasks, waiting
	}
	const kills = 30
	for round := range kills {
		cmd := exec.CommandContext(ctx, os.Args[0], "-test.run=^TestHelperAssigner$", "-test.count=1")
		cmd.Env = append(os.Environ(), helperEnv+"=assigner", "SVC_MAILBOX="+store.Root, "SVC_LOCKS="+filepath.Join(dir, "locks"))
		var stderr strings.Builder
		cmd.Stderr = &stderr
		out, err := cmd.StdoutPipe()
		if err != nil {
			t.Fatal(err)
		}
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		sc := bufio.NewScanner(out)
		if !sc.Scan() { // started
			_ = cmd.Wait()
			t.Fatalf("kill %d: the helper did not start: %s", round+1, stderr.String())
		}
		// Each of its tasks carries the two messages recorded since the
		// last: killed within its first few tasks.
		time.Sleep(time.Duration(rand.IntN(150_000)) * time.Microsecond)
		_ = cmd.Process.Signal(syscall.SIGKILL) // our own child, by its pid
		for sc.Scan() {
		}
		if err := cmd.Wait(); err == nil || strings.Contains(stderr.String(), "assigning") {
			t.Fatalf("kill %d: the helper ended on its own (%v): %s", round+1, err, stderr.String())
		}
		for _, c := range carriage(t, store) {
			if len(c.tasks) == 0 && !c.state.Outstanding() {
				caught++
			}
		}
		if _, err := store.Complete(); err != nil {
			t.Fatal(err)
		}
		check(round)
	}
	inTasks, waiting := check(kills - 1)
	// Nothing of the kills is left in the intents, but an empty temp file
	// (a writer killed between making and locking it), which goes once it
	// is a minute old.
	ents, _ := os.ReadDir(filepath.Join(store.Root, "intents"))
	for _, e := range ents {
		if fi, err := e.Info(); err != nil || fi.Size() > 0 {
			t.Errorf("left in the intents: %s", e.Name())
		}
	}
	t.Logf("%d kills; %d messages for ana: %d inside one task each, %d waiting to be typed; %d caught marked read before their task was recorded; %d lost for a while, %d typed twice",
		kills, len(carriage(t, store)), inTasks, waiting, caught, len(lost), len(twice))
}

// carried is where a message to ana went: the tasks whose text carries
// it, and its state.
type carried struct {
	tasks []message.ID
	state mailbox.DeliveryState
}

// carriage is every message in ana's inbox that is not a task, by id.
func carriage(t *testing.T, store *mailbox.Store) map[message.ID]carried {
	t.Helper()
	b, err := store.Read("alpha", "ana")
	if err != nil {
		t.Fatal(err)
	}
	out := map[message.ID]carried{}
	for _, e := range b.Envelopes {
		if e.Type != mailbox.TypeTask {
			out[e.ID] = carried{state: e.Delivery.State}
		}
	}
	for _, task := range b.Envelopes {
		if task.Type != mailbox.TypeTask {
			continue
		}
		for id, c := range out {
			if strings.Contains(task.Content, "["+string(id)+"]") {
				c.tasks = append(c.tasks, task.ID)
				out[id] = c
			}
		}
	}
	return out
}

// slowTmux is the fake server whose pane lookups take as long as tmux's
// (a tmux client process each, about 3 ms).
type slowTmux struct{ *fakeServer }

func (s *slowTmux) Pinned(tmux.Pane) tmux.Client { return s }

func (s *slowTmux) SessionPanes(ctx context.Context, session string) ([]tmux.Pane, error) {
	time.Sleep(3 * time.Millisecond)
	return s.fakeServer.SessionPanes(ctx, session)
}

// TestHelperAssigner is the process TestAssignTaskKilledCarriesAllOrNone
// kills: it prints "started", then, until killed, records two messages
// for ana that wait to be typed and assigns her a task, which carries
// them.
func TestHelperAssigner(t *testing.T) {
	if os.Getenv(helperEnv) != "assigner" {
		t.Skip("helper process")
	}
	srv := &slowTmux{fakeServer: tmuxtest.New("agent-alpha-ana")}
	store := mailbox.New(os.Getenv("SVC_MAILBOX"))
	locks := lock.Dir{Path: os.Getenv("SVC_LOCKS")}
	s := &Service{Team: "alpha", Name: "lead", Sender: "LEAD", Store: store,
		Dispatcher: func() (*dispatch.Dispatcher, error) {
			opts := delivery.DefaultOptions()
			opts.Settle, opts.Poll, opts.ReadyTimeout = time.Millisecond, time.Millisecond, time.Second
			return &dispatch.Dispatcher{Tmux: srv, Locks: locks, Clock: tmuxtest.Clock{}, Opts: opts}, nil
		},
		Courier: &courier.Courier{Store: store, Locks: locks},
	}
	box, err := store.Box("alpha", "ana")
	if err != nil {
		t.Fatal(err)
	}
	fmt.Println("started")
	for i := 0; ; i++ {
		for j := range 2 {
			id, err := message.NewID("BOB", nil)
			if err == nil {
				err = box.Append(mailbox.Envelope{ID: id, From: "bob", To: "ana", Type: mailbox.TypeText,
					Content: fmt.Sprintf("note %d.%d", i, j), Delivery: &mailbox.Delivery{State: mailbox.StatePending}})
			}
			if err != nil {
				fmt.Fprintln(os.Stderr, "assigning:", err)
				os.Exit(2)
			}
		}
		res, err := s.AssignTask(context.Background(), AssignRequest{To: to(t, "ana"), Task: fmt.Sprintf("task %d", i)})
		if err != nil || !res.OK() {
			fmt.Fprintln(os.Stderr, "assigning:", res, err)
			os.Exit(2)
		}
		fmt.Println(res.ID)
	}
}
