// Package chaos runs agentmsg, built and used as a black box (its CLI with
// --json; inbox state only through its own log command), through random
// scenarios drawn from a seed, and holds every outcome to an oracle.
//
// A round draws a world: two teams of stand-in agents (e2e/standin) on a
// private tmux server, with, as the fault kinds allow, a plain "> " program
// without bracketed paste, python3's REPL and a read -p loop (each keeping
// its own record of every line it read), a second server at another socket
// with some of the same names, and agentmsg's own receipt and turn-end
// hooks run by the stand-ins as Claude Code runs them. It then draws steps:
// sends of every kind of text (alone, in bursts, through another spelling
// of the socket), broadcasts, deliver runs, busy and ready flips, dialogs,
// a person's drafts, windows and split panes beside an agent left active,
// window switches, a server restarted at the same socket with its agents
// started again in another order, a full disk (a tmpfs, as root), and kill
// -9, SIGINT, SIGTERM and SIGSTOP/SIGCONT of senders and deliver runs. In
// half the rounds (fault kind daemon) every command goes through agentmsg
// serve, which is SIGKILLed in the middle of broadcasts (by the CLI, or by
// an app through the API with its own id, which asks again once the
// daemon is back) and started again.
//
// The steps are drawn whole before the round starts, so a seed replays the
// same scenario; only the timing of what runs at once varies (a bug that
// needs a race may take a few replays). At the end a person makes every
// agent ready and presses Enter in every pane (a draft, or a message
// agentmsg left typed in a box, is submitted; text typed into the wrong
// pane shows up there), deliver runs until nothing more happens, and the
// oracle (oracle.go) holds what every program recorded against what
// agentmsg said: nothing claimed submitted or queued that is not in that
// agent's record exactly once, nothing anywhere it was not sent, nothing
// twice, cut short, merged or in pieces, nothing failed that arrived,
// nothing kept that is gone, no broadcast in some inboxes and not in
// another it could not have refused, nothing recorded twice in an inbox,
// no app's retry refused. A run that crashes, hangs or prints anything
// but one JSON document breaks a promise too.
//
// It runs only when asked: AGENTMSG_E2E_CHAOS=1, or any of its flags.
//
//	go test ./e2e/chaos -run TestChaos -chaos.duration 2m      # as CI would
//	go test ./e2e/chaos -run TestChaos -soak 30m -timeout 40m  # a long run
//	go test ./e2e/chaos -run TestChaos -chaos.seed=21 -chaos.rounds=1 -chaos.kinds=restart
//	go test ./e2e/chaos -run TestChaos -chaos.kinds=all,-disk,-repl
//
// Every round prints its seed; a failing one prints its world, its trace
// and each broken promise, with the command that replays it.
package chaos
