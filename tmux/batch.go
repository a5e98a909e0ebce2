package tmux

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"
)

// Calls that arrive while a tmux process is running wait for it to end and
// then go together, as one command list in one process (group commit): a
// lone send pays for one process per call, as before, but a broadcast to a
// hundred agents pays for a handful, not for hundreds.
//
// tmux runs a command list in order and stops at the first command that
// fails, so each call's commands are followed by a marker line
// (display-message -p with a random nonce): the markers printed say which
// calls ran, which one failed (tmux's stderr is its error) and which never
// ran (they go again in the next list).

// call is one or more tmux commands that must run together and in order (a
// load-buffer and its paste), with the data they read.
type call struct {
	ctx      context.Context
	cmds     [][]string // placeholders payloadArg(i) stand for payloads[i]
	payloads []string
	write    bool // changes a pane: wait for the truth even after ctx ends
	// pin: the server instance the call's list must check before it (a
	// Pinned view's); nil for none.
	pin *Instance
	// guarded: the list it goes in checks pin right before it (set by
	// listCommands: once in a list is enough, see there).
	guarded bool
	// alone: its commands run others (if-shell), whose answers come from a
	// control client as blocks of their own: through one, it goes in a
	// list of its own, where every block is its answer. (A tmux process
	// prints one stream, cut at the markers, so there it goes with others:
	// every paste of a broadcast is such a call.)
	alone bool
	// inserted: the blocks that the commands its if-shell runs add through
	// a control client (each command a block of its own, right after the
	// if-shell's), the same whichever branch runs; such a call needs no
	// list of its own.
	inserted int
	done     chan callResult
}

type callResult struct {
	out []byte
	err error
}

// Limits of one command list. tmux packs a client's arguments into one
// message of at most 16 KB, and 3.7 re-encodes them on the way: a list of
// copy-mode, capture-pane and display-message commands was "command too
// long" on 3.7c from about 8 KB of arguments (measured), so lists stay far
// below that. Extra files are kept well under any fd limit.
const (
	maxListBytes    = 4 << 10
	maxListPayloads = 32
)

// Limits of one command list through a control client, which sends it as
// a line of its input: 3.7c ran lines of 150 KB (1,600 captures, measured).
// Every list costs the server a turn of its loop, which polls every pane's
// terminal: 0.1 ms with 100 panes, 0.55 ms with 500 (measured), against
// 0.05 ms for a capture in a long list; a broadcast to 500 agents sent 150
// lists of 20 calls where 30 do.
const (
	maxControlListBytes    = 64 << 10
	maxControlListPayloads = 128
)

// maxPayloads is how many payloads one command list in a tmux process may
// carry.
func (c *core) maxPayloads() int {
	if c.payloadsOnStdin() {
		return 1
	}
	return maxListPayloads
}

// listLimits are the bytes and payloads of the next command list: a
// control client's when one is attached that takes every call, text
// included; a tmux process's otherwise. payloads is a func: a tmux
// process's limit may need the version, which a list without text never
// needs (asking tmux -V before the first list, which tells the version
// anyway, cost every command-line send a process).
func (c *core) listLimits() (bytes int, payloads func() int) {
	if ctl := c.control.Load(); ctl != nil && ctl.takesPayloads() {
		return maxControlListBytes, func() int { return maxControlListPayloads }
	}
	return maxListBytes, c.maxPayloads
}

// fitsProcess reports whether a command list is short enough for a tmux
// process.
func (c *core) fitsProcess(cmds [][]string, payloads []string) bool {
	n := 0
	for _, cmd := range cmds {
		for _, a := range cmd {
			n += len(a) + 1
		}
	}
	return n <= maxListBytes && len(payloads) <= c.maxPayloads()
}

// payloadsOnStdin reports whether this tmux must get message text on
// stdin ("load-buffer -"): before 3.2 a tmux server, not the client, may
// open a file a command names, and /dev/fd/N would then be one of the
// server's own files. The server's version comes free with the first pane
// lookup (twoInOne); only without one is the binary asked (tmux -V).
func (c *core) payloadsOnStdin() bool {
	switch c.oldPaste.Load() {
	case pasteNew:
		return false
	case pasteOld:
		return true
	}
	v, err := BinaryVersion(context.Background(), c.bin)
	c.noteVersion(v)
	return err != nil || c.oldPaste.Load() != pasteNew
}

// How this tmux takes message text (Exec.oldPaste): not known yet, from
// /dev/fd/N, or on stdin.
const (
	pasteUnknown int32 = iota
	pasteNew
	pasteOld
)

// noteVersion remembers how the server of version v takes message text.
func (c *core) noteVersion(v Version) {
	if v.AtLeast(3, 2) {
		c.oldPaste.Store(pasteNew)
	} else {
		c.oldPaste.Store(pasteOld)
	}
}

