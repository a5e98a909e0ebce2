package main

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"syscall"
	"time"
)

// session ties the pure parts (parser, agent, rendering) to the terminal and
// the log. Only run's goroutine touches it.
type session struct {
	a   *agent
	p   parser
	scr *screen
	log *eventLog
}

// run drives the stand-in until C-c, end of input or a terminating signal,
// and returns the exit status.
func run(o options) (int, error) {
	log, err := openEventLog(o.logPath)
	if err != nil {
		return 1, err
	}
	tty, err := setupTerminal(o.cfg.style, o.cfg.bracketedPaste)
	if err != nil {
		return 1, err
	}
	defer tty.restore()

	sigs := make(chan os.Signal, 4)
	signal.Notify(sigs, syscall.SIGWINCH, syscall.SIGTERM, syscall.SIGHUP, syscall.SIGINT)
	input := make(chan []byte, 16)
	go readInput(input)
	cues := make(chan string, 4)
	if o.cuePath != "" {
		go pollCue(o.cuePath, cues)
	}

	s := &session{a: newAgent(o.cfg, o.initial), scr: newScreen(os.Stdout, 0, 0), log: log}
	s.scr.resize(terminalSize())
	if err := s.redraw(); err != nil {
		return 1, err
	}
	s.a.log(time.Now(), "started", "", false)
	if err := s.flush(); err != nil {
		return 1, err
	}
	return s.loop(input, cues, sigs)
}

func (s *session) loop(input <-chan []byte, cues <-chan string, sigs <-chan os.Signal) (int, error) {
	var escTimer <-chan time.Time
	for {
		var busyTimer <-chan time.Time
		if d := s.a.deadline(); !d.IsZero() {
			busyTimer = time.After(time.Until(d))
		}
		select {
		case chunk, ok := <-input:
			if !ok {
				return 0, nil
			}
			evs := s.p.feed(chunk)
			escTimer = nil
			if s.p.waitingForEsc() {
				escTimer = time.After(escTimeout)
			}
			if len(evs) == 0 {
				continue // e.g. the middle of a long paste: nothing to redraw
			}
			s.apply(evs)
		case <-escTimer:
			escTimer = nil
			s.apply(s.p.flush())
		case <-busyTimer:
			s.a.tick(time.Now())
		case word := <-cues:
			s.a.cue(word, time.Now())
		case sig := <-sigs:
			if sig != syscall.SIGWINCH {
				return 128 + int(sig.(syscall.Signal)), nil
			}
			s.scr.resize(terminalSize())
		}
		// The log goes first: once the screen shows a prompt as submitted,
		// a test reading the log must find it there.
		if err := s.flush(); err != nil {
			return 1, err
		}
		if s.a.exitCode != 0 {
			return s.a.exitCode, nil
		}
		if err := s.redraw(); err != nil {
			return 1, err
		}
	}
}

// apply feeds events to the agent, stopping at an interrupt.
func (s *session) apply(evs []event) {
	for _, ev := range evs {
		s.a.handle(ev, time.Now())
		if s.a.exitCode != 0 {
			return
		}
	}
}

// flush writes pending log records, then starts the hooks they called
// for (a receipt follows its prompt); their echoes wait for the next redraw.
func (s *session) flush() error {
	recs := s.a.records
	s.a.records = nil
	if err := s.log.write(recs); err != nil {
		return err
	}
	for _, h := range s.a.hooks {
		go runHook(h)
	}
	s.a.hooks = nil
	return nil
}

// runHook runs one hook beside the agent, as Claude Code does: the screen
// goes on, and what the hook prints goes nowhere near it. A hook that fails
// is the hook's business.
func runHook(h hookRun) {
	cmd := exec.Command("/bin/sh", "-c", h.command)
	cmd.Stdin = bytes.NewReader(h.input)
	cmd.Run()
}

func (s *session) redraw() error {
	echoes := s.a.echoes
	s.a.echoes = nil
	var transcript []string
	for _, text := range echoes {
		transcript = append(transcript, echoRows(text, s.scr.width)...)
		for i := range s.a.cfg.outputLines {
			transcript = append(transcript, fmt.Sprintf("output line %d of %d", i+1, s.a.cfg.outputLines))
		}
	}
	return s.scr.draw(transcript, regionRows(s.a, s.scr.width))
}
