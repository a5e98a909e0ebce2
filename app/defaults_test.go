package app

import (
	"testing"

	"github.com/agentmsg/agentmsg/config"
	"github.com/agentmsg/agentmsg/delivery"
)

// A delivery's default timing is written twice, since config imports no
// engine package: the config file's defaults and delivery's own
// (delivery.DefaultOptions, for callers without a config file). They are
// the same.
func TestConfigDefaultsAreDeliverysDefaults(t *testing.T) {
	s, d := config.Defaults(), delivery.DefaultOptions()
	for _, c := range []struct {
		what      string
		got, want any
	}{
		{"ready timeout", s.ReadyTimeout, d.ReadyTimeout},
		{"confirm timeout", s.ConfirmTimeout, d.ConfirmTimeout},
		{"retries", s.Retries, d.Retries},
		{"settle", s.Settle, d.Settle},
		{"repress", s.Repress, d.Repress},
		{"poll", s.Poll, d.Poll},
	} {
		if c.got != c.want {
			t.Errorf("%s: config's default %v, delivery's %v", c.what, c.got, c.want)
		}
	}
}
