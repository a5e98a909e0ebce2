package cmd

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentmsg/agentmsg/alerts"
)

// alertsConfig is a config home whose [alerts] table holds body.
func alertsConfig(t *testing.T, body string) map[string]string {
	t.Helper()
	dir := t.TempDir()
	if err := os.MkdirAll(filepath.Join(dir, "agentmsg"), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "agentmsg", "config.toml"), []byte("[alerts]\n"+body), 0o600); err != nil {
		t.Fatal(err)
	}
	return map[string]string{"XDG_CONFIG_HOME": dir}
}

// alerts test fires one test alert at the webhook; without a command or
// a webhook it fails, naming the config file.
func TestAlertsTest(t *testing.T) {
	posted := make(chan alerts.Alert, 1)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		var a alerts.Alert
		if err := json.Unmarshal(b, &a); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		posted <- a
	}))
	defer srv.Close()
	f, out, errOut := testFactory(alertsConfig(t, "webhook = \""+srv.URL+"\"\n"))
	if code := Run(context.Background(), f, []string{"alerts", "test"}); code != ExitOK {
		t.Fatalf("exit %d\n%s%s", code, out, errOut)
	}
	if a := <-posted; a.Event != alerts.Test || a.Text == "" {
		t.Errorf("posted %+v", a)
	}
	if !strings.Contains(out.String(), "✓ the webhook took it: "+srv.URL) {
		t.Errorf("stdout %q", out)
	}

	env := alertsConfig(t, "dialog = \"5m\"\n")
	f, out, errOut = testFactory(env)
	if code := Run(context.Background(), f, []string{"alerts", "test"}); code != ExitError ||
		!strings.Contains(errOut.String(), "no alert command or webhook is configured") || !strings.Contains(errOut.String(), env["XDG_CONFIG_HOME"]) {
		t.Errorf("without a target: exit %d\n%s%s", code, out, errOut)
	}
	f, out, errOut = testFactory(alertsConfig(t, "command = \"exit 4\"\n"))
	if code := Run(context.Background(), f, []string{"alerts", "test"}); code != ExitError || !strings.Contains(errOut.String(), `alert command: "exit 4": exit status 4`) {
		t.Errorf("a failing command: exit %d\n%s%s", code, out, errOut)
	}
}
