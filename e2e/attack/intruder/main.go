// Command intruder is another local user, for e2e/attack: run as uid
// 65534 (nobody), it does what such a user could do to an agentmsg that
// belongs to someone else, and prints what it got, one JSON line per
// finding, for the test to judge.
//
//	intruder listen SOCK SECONDS      make SOCK's directory and listen there; print what comes
//	intruder plant SOCK SECONDS       listen at SOCK in a directory made by the test
//	intruder scan PATTERN SECONDS     read every process's command line; print those holding PATTERN
//	intruder flood ADDR N SECONDS     open N TCP connections to ADDR, send nothing, hold them
//	intruder knock SOCK               connect to SOCK and ask it something
//	intruder read DIR                 try to read every file under DIR
//	intruder get URL TOKEN            an HTTP GET with a bearer token; print the status
package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"io/fs"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

func main() {
	if len(os.Args) < 2 {
		fail("usage: intruder listen|plant|scan|flood|knock|read|get ...")
	}
	args := os.Args[2:]
	switch os.Args[1] {
	case "listen":
		if err := os.MkdirAll(filepath.Dir(args[0]), 0o755); err != nil {
			fail(err.Error())
		}
		listen(args[0], seconds(args[1]))
	case "plant":
		listen(args[0], seconds(args[1]))
	case "scan":
		scan(args[0], seconds(args[1]))
	case "flood":
		n, _ := strconv.Atoi(args[1])
		flood(args[0], n, seconds(args[2]))
	case "knock":
		knock(args[0])
	case "read":
		read(args[0])
	case "get":
		get(args[0], args[1])
	default:
		fail("unknown command " + os.Args[1])
	}
}

func seconds(s string) time.Duration {
	n, _ := strconv.ParseFloat(s, 64)
	return time.Duration(n * float64(time.Second))
}

func say(kind string, fields map[string]any) {
	fields["kind"] = kind
	b, _ := json.Marshal(fields)
	fmt.Println(string(b))
}

func fail(msg string) {
	say("error", map[string]any{"error": msg})
	os.Exit(2)
}

// listen is a daemon impostor: it answers every request as a daemon that
// ran the command would (exit 0), and prints what each client sent.
func listen(sock string, d time.Duration) {
	os.Remove(sock)
	l, err := net.Listen("unix", sock)
	if err != nil {
		fail(err.Error())
	}
	os.Chmod(sock, 0o777)
	say("listening", map[string]any{"socket": sock})
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				c.SetDeadline(time.Now().Add(2 * time.Second))
				r := bufio.NewReader(c)
				req, err := http.ReadRequest(r)
				if err != nil {
					say("silent", map[string]any{"error": err.Error()}) // connected, sent nothing
					return
				}
				body, _ := io.ReadAll(req.Body)
				say("heard", map[string]any{"path": req.URL.Path, "body": string(body)})
				fmt.Fprintf(c, "HTTP/1.1 200 OK\r\nContent-Type: application/x-ndjson\r\nConnection: close\r\n\r\n{\"stdout\":%q,\"exit\":0}\n", "c3VibWl0dGVkIChmb3JnZWQpCg==")
			}()
		}
	}()
	time.Sleep(d)
	l.Close()
}

// scan reads every process's command line, again and again, as ps does.
func scan(pattern string, d time.Duration) {
	seen := map[string]bool{}
	for end := time.Now().Add(d); time.Now().Before(end); {
		ents, _ := os.ReadDir("/proc")
		for _, e := range ents {
			if pid, err := strconv.Atoi(e.Name()); err != nil || pid == os.Getpid() {
				continue
			}
			b, err := os.ReadFile("/proc/" + e.Name() + "/cmdline")
			if err != nil || !strings.Contains(string(b), pattern) {
				continue
			}
			line := strings.ReplaceAll(string(b), "\x00", " ")
			if !seen[line] {
				seen[line] = true
				say("found", map[string]any{"pid": e.Name(), "cmdline": line})
			}
		}
	}
	say("scanned", map[string]any{})
}

// flood opens n connections that never send a byte and holds them.
func flood(addr string, n int, d time.Duration) {
	var conns []net.Conn
	failed := 0
	for range n {
		c, err := net.DialTimeout("tcp", addr, time.Second)
		if err != nil {
			failed++
			continue
		}
		conns = append(conns, c)
	}
	say("flooding", map[string]any{"open": len(conns), "failed": failed})
	time.Sleep(d)
	alive := 0
	for _, c := range conns {
		c.SetReadDeadline(time.Now().Add(time.Millisecond))
		if _, err := c.Read(make([]byte, 1)); err != nil && strings.Contains(err.Error(), "timeout") {
			alive++
		}
		c.Close()
	}
	say("flooded", map[string]any{"opened": len(conns), "still_open": alive})
}

// knock connects to another user's socket and asks for its version.
func knock(sock string) {
	c, err := net.DialTimeout("unix", sock, time.Second)
	if err != nil {
		say("knocked", map[string]any{"connected": false, "error": err.Error()})
		return
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(2 * time.Second))
	fmt.Fprintf(c, "GET /v1/version HTTP/1.1\r\nHost: agentmsg\r\n\r\n")
	b, _ := io.ReadAll(c)
	say("knocked", map[string]any{"connected": true, "answer": string(b)})
}

// read tries every file and directory under dir.
func read(dir string) {
	var got []string
	var refused int
	filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			refused++
			return nil
		}
		if d.IsDir() {
			return nil
		}
		if _, err := os.ReadFile(path); err == nil {
			got = append(got, path)
		} else {
			refused++
		}
		return nil
	})
	say("read", map[string]any{"readable": got, "refused": refused})
}

func get(url, token string) {
	req, _ := http.NewRequest(http.MethodGet, url, nil)
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := (&http.Client{Timeout: 5 * time.Second}).Do(req)
	if err != nil {
		say("got", map[string]any{"error": err.Error()})
		return
	}
	resp.Body.Close()
	say("got", map[string]any{"status": resp.StatusCode})
}
