package shell

import "testing"

func TestQuote(t *testing.T) {
	for in, want := range map[string]string{
		"/tmp/am1/sock": "/tmp/am1/sock",
		"":              "''",
		"it's here":     `'it'\''s here'`,
		"a;rm -rf ~":    "'a;rm -rf ~'",
		"$HOME":         "'$HOME'",
	} {
		if got := Quote(in); got != want {
			t.Errorf("Quote(%q) = %s, want %s", in, got, want)
		}
	}
}
