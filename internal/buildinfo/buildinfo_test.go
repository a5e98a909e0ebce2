package buildinfo

import (
	"runtime/debug"
	"testing"
)

func TestResolve(t *testing.T) {
	t.Parallel()
	vcs := []debug.BuildSetting{{Key: "vcs.revision", Value: "0a1b2c3d4e5f60718293a4b5c6d7e8f901234567"},
		{Key: "vcs.time", Value: "2026-12-07T10:00:00Z"}, {Key: "vcs.modified", Value: "false"}}
	for _, tt := range []struct {
		name    string
		stamped Info
		bi      *debug.BuildInfo
		want    Info
		line    string
	}{
		{"a release: goreleaser stamped all three", Info{"1.2.3", "abc", "2026-12-08T00:00:00Z"},
			&debug.BuildInfo{Main: debug.Module{Version: "(devel)"}, Settings: vcs},
			Info{"1.2.3", "abc", "2026-12-08T00:00:00Z"}, "1.2.3 (commit abc, built 2026-12-08T00:00:00Z)"},
		{"go install …@v1.2.3: the module's version, no VCS", Info{},
			&debug.BuildInfo{Main: debug.Module{Version: "v1.2.3"}},
			Info{Version: "v1.2.3"}, "v1.2.3"},
		{"go build in a clone: a pseudo-version and the commit", Info{},
			&debug.BuildInfo{Main: debug.Module{Version: "v0.0.0-20261207100000-0a1b2c3d4e5f"}, Settings: vcs},
			Info{"v0.0.0-20261207100000-0a1b2c3d4e5f", "0a1b2c3d4e5f60718293a4b5c6d7e8f901234567", "2026-12-07T10:00:00Z"},
			"v0.0.0-20261207100000-0a1b2c3d4e5f (commit 0a1b2c3d4e5f, built 2026-12-07T10:00:00Z)"},
		{"a clone with changes", Info{},
			&debug.BuildInfo{Main: debug.Module{Version: "(devel)"}, Settings: append(vcs[:2:2], debug.BuildSetting{Key: "vcs.modified", Value: "true"})},
			Info{"dev", "0a1b2c3d4e5f60718293a4b5c6d7e8f901234567+dirty", "2026-12-07T10:00:00Z"},
			"dev (commit 0a1b2c3d4e5f60718293a4b5c6d7e8f901234567+dirty, built 2026-12-07T10:00:00Z)"},
		{"no build info (go run of a test)", Info{}, nil, Info{Version: "dev"}, "dev"},
	} {
		got := resolve(tt.stamped, tt.bi)
		if got != tt.want || got.String() != tt.line {
			t.Errorf("%s: %+v %q, want %+v %q", tt.name, got, got.String(), tt.want, tt.line)
		}
	}
}
