package profile

import (
	"os"
	"regexp"
	"strings"
	"testing"
	"time"
)

// A live CLI's settle is what was measured for it, times the margin, and
// no floor: Claude Code needed 0 ms in two runs of 100 sends, so a send to
// it pays no settle (it used to pay a 20 ms floor on every message).
func TestSettleIsWhatWasMeasured(t *testing.T) {
	want := map[string]time.Duration{
		"claude": 0, "qwen": 0, "droid": 0,
		"codex":  200 * time.Millisecond, // runs needed 0 and 0 ms; its paste-burst floor (codexPasteBurst)
		"gemini": 150 * time.Millisecond, // runs needed 50 and 75 ms
	}
	for name, settle := range want {
		p, ok := Lookup(name)
		if !ok {
			t.Fatalf("no profile %s", name)
		}
		if p.Settle != settle {
			t.Errorf("%s: settle %v, want %v (%s)", name, p.Settle, settle, mustCalibration(t, name).Explain())
		}
	}
}

// Every live CLI's calibration is for the version the tests pin
// (scripts/clis.sh) and holds two runs at least: a new version is measured
// again (scripts/calibrate) before its figures are trusted.
func TestCalibratedVersionsArePinned(t *testing.T) {
	script, err := os.ReadFile("../scripts/clis.sh")
	if err != nil {
		t.Fatal(err)
	}
	for name, c := range Calibrations() {
		// The last default of the CLI's line is the program's own version
		// (for Droid, its binary's package).
		line := regexp.MustCompile(`(?ms)^\s*` + name + `\).*?;;`).Find(script)
		pins := regexp.MustCompile(`:-([0-9][0-9.]*)\}`).FindAllSubmatch(line, -1)
		if len(pins) == 0 {
			t.Errorf("%s: no pinned version in scripts/clis.sh", name)
			continue
		}
		if pinned := string(pins[len(pins)-1][1]); pinned != c.Version {
			t.Errorf("%s: scripts/clis.sh pins %s, calibration.json measured %s: run scripts/calibrate %s (twice)", name, pinned, c.Version, name)
		}
		if len(c.Runs) < 2 {
			t.Errorf("%s %s: %d calibration runs, want 2 or more", name, c.Version, len(c.Runs))
		}
		if _, ok := Lookup(name); !ok {
			t.Errorf("calibration for %s, which is no profile", name)
		}
	}
}

func TestVersionOf(t *testing.T) {
	for printed, want := range map[string]string{
		"2.1.197 (Claude Code)": "2.1.197", "codex-cli 0.169.0": "0.169.0", "0.61.0\n": "0.61.0", "dev": "",
	} {
		if got := VersionOf(printed); got != want {
			t.Errorf("VersionOf(%q) = %q, want %q", printed, got, want)
		}
	}
}

func TestExplain(t *testing.T) {
	got := mustCalibration(t, "gemini").Explain()
	if !strings.Contains(got, "Gemini CLI 0.61.0") || !strings.Contains(got, "50 ms, 75 ms") || !strings.Contains(got, "times 2") {
		t.Errorf("Explain: %q", got)
	}
}

func mustCalibration(t *testing.T, name string) Calibration {
	t.Helper()
	c, ok := Calibrated(name)
	if !ok {
		t.Fatalf("no calibration for %s", name)
	}
	return c
}
