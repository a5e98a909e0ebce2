package cmd

import (
	"bytes"
	"strings"
	"testing"

	"github.com/agentmsg/agentmsg/tmux"
)

// A tmux's hazards are for doctor, once, and only those a person can act
// on: config printed 4 lines of them on every run, and both listed the
// pasted ESC[201~, which agentmsg removes from every text whatever tmux.
func TestHazardsOnlyInDoctorAndOnlyThoseThatApply(t *testing.T) {
	in := tmuxInUse{Path: "/usr/bin/tmux", Why: "the first tmux on $PATH", Version: "3.3a", Hazards: tmux.Version("3.3a").Hazards()}
	var cfg, doc bytes.Buffer
	printTmux(&cfg, in) // config's
	printTmux(&doc, in) // doctor's
	printHazards(&doc, in.Hazards)
	if strings.Contains(cfg.String(), "hazard") || !strings.Contains(cfg.String(), "/usr/bin/tmux (3.3a") {
		t.Errorf("config's tmux line:\n%s", cfg.String())
	}
	if !strings.Contains(doc.String(), "hazard: the server segfaults") {
		t.Errorf("doctor on tmux 3.3a does not name the crash hazard:\n%s", doc.String())
	}
	if strings.Contains(doc.String(), "ESC[201~") {
		t.Errorf("doctor names a hazard agentmsg defends against whole:\n%s", doc.String())
	}
	doc.Reset()
	in.Version, in.Hazards = "3.7c", tmux.Version("3.7c").Hazards()
	if printHazards(&doc, in.Hazards); strings.Contains(doc.String(), "hazard") {
		t.Errorf("doctor on tmux 3.7c:\n%s", doc.String())
	}
}
