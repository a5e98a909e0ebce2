package main

import (
	"encoding/json"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/agentmsg/agentmsg/e2e/harness"
	"github.com/agentmsg/agentmsg/profile"
)

// keptRuns is how many of a version's latest runs the calibration file
// keeps: the settle covers the longest of them.
const keptRuns = 2

// products name the CLIs as the README does.
var products = map[string]string{
	"claude": "Claude Code", "codex": "Codex", "gemini": "Gemini CLI", "qwen": "Qwen Code", "droid": "Droid",
}

// recordRun adds this run's measurement to the calibration file: a CLI of
// another version than the file's starts its runs afresh, so its settle
// comes from its own measurements only.
func (c *calibration) recordRun(needed time.Duration) error {
	all := map[string]profile.Calibration{}
	b, err := os.ReadFile(c.record)
	if err != nil {
		return err
	}
	if err := json.Unmarshal(b, &all); err != nil {
		return fmt.Errorf("%s: %w", c.record, err)
	}
	version := profile.VersionOf(c.version)
	if version == "" {
		return fmt.Errorf("%s --version printed %q: no version in it", c.cli, c.version)
	}
	cal := all[c.cli]
	if cal.Version != version {
		cal = profile.Calibration{Product: products[c.cli], Version: version}
	}
	cal.Runs = append(cal.Runs, profile.Run{
		Date: time.Now().UTC().Format(time.DateOnly), Tmux: strings.TrimPrefix(harness.TmuxVersion(), "tmux "), Texts: "four kinds",
		Sends: c.sends, NeededMS: int(needed.Milliseconds()),
	})
	cal.Runs = cal.Runs[max(0, len(cal.Runs)-keptRuns):]
	all[c.cli] = cal
	out, err := json.MarshalIndent(all, "", "  ")
	if err != nil {
		return err
	}
	if err := os.WriteFile(c.record, append(out, '\n'), 0o644); err != nil {
		return err
	}
	fmt.Printf("recorded in %s: %s %s, settle %v (%s)\n", c.record, cal.Product, cal.Version, cal.Settle(), cal.Explain())
	if len(cal.Runs) < keptRuns {
		fmt.Printf("run it again: a settle rests on %d runs of one version\n", keptRuns)
	}
	return nil
}
