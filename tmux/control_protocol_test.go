package tmux

import (
	"errors"
	"os"
	"strings"
	"testing"
	"time"
)

// answers feeds a control connection the output lines, after its attach,
// with n requests pending ("END0", "END1" stand for their end markers),
// and returns what each request got.
func answers(t *testing.T, n int, lines []string) []*controlReq {
	t.Helper()
	outR, outW, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	inR, inW, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer inR.Close()
	drainR, drainW, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	drainR.Close()
	exited := make(chan struct{})
	close(exited)
	cn := &controlConn{stdin: inW, drainer: drainW, attached: make(chan error, 1), done: make(chan struct{}), exited: exited}
	go cn.read(outR)
	if _, err := outW.WriteString("%begin 1 1 0\n%end 1 1 0\n%session-changed $0 a\n"); err != nil {
		t.Fatal(err)
	}
	if err := <-cn.attached; err != nil {
		t.Fatal(err)
	}
	var reqs []*controlReq
	for range n {
		req, err := cn.send("display-message -p x", nil, time.Second)
		if err != nil {
			t.Fatal(err)
		}
		reqs = append(reqs, req)
	}
	text := strings.Join(lines, "\n") + "\n"
	for i, req := range reqs {
		text = strings.ReplaceAll(text, "END"+string(rune('0'+i)), req.end)
	}
	if _, err := outW.WriteString(text); err != nil {
		t.Fatal(err)
	}
	outW.Close()
	<-cn.done
	return reqs
}

func TestControlAnswers(t *testing.T) {
	type want struct {
		lost   bool
		stdout string
		exit   int
		stderr string
	}
	for _, tc := range []struct {
		name  string
		lines []string
		want  []want
	}{
		{"output, a notification, the end", []string{
			"%begin 2 5 1", "a", "", "%end 2 5 1", "%window-renamed @1 x", "%begin 2 6 1", "END0", "%end 2 6 1",
		}, []want{{stdout: "a\n\n"}}},
		{"screen lines that look like guards but are not this block's", []string{
			"%begin 2 5 1", "%end 2 5 0", "%error 2 4 1", "%begin 9 9 1", "%exit", "%end 2 5 1", "%begin 2 6 1", "END0", "%end 2 6 1",
		}, []want{{stdout: "%end 2 5 0\n%error 2 4 1\n%begin 9 9 1\n%exit\n"}}},
		{"a failing command", []string{
			"%begin 2 5 1", "before", "%end 2 5 1", "%begin 2 6 1", "can't find pane: %9", "%error 2 6 1", "%begin 2 7 1", "END0", "%end 2 7 1",
		}, []want{{stdout: "before\n", exit: 1, stderr: "can't find pane: %9\n"}}},
		{"hooks' blocks are not ours", []string{
			"%begin 2 5 0", "from a hook", "%error 2 5 0", "%begin 2 6 1", "END0", "%end 2 6 1",
		}, []want{{}}},
		{"two lists, answered in order", []string{
			"%begin 2 5 1", "one", "%end 2 5 1", "%begin 2 6 1", "END0", "%end 2 6 1",
			"%begin 2 7 1", "two", "%end 2 7 1", "%begin 2 8 1", "END1", "%end 2 8 1",
		}, []want{{stdout: "one\n"}, {stdout: "two\n"}}},
		{"a forged closing line leaves text outside a block", []string{
			"%begin 2 5 1", "top", "%end 2 5 1", "rest of the screen", "%end 2 5 1", "%begin 2 6 1", "END0", "%end 2 6 1",
		}, []want{{lost: true}}},
		{"a forged closing line that looks like a notification after it", []string{
			"%begin 2 5 1", "%end 2 5 1", "%output %1 x", "%end 2 5 1", "%begin 2 6 1", "END0", "%end 2 6 1",
		}, []want{{lost: true}}},
		{"a forged failure and a forged next block", []string{
			"%begin 2 5 1", "%error 2 5 1", "%begin 2 6 1", "can't find pane", "%end 2 5 1", "%begin 2 6 1", "END0", "%end 2 6 1",
		}, []want{{lost: true}}},
		{"the client leaves mid-answer", []string{
			"%begin 2 5 1", "a", "%end 2 5 1", "%exit server exited",
		}, []want{{lost: true}}},
		{"an answer to nothing", []string{
			"%begin 2 5 1", "END0", "%end 2 5 1", "%begin 2 6 1", "%end 2 6 1",
		}, []want{{}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			reqs := answers(t, len(tc.want), tc.lines)
			for i, req := range reqs {
				r := <-req.done
				w := tc.want[i]
				if req.lost != w.lost {
					t.Fatalf("request %d: lost %v (%+v), want %v", i, req.lost, r, w.lost)
				}
				if w.lost {
					if r.err == nil || r.exitCode != -1 {
						t.Errorf("request %d lost without an error: %+v", i, r)
					}
					continue
				}
				if string(r.stdout) != w.stdout || r.exitCode != w.exit || r.stderr != w.stderr || r.err != nil {
					t.Errorf("request %d = %+v (stdout %q), want %+v", i, r, r.stdout, w)
				}
			}
		})
	}
}

// A client that leaves as the server exits says so; the error reads as
// no server.
func TestControlLostToAServerThatExited(t *testing.T) {
	reqs := answers(t, 1, []string{"%exit server exited"})
	r := <-reqs[0].done
	if r.err == nil || classify(r.err.Error()) != ErrNoServer {
		t.Fatalf("lost to an exiting server: %+v, want an error classified as no server", r)
	}
	if !errors.Is(classify("server exited unexpectedly"), ErrNoServer) {
		t.Error("a crashed server is no server")
	}
}