// payloadArg stands for the file of payload i in a call's commands; a NUL
// cannot occur in a real argument.
func payloadArg(i int) string { return "\x00payload" + strconv.Itoa(i) }

// do runs one call, its commands separated by ";" arguments, and returns
// its output.
func (c *Exec) do(ctx context.Context, write bool, payloads []string, args ...string) ([]byte, error) {
	return c.doCommands(ctx, write, payloads, splitCommands(args))
}

// doCommands runs one call of the given commands (whose arguments may be
// anything, ";" included) and returns its output.
func (c *Exec) doCommands(ctx context.Context, write bool, payloads []string, cmds [][]string) ([]byte, error) {
	return c.core.submit(ctx, &call{cmds: cmds, payloads: payloads, write: write, pin: c.pinned()})
}

// pinned is the server instance a pinned view's calls go in command lists
// that first check (guard); nil for none.
func (c *Exec) pinned() *Instance {
	if c.pin != nil && !c.pin.Server.IsZero() {
		return &c.pin.Server
	}
	return nil
}

// guard is a command that fails, and so ends the command list before
// anything after it runs, on any server but instance i: it asks for the
// hidden variable only i carries (Exec.mark). tmux 3.2a's show-options
// does not fail for a missing user option; show-environment does, on
// every release from 3.2a to 3.7c (measured).
func (i Instance) guard() []string { return []string{"show-environment", "-g", "-h", i.marker()} }

// submit queues call cl and waits for its answer.
func (c *core) submit(ctx context.Context, cl *call) ([]byte, error) {
	cl.ctx, cl.done = ctx, make(chan callResult, 1)
	write := cl.write
	start := time.Now()
	c.mu.Lock()
	c.queue = append(c.queue, cl)
	if !c.draining {
		c.draining = true
		go c.drain()
	}
	c.mu.Unlock()
	select {
	case c.arrived <- struct{}{}:
	default:
	}
	var r callResult
	if write {
		r = <-cl.done // bounded by the command timeout
	} else {
		select {
		case r = <-cl.done:
		case <-ctx.Done():
			r.err = ctx.Err() // a read may still run; its answer is dropped
		}
	}
	if c.Trace != nil {
		c.Trace(callNames(cl), time.Since(start), r.err)
	}
	return r.out, r.err
}

// splitCommands cuts args at the ";" separators into commands.
func splitCommands(args []string) [][]string {
	var cmds [][]string
	cur := []string{}
	for _, a := range args {
		if a == ";" {
			cmds = append(cmds, cur)
			cur = []string{}
			continue
		}
		cur = append(cur, a)
	}
	return append(cmds, cur)
}

// Gather tells the server's client that delta more callers (a negative
// delta: fewer) will call again in a moment: deliveries at work, between
// one call and their next. While a tmux process is the only way to the
// server, a command list then waits up to gatherWait for all of them, and
// goes as one process instead of one for the first caller and another for
// the rest (four deliveries in step took 4.7 processes a message, not
// 1.5; starting a tmux client was 57% of the CPU of a pass on two cores).
// A caller that sleeps, or writes its records, is not coming: it says so
// with -1, and +1 when it is back.
func (c *Exec) Gather(delta int) {
	c.coming.Add(int64(delta))
	if delta < 0 {
		// One fewer to wait for: a list waiting may go now.
		select {
		case c.arrived <- struct{}{}:
		default:
		}
	}
}

// gatherWait bounds how long a command list waits for the callers still
// coming (Gather): under a tmux process's own cost (2 ms and more).
const gatherWait = time.Millisecond

// gather waits, up to c.gatherWait, until as many calls wait as callers are
// coming; not through a control client, where a list costs 0.1 ms.
func (c *core) gather() {
	if ctl := c.control.Load(); ctl != nil && ctl.Attached() {
		return
	}
	var deadline <-chan time.Time
	for {
		c.mu.Lock()
		n := int64(len(c.queue))
		c.mu.Unlock()
		if n == 0 || n >= c.coming.Load() {
			return
		}
		if deadline == nil {
			t := time.NewTimer(c.gatherWait)
			defer t.Stop()
			deadline = t.C
		}
		select {
		case <-c.arrived:
		case <-deadline:
			return
		}
	}
}

// drain runs command lists until no call is waiting.
func (c *core) drain() {
	for {
		c.gather()
		c.mu.Lock()
		list := c.takeList()
		if len(list) == 0 {
			c.draining = false
			c.mu.Unlock()
			return
		}
		c.mu.Unlock()
		if again := c.runList(list); len(again) > 0 {
			c.mu.Lock()
			c.queue = append(again, c.queue...)
			c.mu.Unlock()
		}
	}
}

