// Command fakeapi runs the loopback stand-in for the agents' model APIs
// (Anthropic Messages, OpenAI Responses and Chat Completions, Gemini) until
// interrupted. It prints its base URL on the first line of stdout (and
// writes it to -url-file, if given), for ANTHROPIC_BASE_URL,
// GOOGLE_GEMINI_BASE_URL, Codex's base_url (URL/v1) or OPENAI_BASE_URL.
//
//	fakeapi -log /tmp/x/api.jsonl -mode slow -slow 8s
//	curl -d '{"mode":"bash"}' "$URL/_control"
package main

import (
	"flag"
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"github.com/agentmsg/agentmsg/e2e/fakeapi"
)

func main() {
	logPath := flag.String("log", "", "append one JSON record per request to this file")
	modeFile := flag.String("mode-file", "", "read before each prompt: a mode name or a control JSON document")
	mode := flag.String("mode", "instant", "initial mode: instant, slow or bash")
	slow := flag.Duration("slow", fakeapi.DefaultSlowFor, "how long slow mode streams a reply")
	bash := flag.String("bash", fakeapi.DefaultBashCommand, "the command bash mode asks to run")
	reply := flag.String("reply", fakeapi.DefaultReply, "the text of a reply")
	dump := flag.String("dump", "", "write every request body to a file in this dir")
	urlFile := flag.String("url-file", "", "write the base URL to this file once listening")
	flag.Parse()

	srv, err := fakeapi.New(fakeapi.Config{LogPath: *logPath, ModeFile: *modeFile, DumpDir: *dump, Control: fakeapi.Control{
		Mode: fakeapi.Mode(*mode), SlowSeconds: slow.Seconds(), BashCommand: *bash, Reply: *reply,
	}})
	if err == nil {
		err = srv.Start()
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "fakeapi:", err)
		os.Exit(1)
	}
	fmt.Println(srv.URL())
	if *urlFile != "" {
		if err := os.WriteFile(*urlFile, []byte(srv.URL()+"\n"), 0o644); err != nil {
			fmt.Fprintln(os.Stderr, "fakeapi:", err)
			_ = srv.Close()
			os.Exit(1)
		}
	}
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, os.Interrupt, syscall.SIGTERM)
	<-sig
	_ = srv.Close()
}
