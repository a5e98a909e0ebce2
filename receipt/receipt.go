// Package receipt keeps the ids an agent itself reports having received.
//
// An agent CLI runs its prompt-submit hook (UserPromptSubmit in Claude
// Code, Codex and Qwen Code, BeforeAgent in Gemini CLI) with the exact text
// of every prompt it really submits (a queued one when it is sent, not when
// it is queued). agentmsg's hook appends the message id at the start of that
// text to a log, and a delivery that finds its id there knows the agent took
// the message: proof that no folding, scrolling or redrawing of the screen
// can hide.
package receipt

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"syscall"

	"github.com/agentmsg/agentmsg/message"
)

// Log is an append-only file of received ids, one per line.
type Log struct {
	Path string

	mu   sync.Mutex
	size int64
	data []byte
}

// DefaultPath is where receipts live under the agentmsg state root.
func DefaultPath(root string) string { return filepath.Join(root, "receipts.log") }

// maxSize bounds the log: past it, Record keeps the newer half. Ids are
// checked within seconds of being written, so old ones are worthless.
const maxSize = 1 << 20

// leadingID matches the id agentmsg puts at the start of every message.
var leadingID = regexp.MustCompile(`^\s*(MSG_[A-Z0-9_]+_[0-9a-f]{8}):`)

// FromPrompt is the id a submitted prompt starts with, if any. Only the
// leading one counts: a message that quotes another's id must not confirm
// that one.
func FromPrompt(prompt string) (message.ID, bool) {
	m := leadingID.FindStringSubmatch(prompt)
	if m == nil {
		return "", false
	}
	return message.ID(m[1]), true
}

// Recipient is the pane a receipt was recorded in.
type Recipient struct {
	Pane      string // "%3"
	ServerPID int    // the pane's tmux server
	Socket    string // that server's socket, canonical
}

// valid reports whether r names a pane on a server.
func (r Recipient) valid() bool {
	return strings.HasPrefix(r.Pane, "%") && !strings.ContainsAny(r.Pane, " \n") &&
		r.ServerPID > 0 && r.Socket != "" && !strings.Contains(r.Socket, "\n")
}

// line is the record of id received at r: the socket last, since a path
// may hold spaces.
func line(id message.ID, r Recipient) string {
	return fmt.Sprintf("%s %s %d %s", id, r.Pane, r.ServerPID, r.Socket)
}

// ErrNoRecipient: a receipt must say which pane received the message, and
// the hook runs outside a tmux pane (no $TMUX_PANE).
var ErrNoRecipient = errors.New("not recorded: the hook runs outside a tmux pane, so the receipt could name no recipient")

// Record appends that id was received at r, in one write, so concurrent
// hooks never interleave.
func (l *Log) Record(id message.ID, at Recipient) error {
	if !at.valid() {
		return ErrNoRecipient
	}
	if err := os.MkdirAll(filepath.Dir(l.Path), 0o700); err != nil {
		return err
	}
	if fi, err := os.Stat(l.Path); err == nil && fi.Size() > maxSize {
		l.trim()
	}
	f, err := os.OpenFile(l.Path, os.O_WRONLY|os.O_APPEND|os.O_CREATE|syscall.O_NOFOLLOW, 0o600)
	if err != nil {
		return err
	}
	_, err = f.Write([]byte(line(id, at) + "\n"))
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("recording receipt: %w", err)
	}
	return nil
}

// trim keeps the newer half of the log (best effort: a receipt lost here
// only costs the screen-based confirmation its backup).
func (l *Log) trim() {
	data, err := os.ReadFile(l.Path)
	if err != nil {
		return
	}
	half := data[len(data)/2:]
	if i := bytes.IndexByte(half, '\n'); i >= 0 {
		half = half[i+1:]
	}
	tmp := l.Path + ".tmp"
	if os.WriteFile(tmp, half, 0o600) == nil {
		_ = os.Rename(tmp, l.Path)
	}
}

// Has reports whether id has been recorded as received at r. It rereads
// the file only when it has grown, so a confirm loop can ask every few
// milliseconds.
func (l *Log) Has(id message.ID, at Recipient) bool {
	if !at.valid() {
		return false
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	fi, err := os.Stat(l.Path)
	if err != nil {
		return false
	}
	if fi.Size() != l.size {
		data, err := os.ReadFile(l.Path)
		if err != nil {
			return false
		}
		// A leading newline makes every id a whole line to match.
		l.data, l.size = append([]byte("\n"), data...), int64(len(data))
	}
	return bytes.Contains(l.data, []byte("\n"+line(id, at)+"\n"))
}