// takeList takes the calls for the next command list off the queue, within
// its limits; a call whose caller has given up is answered, never run.
// c.mu is held.
func (c *core) takeList() []*call {
	var list []*call
	size, files := 0, 0
	maxBytes, maxFiles := c.listLimits()
	ctl := c.control.Load()
	controlled := ctl != nil && ctl.Attached()
	// A control client that takes no text (the server cannot open our
	// files: Darwin, serverPath) still takes every list without text, as
	// long as it takes them; text goes in lists of its own, sized for the
	// tmux processes that run them.
	textApart := controlled && !ctl.takesPayloads()
	textList := false
	if textApart && len(c.queue) > 0 {
		if textList = len(c.queue[0].payloads) > 0; !textList {
			maxBytes = maxControlListBytes
		}
	}
	for len(c.queue) > 0 {
		cl := c.queue[0]
		if err := cl.ctx.Err(); err != nil {
			cl.done <- callResult{err: err}
			c.queue = c.queue[1:]
			continue
		}
		n := 0
		for _, cmd := range cl.cmds {
			for _, a := range cmd {
				n += len(a) + 1
			}
		}
		n += 64 // its marker
		if cl.pin != nil {
			n += 64 // its guard, when the list checks the server right before it
		}
		alone := cl.alone && controlled
		if len(list) > 0 && (alone || size+n > maxBytes || textApart && (len(cl.payloads) > 0) != textList ||
			len(cl.payloads) > 0 && files+len(cl.payloads) > maxFiles()) {
			break
		}
		list = append(list, cl)
		size += n
		files += len(cl.payloads)
		c.queue = c.queue[1:]
		if alone {
			break
		}
	}
	return list
}

// runList runs calls as one command list, through the control client or
// in one tmux process, answers the calls that ran or failed, and returns
// those that never ran.
//
// Through a control client, tmux answers each command in a block of its
// own, so the blocks say which call each output is; a tmux process prints
// one stream, so each call is followed by a marker line there
// (display-message with a random nonce). A marker cost the server as much
// as a capture (measured: the guard and marker of each call were a third
// of tmux's time in a broadcast).
func (c *core) runList(list []*call) (again []*call) {
	c.lists.Add(1)
	// A list made for processes may hold a call that must be alone
	// through a control client (one attached since): it goes as a process.
	if ctl := c.control.Load(); ctl != nil && (len(list) == 1 || !slices.ContainsFunc(list, func(cl *call) bool { return cl.alone })) {
		cmds, payloads, write := listCommands(list, "")
		if res, ok := ctl.run(cmds, payloads, write); ok {
			return c.answer(list, write, res, blockOutputs(list, res.blocks, res.exitCode == 0))
		}
	}
	nonce := newNonce()
	cmds, payloads, write := listCommands(list, nonce)
	if len(list) > 1 && !c.fitsProcess(cmds, payloads) {
		return list // made for a control client that has left: again, in lists a process takes
	}
	res := c.runProcess(cmds, payloads)
	return c.answer(list, write, res, splitMarkers(res.stdout, nonce, len(list)))
}

// blockOutputs are the outputs of the calls of list whose commands all
// ran, from each command's block, in order (whole: no command of the list
// failed). A call alone in its list has every block (see call.alone).
func blockOutputs(list []*call, blocks [][]byte, whole bool) [][]byte {
	if len(list) == 1 && list[0].alone {
		if !whole {
			return nil
		}
		return [][]byte{bytes.Join(blocks, nil)}
	}
	var outs [][]byte
	for _, cl := range list {
		n := len(cl.cmds) + cl.inserted
		if cl.guarded {
			n++
		}
		if n > len(blocks) {
			break
		}
		outs = append(outs, bytes.Join(blocks[:n], nil))
		blocks = blocks[n:]
	}
	return outs
}

// answer answers the calls of list from res, the result of their command
// list (write: it changes a pane), and outs, the outputs of the calls that
// ran, in order; it returns the calls that never ran.
func (c *core) answer(list []*call, write bool, res result, outs [][]byte) (again []*call) {
	if res.err != nil {
		msg := res.err.Error()
		if res.err == errAbandoned {
			msg = abandonedMessage(c.timeout, write)
		}
		for _, cl := range list {
			cl.done <- callResult{err: &Error{Command: callNames(cl), Socket: c.server.Socket, Stderr: msg, ExitCode: -1, Kind: classify(msg)}}
		}
		return nil
	}
	for i, cl := range list {
		switch {
		case i < len(outs):
			cl.done <- c.checked(cl, outs[i])
		case i == len(outs) || classify(res.stderr) == ErrNoServer:
			// The call that failed, or one the server never got to because
			// it went away.
			stderr := res.stderr
			switch {
			case stderr == "" && res.exitCode == 0:
				// tmux ends a list early and quietly, exit 0, only when
				// its server exits under it (kill-server from another
				// client): the calls it never finished found no server.
				stderr = "the server exited while it ran the command list (tmux exited 0 before its end)"
			case stderr == "":
				stderr = fmt.Sprintf("exit status %d", res.exitCode)
			}
			cl.done <- callResult{err: &Error{Command: callNames(cl), Socket: c.server.Socket, Stderr: stderr, ExitCode: res.exitCode, Kind: classify(stderr)}}
		default:
			again = append(again, cl) // after the failure: never ran
		}
	}
	return again
}

