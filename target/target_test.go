package target

import (
	"errors"
	"strings"
	"testing"
)

func TestNew(t *testing.T) {
	tests := []struct {
		team, name string
		want       Target
		wantErr    string
	}{
		{team: "alpha", name: "ana", want: Target{Team: "alpha", Name: "ana", Session: "agent-alpha-ana"}},
		{team: "alpha", name: "ana-2", want: Target{Team: "alpha", Name: "ana", Instance: "2", Session: "agent-alpha-ana-2"}},
		{team: "a_1", name: "b_2-x9", want: Target{Team: "a_1", Name: "b_2", Instance: "x9", Session: "agent-a_1-b_2-x9"}},
		{team: "alpha", name: "ralph-7", want: Target{Name: "ralph", Instance: "7", Session: "agent-ralph-7"}},
		{team: "", name: "ralph-abc_1", want: Target{Name: "ralph", Instance: "abc_1", Session: "agent-ralph-abc_1"}},

		{team: "Alpha", name: "ana", wantErr: `invalid team "Alpha": must match`},
		{team: "", name: "ana", wantErr: `invalid team "": must not be empty`},
		{team: "ralph", name: "ana", wantErr: `"ralph" is reserved`},
		{team: "al.pha", name: "ana", wantErr: `invalid team "al.pha"`},
		{team: "alpha", name: "", wantErr: `invalid agent name "": must not be empty`},
		{team: "alpha", name: "Ana", wantErr: `invalid agent name "Ana"`},
		{team: "alpha", name: "1ana", wantErr: `invalid agent name "1ana"`},
		{team: "alpha", name: "ana;", wantErr: `invalid agent name "ana;"`},
		{team: "alpha", name: "ana-", wantErr: `invalid instance "ana-": must not be empty`},
		{team: "alpha", name: "ana-2-3", wantErr: `invalid instance "ana-2-3"`},
		{team: "alpha", name: "ana-B", wantErr: `invalid instance "ana-B"`},
		{team: "alpha", name: "-ana", wantErr: `invalid agent name "-ana": must not be empty`},
		{team: "alpha", name: "ralph-", wantErr: `invalid ralph id "": must not be empty`},
		{team: "alpha", name: "ralph-a-b", wantErr: `invalid ralph id "a-b"`},
		{team: "alpha", name: strings.Repeat("a", 65), wantErr: "at most 64"},
	}
	for _, tt := range tests {
		t.Run(tt.team+"/"+tt.name, func(t *testing.T) {
			got, err := New(tt.team, tt.name)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("New(%q, %q) error = %v, want it to contain %q", tt.team, tt.name, err, tt.wantErr)
				}
				if !errors.Is(err, ErrInvalid) {
					t.Errorf("error %v does not wrap ErrInvalid", err)
				}
				return
			}
			if err != nil {
				t.Fatalf("New(%q, %q): %v", tt.team, tt.name, err)
			}
			if got != tt.want {
				t.Errorf("New(%q, %q) = %+v, want %+v", tt.team, tt.name, got, tt.want)
			}
		})
	}
}

func TestFromSession(t *testing.T) {
	tests := []struct {
		session string
		want    Target
		ok      bool
	}{
		{"agent-alpha-ana", Target{Team: "alpha", Name: "ana", Session: "agent-alpha-ana"}, true},
		{"agent-alpha-ana-2", Target{Team: "alpha", Name: "ana", Instance: "2", Session: "agent-alpha-ana-2"}, true},
		{"agent-ralph-7", Target{Name: "ralph", Instance: "7", Session: "agent-ralph-7"}, true},
		{"agent-ralph-7-1", Target{}, false},
		{"agent-alpha", Target{}, false},
		{"agent-", Target{}, false},
		{"agent-Weird_Name", Target{}, false},
		{"agent-alpha-ana-2-3", Target{}, false},
		{"scratch", Target{}, false},
		{"0", Target{}, false},
		{"xagent-alpha-ana", Target{}, false},
	}
	for _, tt := range tests {
		got, ok := FromSession(tt.session)
		if ok != tt.ok || got != tt.want {
			t.Errorf("FromSession(%q) = %+v, %v; want %+v, %v", tt.session, got, ok, tt.want, tt.ok)
		}
	}
}

func TestStringAndAgent(t *testing.T) {
	for _, tt := range []struct{ team, name, str string }{
		{"alpha", "ana", "alpha/ana"},
		{"alpha", "ana-2", "alpha/ana-2"},
		{"alpha", "ralph-7", "ralph-7"},
	} {
		tg, err := New(tt.team, tt.name)
		if err != nil {
			t.Fatal(err)
		}
		if tg.String() != tt.str || tg.Agent() != tt.name {
			t.Errorf("New(%q,%q): String()=%q Agent()=%q", tt.team, tt.name, tg.String(), tg.Agent())
		}
	}
}

// FuzzNew checks that resolution is exact: whatever New accepts maps to a
// session that parses back to the same target, and nothing panics.
func FuzzNew(f *testing.F) {
	for _, s := range [][2]string{{"alpha", "ana"}, {"alpha", "ana-2"}, {"x", "ralph-1"}, {"a-b", "c"}, {"a", "b-c-d"}} {
		f.Add(s[0], s[1])
	}
	f.Fuzz(func(t *testing.T, team, name string) {
		tg, err := New(team, name)
		if err != nil {
			if !errors.Is(err, ErrInvalid) {
				t.Fatalf("New(%q,%q) returned a foreign error %v", team, name, err)
			}
			return
		}
		back, ok := FromSession(tg.Session)
		if !ok || back != tg {
			t.Fatalf("New(%q,%q) = %+v, but FromSession(%q) = %+v, %v", team, name, tg, tg.Session, back, ok)
		}
		if strings.ContainsAny(tg.Session, ".:; \t\n#{}") {
			t.Fatalf("session %q holds a character tmux would rewrite or parse", tg.Session)
		}
	})
}

func TestParseName(t *testing.T) {
	for in, want := range map[string]string{"ana": "ana", "ROOT": "root", "ana-2": "ana-2", "Lead_1": "lead_1",
		"ralph-7": "ralph-7", "demo-lead": "demo-lead"} {
		if got, err := ParseName(in); err != nil || got != want {
			t.Errorf("ParseName(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
	for _, in := range []string{"", "Bad Name", "j.doe", "ana;rm", "-ana", "ana-", "ana-2-3", "2ana", "ana-b_c",
		"é", "a\x1b[2J", strings.Repeat("a", 65)} {
		if got, err := ParseName(in); !errors.Is(err, ErrInvalid) {
			t.Errorf("ParseName(%q) = %q, %v; want ErrInvalid", in, got, err)
		}
	}
}
