//go:build linux

package e2e

// anonymousFiles: agentmsg's files for tmux's output and a paste never
// have a name on Linux (memfds, or O_TMPFILE in the portable build), so a
// killed agentmsg leaves none.
const anonymousFiles = true
