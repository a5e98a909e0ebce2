package e2e

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/agentmsg/agentmsg/e2e/harness"
)

// config and doctor say which tmux agentmsg runs (AGENTMSG_TMUX here, the
// matrix's build or $PATH's), its version, and that version's hazards.
func TestConfigAndDoctorNameTheTmuxInUse(t *testing.T) {
	t.Parallel()
	s := harness.NewTestServer(t)
	s.StartAgent("agent-alpha-ana")
	version := strings.TrimPrefix(harness.TmuxVersion(), "tmux ")
	old := !strings.HasPrefix(version, "3.7") && !strings.HasPrefix(version, "next") && version != "master"

	res := s.Run("--json", "config")
	wantCode(t, res, 0)
	var cfg struct {
		Tmux struct {
			Path    string `json:"path"`
			Version string `json:"version"`
			Hazards []struct {
				Summary string `json:"summary"`
			} `json:"hazards"`
		} `json:"tmux"`
	}
	if err := json.Unmarshal([]byte(res.Stdout), &cfg); err != nil {
		t.Fatalf("config --json: %v\n%s", err, res)
	}
	if cfg.Tmux.Path != harness.TmuxBin() || cfg.Tmux.Version != version {
		t.Errorf("config says tmux %q version %q, want %q version %q", cfg.Tmux.Path, cfg.Tmux.Version, harness.TmuxBin(), version)
	}
	if crash := len(cfg.Tmux.Hazards) > 0 && strings.Contains(cfg.Tmux.Hazards[0].Summary, "segfaults"); crash != old {
		t.Errorf("tmux %s: hazards %+v, want the crash hazard %v", version, cfg.Tmux.Hazards, old)
	}

	res = s.Run("doctor", "alpha", "ana")
	wantCode(t, res, 0)
	if !strings.Contains(res.Stdout, "tmux      "+harness.TmuxBin()+" ("+version) {
		t.Errorf("doctor does not name the tmux in use:\n%s", res.Stdout)
	}
	if strings.Contains(res.Stdout, "hazard: the server segfaults") != old {
		t.Errorf("doctor on tmux %s names the crash hazard: %v\n%s", version, !old, res.Stdout)
	}
}
