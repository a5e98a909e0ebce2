// Package tmux is the only code in agentmsg that knows tmux's command line.
//
// Every call names its server by socket path (-S), so a delivery, its lock and
// its verdict all refer to exactly one server, whether the user gave -L, -S,
// runs inside tmux ($TMUX) or relies on tmux's default. The binary is the
// user's choice (config tmux, AGENTMSG_TMUX), else the first tmux on $PATH.
//
// # Never take the server down
//
// Every tmux release before 3.7 segfaults, ending every session on it, when a
// client goes away before the server has finished taking it in. Measured here
// with builds of 3.2a, 3.4, 3.5a, 3.6a, 3.7c and Debian's 3.3a, on fresh
// servers, 3 rounds each (the kernel logs "tmux: server[PID]: segfault at 38"):
//
//	8 loops x 40 control clients attaching at once   3.2a-3.6a: 3 of 3 died   3.7c: 0 of 3
//	the same, one at a time (a flock around each)    3.3a: 0 of 3 died, also beside a long-lived control client
//	control clients one at a time, SIGKILL at random 3.3a: 3 of 3 died        3.7c: 0 of 3
//	... SIGTERM at random                            3.3a: 2 of 3 died
//	ordinary commands (capture-pane), SIGKILL at a
//	random moment, 8 loops                           3.3a: 3 of 3 died        3.7c: 0 of 3
//	... one loop                                     3.3a: 2 of 3 died
//	... SIGINT, SIGTERM or SIGHUP instead            3.3a: 2 of 2 died each
//	8 loops of ordinary commands, none killed,
//	beside a long-lived control client               3.3a: 0 of 3 died
//
// So the hazard is not control mode as such but a tmux client that dies early,
// and a control client is only the easiest way to get one. The options:
//
//   - One control client per process (what agentmsg did): fast, but eight
//     agents messaging at once crashed 3.3a in 3 of 5 runs of the e2e stress
//     test, and a Ctrl-C or kill of agentmsg kills its client mid-attach.
//   - A flock guard around control clients held by their owners: serialises
//     attaching, but a guarded client that is killed still crashes the
//     server (3 of 3), and the lock goes with its owner, not its client.
//   - Ordinary commands only, and never end one half way: nothing agentmsg
//     does can produce an early death. This is what every agentmsg process
//     does, on every version.
//   - One long-lived control client per server, in the one process that
//     sends the most (the daemon, agentmsg serve), never two at once: Control
//     (control.go), used by Exec when it has one (Exec.UseControl); on tmux
//     3.7 and newer only (below).
//
// # One control client, never two
//
// Measured with the daemon's rule, two loops of ordinary commands
// (send-keys, capture-pane) beside it throughout (issue 18):
//
//	one control client, SIGKILLed at random, 50-800 ms    3.3a: 150 of 150 lived
//	... 0-30 ms after it started (during its attach)      3.3a: 150 of 150; 3.2a: 100 of 100
//	two control clients overlapping (a new one attaching
//	as the old one is SIGKILLed)                          3.3a: died at round 137
//	Control's owner SIGKILLed at random (0-30 ms after its
//	client started, or 50-800 ms into its commands), the
//	next owner already waiting (TestControlChaos)         150 of 150 lived on each of 3.2a, 3.3a,
//	                                                      3.4, 3.7c; never two control clients
//	                                                      listed; no tmux segfault in the kernel log
//	the same with the guard off                           two control clients listed at once
//
// And a hazard of its own, found by running the end-to-end suite through the
// daemon: before 3.7 a control client that is still attaching (it has said it
// is a control client, MSG_IDENTIFY_FLAGS, but not finished, MSG_IDENTIFY_DONE,
// which comes several messages later: those carrying file descriptors go
// one sendmsg each) is sent every notification another client's command
// makes (session-created, window-add, ...), and control_write dereferences
// its control_state, still NULL: the server segfaults. 3.7 checks it
// (CONTROL_SHOULD_NOTIFY_CLIENT tests control_state). The daemon starting
// while sessions were made (the e2e harness, as agents spawning at login
// would):
//
//	3.3a: 1 of 30 runs crashed the server; 3.4: 3 of 60; 3.2a: 3 of 60;
//	3.7c: 0 of 60 (kernel log: "segfault at 20 ... tmux", core:
//	control_write <- control_notify_session_created <- notify_callback)
//
// No flock can close that window: the notification comes from another
// client's ordinary command. So Control attaches only on 3.7 and newer
// (ControlUnsafeError); before that the daemon, like every agentmsg process,
// runs ordinary commands, and is fast only by the process it saves.
//
// So a Control starts a client only while it holds an flock on a file beside
// the server's socket (one per socket, never removed), hands the locked
// descriptor to the client process and closes its own: the lock lives exactly
// as long as that process, so a daemon started again the moment the old one
// was SIGKILLed waits until the old client has been let go and has exited
// (TestControlLockOutlivesItsOwner). It also waits while the server lists any
// control client (its own leaving one, whose lock may go a moment before the
// server has let it go, or another program's, such as iTerm2's tmux -CC). The
// client is never signalled: it runs in its own process group, and leaves
// when its input ends (Close, or its owner's death).
//
// A client whose reader has died must still be able to write: tmux lets a
// control client go only once its output is written, so one whose owner died
// with output pending stayed attached for ever (every release), holding the
// lock, and a server told to exit (kill-server) then waited for it for ever,
// its sessions gone and its socket refusing clients. A drainer process (sh,
// cat) holds the client's output and reads it to its end once the owner's
// end of a pipe closes.
//
// The client attaches to the most recently used session by id (the one a bare
// "tmux attach" picks anyway), with -E (the session's environment untouched)
// and -f ignore-size,no-output (no influence on window sizes, no %output of
// every pane); when that session ends, tmux lets it go and another attaches.
// Commands go as one line per command list, every argument quoted so that
// tmux's parser gives it back byte for byte (it reads 0xff as its end of
// input: escaped), and a second line whose answer marks the end, since a list
// stops at its first failing command; answers are read block by block (a
// pane's text that forges a closing line is detected, and the client is let
// go). Message text is read by the server itself (an attached client's files
// are) from /proc/OUR_PID/fd/N of a memfd, probed once per attach; where that
// fails, lists with text go through processes. A list gets its answer from the
// control client or, when none is attached, from a process: a send never waits
// for the lock.
//
// A pane whose program has exited and that stays (remain-on-exit) is a
// hazard of its own: a bracketed paste into it (paste-buffer -p) ended the
// server on 3.2a and 3.3a, every time (kernel log: "segfault at 118 ... in
// libevent"); 3.4 and 3.7c refuse it ("target pane has exited"). An agent
// can exit between the look that found it alive and the paste, so Paste
// lets the server check: if-shell -F '#{pane_dead}' pastes only into a
// live pane, in the same turn of the server's loop (no shell runs, and
// nothing ends a pane between two commands of a list), and says
// ErrPaneDead otherwise (TestPasteNeverGoesIntoADeadPane, which ended the
// server on 3.3a without it).
//
// How a tmux client is run (proc.go): in a process group of its own, so a
// Ctrl-C or a signal to agentmsg's group never reaches it; never signalled (a
// call that takes longer than DefaultCommandTimeout is abandoned and reaped,
// not killed); stdout and stderr are anonymous in-memory files, not pipes, so
// agentmsg's death cannot kill it with SIGPIPE; message text is read from
// memfds written whole before it starts (/dev/fd/N), so it is never cut short
// and no file of message text is left anywhere.
//
// # Speed
//
// A tmux process costs about 2 ms, a command list through Control about
// 0.1 ms: a capture 2.0-2.8 ms against 0.10-0.14 ms, the six calls of a send
// to a ready pane 11-16 ms against 0.9-1.1 ms, on 3.2a, 3.3a and 3.7c
// (BenchmarkCalls; two shared cores). Calls that
// arrive while one runs go together as one command list (batch.go): a lone
// send pays one process per step, a broadcast to 100 agents 23 to 26
// processes for its 650 to 690 calls (measured with strace). Deliveries at
// work say so (Exec.Gather), and a list waits up to a millisecond for the
// next call of each: four agents' messages typed in step went in 4.7
// processes a message without that (one for the first caller, one for the
// rest) and in about 2 with it (821 for 400). A send needs six or seven:
// the pane and its screen, with the server's version (one call), a second
// look that must agree with the first (one), load and paste (one), look
// until the text shows (one or two), press (one), look for proof (one or
// two). A sender that waited for the pane skips one: the last holder's final
// look stands for the first (package lock's handoff), and so does the next
// message of a deliver pass, which also goes to the pane the last one was
// typed into (five calls). scripts/bench has the figures.
//
// A paste or a press and the look after it cannot share a process: the look
// must wait for the agent to redraw, and a pause inside the server
// (run-shell -d 0.001, then capture-pane) took 4.0 ms against 1.8 ms for
// capture-pane alone, on 3.3a and 3.7c alike: no cheaper than a second
// process (tried, measured, not kept). Tried again with one pause for all
// the looks of a gathered list (run-shell -d 0.0005 still added 2.3 ms;
// 247 of 250 looks showed the paste): the 1,000 messages of
// TestHostsSpeed on 3.3a took 7.7 and 12.4 s after the link came back,
// against 6.3 s without, since no other list runs during a pause.
//
// Output is parsed with spaces and tmux ids: tmux 3.4 and 3.5 print control
// characters in format output as octal escapes ("\037"), which broke the 0x1f
// separator this package used before (no agent was found at all on 3.4).
//
// # gotmux
//
// The project's chosen library, gotmux v0.5.0, is not used on any path. It
// runs "tmux" from $PATH (never the user's chosen binary), in agentmsg's own
// process group with pipes for its output (a Ctrl-C or a closed pipe ends its
// client half way: the crash above, on every tmux before 3.7), has no -L, no
// literal send and no buffers, drops tmux's stderr, and panics on pane titles
// containing its "-:-" separator (see shared/FIELD-NOTES.md).
package tmux
