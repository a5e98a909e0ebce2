package tmux

// packageDirs are where Homebrew installs tmux: /opt/homebrew/bin on Apple
// silicon, /usr/local/bin on Intel Macs.
var packageDirs = []string{"/opt/homebrew/bin", "/usr/local/bin"}
