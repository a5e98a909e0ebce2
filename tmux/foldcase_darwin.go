package tmux

// foldsCase: macOS's file systems (APFS, HFS+) are case-insensitive by
// default, so /tmp/Demo/s and /tmp/demo/s are one socket.
const foldsCase = true
