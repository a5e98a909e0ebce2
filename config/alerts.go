package config

import (
	"net/url"
	"slices"
	"strings"
	"time"
	"unicode"

	"github.com/BurntSushi/toml"
)

// AlertSettings is the [alerts] table: when a person is told that
// something is stuck, and how. A threshold of 0 turns its alert off.
type AlertSettings struct {
	MessageWait time.Duration // a message has waited longer than this for its agent
	Dialog      time.Duration // an agent has sat in a dialog longer than this
	Draft       time.Duration // an agent has held a person's draft longer than this
	// Verdicts are the delivery endings that alert at once: "typed"
	// (left in the box) and "unknown" (nothing shows whether it arrived).
	Verdicts []string
	Command  string // run by /bin/sh -c for each alert, the alert as JSON on stdin
	Webhook  string // an http(s) URL each alert is POSTed to as JSON
}

// DefaultAlerts are the thresholds without an [alerts] table: agentmsg top
// shows these alerts; nothing runs or is posted until command or webhook
// is set.
func DefaultAlerts() AlertSettings {
	return AlertSettings{MessageWait: 10 * time.Minute, Dialog: 10 * time.Minute, Draft: 30 * time.Minute,
		Verdicts: slices.Clone(AlertVerdicts)}
}

// AlertVerdicts are the delivery endings an alert can be for.
var AlertVerdicts = []string{"typed", "unknown"}

// Bounds of an alert threshold other than 0 (off): a shorter one would
// alert on ordinary waits (a deliver pass waits 1s per agent, a send up to
// ready_timeout), and a condition a day old has long been seen.
const (
	minAlertAfter = 10 * time.Second
	maxAlertAfter = 24 * time.Hour
)

// alertsFile is the [alerts] table as written.
type alertsFile struct {
	MessageWait *string   `toml:"message_wait"`
	Dialog      *string   `toml:"dialog"`
	Draft       *string   `toml:"draft"`
	Verdicts    *[]string `toml:"verdicts"`
	Command     string    `toml:"command"`
	Webhook     string    `toml:"webhook"`
}

const alertKeys = "message_wait, dialog, draft, verdicts, command, webhook"

func (l *Loaded) loadAlerts(md toml.MetaData, prim toml.Primitive, path string) error {
	var f alertsFile
	if err := md.PrimitiveDecode(prim, &f); err != nil {
		return invalidf("%s: [alerts]: %v (known keys: %s)", path, err, alertKeys)
	}
	for _, k := range md.Undecoded() {
		if len(k) > 0 && k[0] == "alerts" {
			return invalidf("%s: unknown key %q in [alerts]; known: %s", path, k.String(), alertKeys)
		}
	}
	a := DefaultAlerts()
	for _, d := range []struct {
		key  string
		raw  *string
		into *time.Duration
	}{{"message_wait", f.MessageWait, &a.MessageWait}, {"dialog", f.Dialog, &a.Dialog}, {"draft", f.Draft, &a.Draft}} {
		if d.raw == nil {
			continue
		}
		v, err := time.ParseDuration(strings.TrimSpace(*d.raw))
		if err != nil || v != 0 && (v < minAlertAfter || v > maxAlertAfter) {
			return invalidf("%s: [alerts] %s = %q: want \"0\" (off) or a duration from %s to %s, such as \"10m\"", path, d.key, *d.raw, short(minAlertAfter), short(maxAlertAfter))
		}
		*d.into = v
	}
	if f.Verdicts != nil {
		for _, v := range *f.Verdicts {
			if !slices.Contains(AlertVerdicts, v) {
				return invalidf("%s: [alerts] verdicts: %q is none of %s", path, v, strings.Join(AlertVerdicts, ", "))
			}
		}
		a.Verdicts = *f.Verdicts
	}
	if strings.ContainsFunc(f.Command, func(r rune) bool { return unicode.IsControl(r) && r != '\t' }) {
		return invalidf("%s: [alerts] command: want one line of shell", path)
	}
	a.Command = strings.TrimSpace(f.Command)
	if f.Webhook != "" {
		u, err := url.Parse(f.Webhook)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			return invalidf("%s: [alerts] webhook = %q: want an http:// or https:// URL", path, f.Webhook)
		}
	}
	a.Webhook = f.Webhook
	l.Alerts = a
	return nil
}
