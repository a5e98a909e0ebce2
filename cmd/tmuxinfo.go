package cmd

import (
	"context"
	"fmt"
	"io"

	"github.com/agentmsg/agentmsg/tmux"
)

// tmuxInUse says which tmux binary agentmsg runs (config tmux,
// AGENTMSG_TMUX or $PATH) and its version.
type tmuxInUse struct {
	Path    string        `json:"path"`
	Why     string        `json:"why,omitempty"` // configured, the server's own binary, or $PATH's
	Version tmux.Version  `json:"version"`
	Error   string        `json:"error,omitempty"`
	Hazards []tmux.Hazard `json:"hazards,omitempty"`
}

// whichTmux finds the tmux in use; serverVersion, when known, decides the
// hazards (the server is what a defect takes down), else the binary's.
func whichTmux(ctx context.Context, f *Factory, serverVersion string) tmuxInUse {
	var in tmuxInUse
	cfg, err := f.Config()
	if err != nil {
		in.Error = err.Error()
		return in
	}
	server, err := tmux.ResolveServer(cfg.Settings.Socket, cfg.Settings.SocketName, f.LookupEnv)
	if err != nil {
		in.Error = err.Error()
		return in
	}
	if in.Path, in.Why, err = tmux.Binary(cfg.Settings.Tmux, server, f.LookupEnv); err != nil {
		in.Error = err.Error()
		return in
	}
	if in.Version, err = tmux.BinaryVersion(ctx, in.Path); err != nil {
		in.Error = "tmux -V: " + err.Error()
	}
	v := in.Version
	if serverVersion != "" {
		v = tmux.Version(serverVersion)
	}
	if v != "" {
		in.Hazards = v.Hazards()
	}
	return in
}

// printTmux writes the tmux in use for a person.
func printTmux(w io.Writer, in tmuxInUse) {
	switch {
	case in.Path == "":
		fmt.Fprintf(w, "tmux      %s\n", show(in.Error))
		return
	case in.Error != "":
		fmt.Fprintf(w, "tmux      %s (%s)\n", show(in.Path), show(in.Error))
	default:
		fmt.Fprintf(w, "tmux      %s (%s; %s; choose another with AGENTMSG_TMUX or tmux = \"PATH\" in the config)\n", show(in.Path), show(string(in.Version)), show(in.Why))
	}
}

// printHazards writes the hazards a person can act on (doctor's: once, and
// only when the tmux has one); those agentmsg defends against whole are
// left to --json.
func printHazards(w io.Writer, hs []tmux.Hazard) {
	for _, h := range hs {
		if !h.Handled {
			fmt.Fprintf(w, "  hazard: %s\n    agentmsg: %s\n", h.Summary, h.Defence)
		}
	}
}
