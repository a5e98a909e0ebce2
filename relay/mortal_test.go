package relay

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/agentmsg/agentmsg/internal/procs"
)

// TestHelperMortal is the daemon of TestAMortalChildEndsWithTheDaemon when
// run as one (MORTAL_HELPER=mortal or guarded): it starts sleep as the
// tunnel's ssh is started, prints the sleep's pid, and waits to be killed.
func TestHelperMortal(t *testing.T) {
	how := os.Getenv("MORTAL_HELPER")
	if how == "" {
		t.Skip("helper process")
	}
	start := mortal
	if how == "guarded" {
		start = guarded
	}
	cmd, _, err := start(context.Background(), "sleep", "300")
	if err == nil {
		err = cmd.Start()
	}
	if err != nil {
		fmt.Println("error", err)
		os.Exit(1)
	}
	pid, err := sleeperUnder(cmd.Process.Pid)
	if err != nil {
		fmt.Println("error", err)
		os.Exit(1)
	}
	fmt.Println(pid)
	time.Sleep(time.Minute)
	os.Exit(1)
}

// sleeperUnder is the pid of the sleep that pid is or runs (the watch's
// shell runs it as a child).
func sleeperUnder(pid int) (int, error) {
	// A poll for a condition, not a time limit: under a CI run beside
	// others (load 99) 5 s passed before the watch's shell had started it.
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		if p, err := procs.Get(pid); err == nil && p.Comm == "sleep" {
			return pid, nil
		}
		all, err := procs.All()
		if err != nil {
			return 0, err
		}
		for _, p := range all {
			if p.PPID == pid && p.Comm == "sleep" {
				return p.PID, nil
			}
		}
		time.Sleep(5 * time.Millisecond)
	}
	return 0, errors.New("no sleep started")
}

// The tunnel's ssh ends with the daemon when the daemon is SIGKILLed (no
// chance to clean up): by the kernel's Pdeathsig on Linux, by the watch
// on Darwin (guarded; tried here on Linux too).
func TestAMortalChildEndsWithTheDaemon(t *testing.T) {
	for _, how := range []string{"mortal", "guarded"} {
		t.Run(how, func(t *testing.T) {
			t.Parallel()
			helper := exec.Command(os.Args[0], "-test.run=^TestHelperMortal$")
			helper.Env = append(os.Environ(), "MORTAL_HELPER="+how)
			out, err := helper.StdoutPipe()
			if err != nil {
				t.Fatal(err)
			}
			if err := helper.Start(); err != nil {
				t.Fatal(err)
			}
			defer func() { _ = helper.Process.Kill(); _ = helper.Wait() }()
			line, err := bufio.NewReader(out).ReadString('\n')
			pid, perr := strconv.Atoi(strings.TrimSpace(line))
			if err != nil || perr != nil {
				t.Fatalf("the helper said %q: %v", line, err)
			}
			t.Cleanup(func() { _ = syscall.Kill(pid, syscall.SIGKILL) })
			if p, err := procs.Get(pid); err != nil || p.Ended() {
				t.Fatalf("the child does not run: %+v %v", p, err)
			}
			_ = helper.Process.Kill()
			_ = helper.Wait()
			waitGone(t, pid)
		})
	}
}

// waitGone waits until pid has ended.
func waitGone(t *testing.T, pid int) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		p, err := procs.Get(pid)
		if errors.Is(err, procs.ErrNoProcess) || err == nil && p.Ended() {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("pid %d still runs: %+v %v", pid, p, err)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// Under the watch, the child's exit status comes through, and the end of
// ctx ends the child as well as the shell.
func TestTheWatchPassesStatusAndCancel(t *testing.T) {
	t.Parallel()
	cmd, done, err := guarded(context.Background(), "sh", "-c", "echo out; echo err >&2; exit 3")
	if err != nil {
		t.Fatal(err)
	}
	var stdout, stderr strings.Builder
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err = cmd.Run()
	done()
	var exit *exec.ExitError
	if !errors.As(err, &exit) || exit.ExitCode() != 3 || stdout.String() != "out\n" || stderr.String() != "err\n" {
		t.Errorf("Run: %v, stdout %q, stderr %q; want exit 3, out, err", err, stdout.String(), stderr.String())
	}

	ctx, cancel := context.WithCancel(context.Background())
	cmd, done, err = guarded(ctx, "sleep", "300")
	if err != nil {
		t.Fatal(err)
	}
	cmd.WaitDelay = 5 * time.Second
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	pid, err := sleeperUnder(cmd.Process.Pid)
	if err != nil {
		t.Fatal(err)
	}
	cancel()
	start := time.Now()
	err = cmd.Wait()
	done()
	if took := time.Since(start); took > 3*time.Second {
		t.Errorf("Wait took %s after the cancel", took)
	}
	if !errors.As(err, &exit) || exit.ExitCode() == 0 {
		t.Errorf("Wait after cancel: %v, want the sleep's death by SIGTERM", err)
	}
	waitGone(t, pid)
}
