//go:build !linux

package e2e

// anonymousFiles: without memfd or O_TMPFILE (Darwin) agentmsg's
// files for tmux's output and a paste are temp files unlinked the moment
// they are made, and written only after: a kill in between leaves an empty
// one, never one with text.
const anonymousFiles = false
