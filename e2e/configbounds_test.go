package e2e

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/agentmsg/agentmsg/e2e/harness"
)

// A duration past its bound is refused before anything is typed, from the
// config file, the environment and a flag alike, naming the key and the
// bound. settle = "2562047h" was accepted, and a send typed the text and
// then slept until it was killed.
func TestDurationPastItsBoundIsRefused(t *testing.T) {
	t.Parallel()
	s := harness.NewTestServer(t)
	ana := s.StartAgent("agent-alpha-ana")
	file := filepath.Join(s.Dir, "config", "agentmsg", "config.toml")
	if err := os.MkdirAll(filepath.Dir(file), 0o700); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name, file string
		env, args  []string
		want       string
	}{
		{name: "file", file: "settle = \"2562047h\"\n", want: `settle = "2562047h" in ` + file + `:1: want 10s or less`},
		{name: "env", env: []string{"AGENTMSG_SETTLE=2562047h"}, want: `AGENTMSG_SETTLE="2562047h": want 10s or less`},
		{name: "flag", args: []string{"--settle", "2562047h"}, want: `--settle "2562047h": want 10s or less`},
		{name: "profile", file: "[profiles.generic]\nsettle = \"2562047h\"\n", want: `[profiles.generic] settle = "2562047h": want a duration from 0s to 10s`},
	} {
		t.Run(c.name, func(t *testing.T) {
			if err := os.WriteFile(file, []byte(c.file), 0o600); err != nil {
				t.Fatal(err)
			}
			// Well under the harness's bound: a send that sleeps fails
			// here rather than after RunTimeout.
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			args := append([]string{"-S", s.Socket, "send"}, append(c.args, "alpha", "ana", "hello "+c.name)...)
			res, err := s.Server.ExecEnv(ctx, nil, c.env, args...)
			if err != nil {
				t.Fatal(err)
			}
			wantCode(t, res, 2)
			if !strings.Contains(res.Stderr, c.want) {
				t.Errorf("stderr %q does not say %q", res.Stderr, c.want)
			}
		})
	}
	wantUntouched(t, ana)
}
