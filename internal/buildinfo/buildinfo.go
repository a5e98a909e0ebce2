// Package buildinfo says which agentmsg this binary is: the version, the
// commit and the date a release build stamped into it (-ldflags -X, see
// .goreleaser.yaml), else what Go recorded when it built it: the module's
// version for go install github.com/agentmsg/agentmsg@v1.2.3, the commit
// and its time for a build in a clone.
package buildinfo

import (
	"runtime/debug"
	"strings"
)

// Stamped by a release build: -X github.com/agentmsg/agentmsg/internal/buildinfo.version=1.2.3
// (and .commit, .date).
var (
	version string
	commit  string
	date    string
)

// Info is which agentmsg this is.
type Info struct {
	Version string `json:"version"`          // "1.2.3", "v1.2.3", a pseudo-version, or "dev"
	Commit  string `json:"commit,omitempty"` // the commit it was built from, when known
	Date    string `json:"date,omitempty"`   // when (RFC 3339): the release's build, or the commit's time
}

// Get is this binary's Info.
func Get() Info {
	bi, _ := debug.ReadBuildInfo()
	return resolve(Info{Version: version, Commit: commit, Date: date}, bi)
}

// resolve takes what a release stamped; what it left empty comes from the
// build info: the main module's version (set by go install …@version, and
// by go build in a clone from its tag or as a pseudo-version), vcs.revision
// and vcs.time, "+dirty" for a tree with changes not committed.
func resolve(stamped Info, bi *debug.BuildInfo) Info {
	in := stamped
	if bi == nil {
		if in.Version == "" {
			in.Version = "dev"
		}
		return in
	}
	if in.Version == "" {
		if v := bi.Main.Version; v != "" && v != "(devel)" {
			in.Version = v
		}
	}
	var revision, at string
	modified := false
	for _, s := range bi.Settings {
		switch s.Key {
		case "vcs.revision":
			revision = s.Value
		case "vcs.time":
			at = s.Value
		case "vcs.modified":
			modified = s.Value == "true"
		}
	}
	if in.Commit == "" && revision != "" {
		in.Commit = revision
		if modified {
			in.Commit += "+dirty"
		}
	}
	if in.Date == "" {
		in.Date = at
	}
	if in.Version == "" {
		in.Version = "dev"
	}
	return in
}

// String is the one line --version prints: "1.2.3 (commit 0a1b2c3d4e5f,
// built 2026-12-07T10:00:00Z)".
func (in Info) String() string {
	var more []string
	if in.Commit != "" {
		c := in.Commit
		if len(c) > 12 && !strings.HasSuffix(c, "+dirty") {
			c = c[:12]
		}
		more = append(more, "commit "+c)
	}
	if in.Date != "" {
		more = append(more, "built "+in.Date)
	}
	if len(more) == 0 {
		return in.Version
	}
	return in.Version + " (" + strings.Join(more, ", ") + ")"
}
