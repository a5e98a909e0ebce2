//go:build !darwin

package tmux

// foldsCase: Linux's file systems tell case apart (a casefolded ext4
// directory is rare enough to leave aside).
const foldsCase = false
