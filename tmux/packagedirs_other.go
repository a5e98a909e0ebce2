//go:build !darwin

package tmux

// packageDirs: the package managers of Linux put tmux in /usr/bin, which
// every $PATH holds.
var packageDirs []string
