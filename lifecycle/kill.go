package lifecycle

import (
	"context"
	"errors"
	"fmt"
	"os"
	"syscall"
	"time"

	"github.com/agentmsg/agentmsg/dispatch"
	"github.com/agentmsg/agentmsg/target"
	"github.com/agentmsg/agentmsg/tmux"
)

// KillResult is what a kill did.
type KillResult struct {
	Target target.Target
	PIDs   []int // every process of the pane, found before the first signal
	Forced bool  // some needed SIGKILL after the grace
	Took   time.Duration
}

// pollEvery is how often Kill looks whether the processes are gone.
const pollEvery = 20 * time.Millisecond

// Kill ends t and every process it started. It collects, from the process
// table (package procs) and before any signal, the pane's first process,
// all its descendants, every process still in its session (a double-forked
// child that left the tree) and the members of their process groups;
// sends SIGTERM to each of their process groups and to each of them;
// after grace (0: DefaultGrace) sends SIGKILL to whatever is left, and to
// anything the pane started meanwhile; then removes the session and the
// registry entry. It fails with ErrSurvived, naming them, when a collected
// process is still there at the end. Killing the agent you run in is refused (dispatch.ErrSelf).
func (m *Manager) Kill(ctx context.Context, t target.Target, grace time.Duration) (KillResult, error) {
	if grace <= 0 {
		grace = DefaultGrace
	}
	start := m.now()
	res := KillResult{Target: t}
	team, agent := target.Inbox(t)
	panes, err := m.Tmux.SessionPanes(ctx, t.Session)
	if errors.Is(err, tmux.ErrSessionNotFound) || errors.Is(err, tmux.ErrNoServer) {
		if _, rerr := m.Store.RegisteredAgent(team, agent); rerr == nil {
			removed := "the entry is removed now"
			if uerr := m.Store.Unregister(team, agent); uerr != nil {
				removed = fmt.Sprintf("removing the entry failed: %v", uerr) // never said removed when it is not
			}
			return res, fmt.Errorf("%w: no session named exactly %q on %s (it was registered; %s)",
				dispatch.ErrTargetNotFound, t.Session, m.Tmux.Server().Socket, removed)
		}
		return res, fmt.Errorf("%w: no session named exactly %q on %s", dispatch.ErrTargetNotFound, t.Session, m.Tmux.Server().Socket)
	}
	if err != nil {
		return res, err
	}
	// Every pane of the session: an agent's session may hold a shell or a
	// dev server beside it, and kill-session ends their ptys too.
	var procs []proc
	var roots []int // the panes' first processes
	for _, pane := range panes {
		if !pane.Dead && pane.PID > 0 {
			roots = append(roots, pane.PID)
		}
	}
	if len(roots) > 0 {
		all, err := scanProcs()
		if err != nil {
			return res, err
		}
		// A pane's first process is the tmux server's child. If it is
		// not, the pane's process has ended and its pid was reused by an
		// unrelated process, whose family must not be touched.
		info, err := m.Tmux.Info(ctx)
		if err != nil {
			return res, err
		}
		for _, root := range roots {
			if p, ok := all[root]; ok && p.PPID == info.PID {
				procs = append(procs, family(all, root)...)
			}
		}
	}
	for _, p := range procs {
		if p.PID == os.Getpid() {
			return res, fmt.Errorf("%w: %s is the agent you run in; ask another agent or a person to kill it", dispatch.ErrSelf, t)
		}
	}
	res.PIDs = pids(procs)

	signal(procs, syscall.SIGTERM)
	left := waitGone(ctx, procs, grace)
	if len(left) > 0 || ctx.Err() != nil {
		// Whatever the pane started since the scan goes too.
		if all, err := scanProcs(); err == nil {
			for _, root := range roots {
				for _, p := range family(all, root) {
					if !containsPID(procs, p.PID) && p.PID != os.Getpid() {
						procs = append(procs, p)
						left = append(left, p)
					}
				}
			}
		}
	}
	if len(left) > 0 {
		res.Forced = true
		signal(left, syscall.SIGKILL)
		left = waitGone(context.WithoutCancel(ctx), left, killWait)
	}
	res.PIDs = pids(procs)
	kerr := m.Tmux.KillSession(context.WithoutCancel(ctx), t.Session)
	// The last look, after the session (and its pty) is gone.
	left = alive(left)
	res.Took = m.now().Sub(start)
	if len(left) > 0 {
		return res, fmt.Errorf("%w: %s: pid(s) %v are still there after SIGKILL (not yours, or stuck in the kernel)", ErrSurvived, t, pids(left))
	}
	if kerr != nil {
		return res, fmt.Errorf("the processes of %s are gone, but removing its session failed: %w", t, kerr)
	}
	if err := m.Store.Unregister(team, agent); err != nil {
		return res, fmt.Errorf("%s is killed, but removing its registry entry failed: %w", t, err)
	}
	// No agent holds the tokens spawn gave this session any more.
	if m.Revoked != nil {
		if _, err := m.Revoked.RevokeSession(m.Tmux.Server().Socket, t.Session, ""); err != nil {
			return res, fmt.Errorf("%s is killed, but revoking its MCP tokens failed (revoke them by hand): %w", t, err)
		}
	}
	return res, nil
}

// signal sends sig to the process group of each of procs (once per group,
// only for groups whose leader is one of them) and to each process.
func signal(procs []proc, sig syscall.Signal) {
	groups := map[int]bool{}
	for _, p := range procs {
		if p.PGID > 1 && !groups[p.PGID] && containsPID(procs, p.PGID) && !goneNow(p) {
			groups[p.PGID] = true
			_ = syscall.Kill(-p.PGID, sig)
		}
	}
	for _, p := range procs {
		// Only the very process collected: a reused pid is left alone.
		if !goneNow(p) {
			_ = syscall.Kill(p.PID, sig)
		}
	}
}

// waitGone polls until every process in procs has ended or d passes (or
// ctx ends), and returns those still there.
func waitGone(ctx context.Context, procs []proc, d time.Duration) []proc {
	deadline := time.Now().Add(d)
	left := alive(procs)
	for len(left) > 0 && time.Now().Before(deadline) {
		select {
		case <-ctx.Done():
			return left
		case <-time.After(pollEvery):
		}
		left = alive(left)
	}
	return left
}

func containsPID(procs []proc, pid int) bool {
	for _, p := range procs {
		if p.PID == pid {
			return true
		}
	}
	return false
}
