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
//   - One shared long-lived control client per server (a broker process):
//     safe while it lives, but it must itself never be killed, and it leaves
//     a process behind that other tools (iTerm2's tmux -CC) sit beside.
//   - A flock guard around control clients: serialises attaching, but a
//     guarded client that is killed still crashes the server (3 of 3).
//   - Ordinary commands only, and never end one half way: nothing agentmsg
//     does can produce an early death. This is the design, on every version
//     (one path, tested on the whole matrix; 3.7 would allow control mode,
//     but a second path is a second set of bugs for about a millisecond).
//
// How a tmux client is run (proc.go): in a process group of its own, so a
// Ctrl-C or a signal to agentmsg's group never reaches it; never signalled (a
// call that takes longer than DefaultCommandTimeout is abandoned and reaped,
// not killed); stdout and stderr are anonymous in-memory files, not pipes, so
// agentmsg's death cannot kill it with SIGPIPE; message text is read from
// memfds written whole before it starts (/dev/fd/N), so it is never cut short
// and no file of message text is left anywhere.
//
// # Speed without control mode
//
// A tmux process costs about 2 ms (a control-mode command 0.1 ms). Calls that
// arrive while one runs go together as one command list (batch.go): a lone
// send pays one process per step, a broadcast to 100 agents 23 to 26
// processes for its 650 to 690 calls (measured with strace). A send needs six
// or seven: the pane and its screen, with the server's version (one call), a
// second look that must agree with the first (one), load and paste (one),
// look until the text shows (one or two), press (one), look for proof (one or
// two). A sender that waited for the pane skips one: the last holder's final
// look stands for the first (package lock's handoff). scripts/bench has the
// figures.
//
// A paste or a press and the look after it cannot share a process: the look
// must wait for the agent to redraw, and a pause inside the server
// (run-shell -d 0.001, then capture-pane) took 4.0 ms against 1.8 ms for
// capture-pane alone, on 3.3a and 3.7c alike: no cheaper than a second
// process (tried, measured, not kept).
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
