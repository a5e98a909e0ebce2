package profile

import (
	_ "embed"
	"encoding/json"
	"fmt"
	"maps"
	"regexp"
	"sync"
	"time"
)

// A live CLI's settle is what scripts/calibrate measured for the version
// the tests pin, with a stated margin, and nothing more: a pause a CLI
// does not need is paid by every message sent to it.
//
// calibration.json holds the measurements: for each CLI the version
// measured and its runs (each the shortest candidate pause at which every
// one of its sends submitted on the first press). scripts/calibrate
// records a run there (e2e/calibrate -record), dropping the runs of any
// other version, so a changed CLI is measured again rather than trusted on
// an old figure; TestCalibratedVersionsArePinned fails while the version
// scripts/clis.sh pins and the measured one differ.
//
// The margin is a factor of two on the longest run: a loaded machine slows
// the CLI's reading of the paste and our press alike. A press that comes
// too early anyway is not a lost or doubled message, only a slower one:
// the engine presses again while our text is still in the box.
//
//go:embed calibration.json
var calibrationJSON []byte

// Margin is the factor a calibrated settle applies to the longest pause
// a run needed.
const Margin = 2

// Calibration is what scripts/calibrate measured for one CLI.
type Calibration struct {
	Product string `json:"product"` // "Claude Code"
	Version string `json:"version"` // as `CLI --version` prints it: "2.1.197"
	Runs    []Run  `json:"runs"`
}

// Run is one calibration run.
type Run struct {
	Date     string `json:"date"`  // 2026-11-23
	Tmux     string `json:"tmux"`  // 3.3a
	Texts    string `json:"texts"` // the kinds of text sent
	Sends    int    `json:"sends"` // sends per candidate pause
	NeededMS int    `json:"needed_ms"`
}

// Settle is the calibrated settle: the longest pause a run needed, times
// Margin.
func (c Calibration) Settle() time.Duration {
	longest := 0
	for _, r := range c.Runs {
		longest = max(longest, r.NeededMS)
	}
	return time.Duration(longest*Margin) * time.Millisecond
}

// Explain says where a calibrated settle comes from, for doctor.
func (c Calibration) Explain() string {
	needed := ""
	for i, r := range c.Runs {
		if i > 0 {
			needed += ", "
		}
		needed += fmt.Sprintf("%d ms", r.NeededMS)
	}
	return fmt.Sprintf("calibrated for %s %s: %d runs needed %s; times %d", c.Product, c.Version, len(c.Runs), needed, Margin)
}

// Calibrations are the measurements calibration.json holds, by profile
// name.
func Calibrations() map[string]Calibration { return maps.Clone(calibrations()) }

var calibrations = sync.OnceValue(func() map[string]Calibration {
	var all map[string]Calibration
	if err := json.Unmarshal(calibrationJSON, &all); err != nil {
		panic("profile: calibration.json: " + err.Error()) // embedded: any test finds it
	}
	return all
})

// Calibrated is the calibration of the profile of that name.
func Calibrated(name string) (Calibration, bool) {
	c, ok := calibrations()[name]
	return c, ok
}

// calibratedSettle is a builtin profile's settle: what was measured.
func calibratedSettle(name string) time.Duration {
	c, ok := Calibrated(name)
	if !ok {
		panic("profile: no calibration for " + name)
	}
	return c.Settle()
}

var semver = regexp.MustCompile(`\d+\.\d+\.\d+`)

// VersionOf is the version in what `CLI --version` prints ("2.1.197 (Claude
// Code)", "codex-cli 0.169.0"), or "" when it shows none.
func VersionOf(printed string) string {
	return semver.FindString(printed)
}