// checked is the answer of call cl whose commands ran with output out:
// the guard's line, when its list checked the server right before it, is
// not part of it.
func (c *core) checked(cl *call, out []byte) callResult {
	if !cl.guarded {
		return callResult{out: out}
	}
	rest, ok := bytes.CutPrefix(out, []byte(cl.pin.marker()+"=1\n"))
	if !ok {
		return callResult{err: &Error{Command: callNames(cl), Socket: c.server.Socket, Stderr: "tmux's answer lacked the server check", ExitCode: -1}}
	}
	return callResult{out: rest}
}

// listCommands is the command list of calls: each call's commands, its
// payload placeholders numbered within the list, then its marker (none
// when nonce is ""). A pinned call is preceded by its server's guard,
// unless an earlier call of the list checked that server: a list runs in
// one server process from its start to its end, so one check holds for
// all of it.
func listCommands(list []*call, nonce string) (cmds [][]string, payloads []string, write bool) {
	var checked *Instance
	for i, cl := range list {
		base := len(payloads)
		payloads = append(payloads, cl.payloads...)
		write = write || cl.write
		cl.guarded = cl.pin != nil && (checked == nil || *checked != *cl.pin)
		if cl.guarded {
			cmds = append(cmds, cl.pin.guard())
			checked = cl.pin
		}
		for _, cmd := range cl.cmds {
			args := make([]string, len(cmd))
			for j, a := range cmd {
				if n, ok := payloadIndex(a); ok {
					a = payloadArg(base + n)
				}
				args[j] = a
			}
			cmds = append(cmds, args)
		}
		if nonce != "" {
			cmds = append(cmds, []string{"display-message", "-p", marker(nonce, i)})
		}
	}
	return cmds, payloads, write
}

// runProcess runs a command list in a tmux process of its own.
func (c *core) runProcess(cmds [][]string, payloads []string) result {
	onStdin := len(payloads) > 0 && c.payloadsOnStdin()
	args := []string{"-S", c.server.Socket}
	for i, cmd := range cmds {
		if i > 0 {
			args = append(args, ";")
		}
		for _, a := range cmd {
			args = append(args, listArg(a, onStdin))
		}
	}
	c.procs.Add(1)
	if len(payloads) > 0 {
		c.textProcs.Add(1)
	}
	return runProc(context.Background(), c.bin, args, payloads, onStdin, c.timeout, true)
}

// listArg makes one argument safe in a tmux process's command list:
// payload placeholders become the files' paths (or "-", the one payload on
// stdin), and an argument ending in ";" (which tmux would take for a
// separator) gets the backslash that tmux removes again.
func listArg(a string, onStdin bool) string {
	if n, ok := payloadIndex(a); ok {
		if onStdin {
			return "-"
		}
		return "/dev/fd/" + strconv.Itoa(3+n)
	}
	if strings.HasSuffix(a, ";") { // ";" alone too
		return a[:len(a)-1] + `\;`
	}
	return a
}

func marker(nonce string, i int) string { return "agentmsg-end-" + nonce + "-" + strconv.Itoa(i) }

func newNonce() string {
	b := make([]byte, 8)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

// splitMarkers cuts a command list's output at its markers, in order: one
// output per call that ran to its end.
func splitMarkers(stdout []byte, nonce string, n int) [][]byte {
	var outs [][]byte
	var cur []string
	s := strings.TrimSuffix(string(stdout), "\n")
	if s == "" {
		return nil
	}
	for line := range strings.SplitSeq(s, "\n") {
		if len(outs) < n && line == marker(nonce, len(outs)) {
			out := ""
			if len(cur) > 0 {
				out = strings.Join(cur, "\n") + "\n"
			}
			outs = append(outs, []byte(out))
			cur = nil
			continue
		}
		cur = append(cur, line)
	}
	return outs
}

// callNames names a call's commands for errors, never its arguments.
func callNames(cl *call) string {
	names := make([]string, 0, len(cl.cmds))
	for _, cmd := range cl.cmds {
		if len(cmd) > 0 {
			names = append(names, cmd[0])
		}
	}
	return strings.Join(names, "+")
}
