//go:build linux && !agentmsg_portable

package e2e

// anonymousFiles: agentmsg's files for tmux's output and a paste are
// memfds, which never have a name, so a killed agentmsg leaves none.
const anonymousFiles = true
