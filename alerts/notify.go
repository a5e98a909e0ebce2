package alerts

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"time"
)

// Notifier tells the world of an alert: it runs Command and POSTs to
// Webhook, each when set.
type Notifier struct {
	// Command runs by /bin/sh -c with the alert as JSON on stdin and its
	// fields in the environment: AGENTMSG_ALERT_EVENT, _TEAM, _AGENT,
	// _MESSAGE_ID, _REASON and _TEXT (one line for a person).
	Command string
	// Webhook is an http(s) URL the alert is POSTed to as JSON.
	Webhook string
	// Env is the command's environment before the alert's variables;
	// nil is the process's.
	Env []string
	// Timeout bounds each notification; 0 is DefaultTimeout.
	Timeout time.Duration
	// Client posts to the webhook; nil is http.DefaultClient's transport
	// within Timeout.
	Client *http.Client
}

// DefaultTimeout bounds a command or a webhook: a notification that hangs
// must not hold the ones after it.
const DefaultTimeout = 10 * time.Second

// Enabled reports whether the notifier tells anyone.
func (n Notifier) Enabled() bool { return n.Command != "" || n.Webhook != "" }

// Notify runs the command and posts to the webhook, each within the
// timeout, and returns what failed of them.
func (n Notifier) Notify(ctx context.Context, a Alert) error {
	body, err := json.Marshal(a)
	if err != nil {
		return err
	}
	timeout := n.Timeout
	if timeout <= 0 {
		timeout = DefaultTimeout
	}
	var errs []error
	if n.Command != "" {
		if err := n.run(ctx, timeout, a, body); err != nil {
			errs = append(errs, fmt.Errorf("alert command: %w", err))
		}
	}
	if n.Webhook != "" {
		if err := n.post(ctx, timeout, body); err != nil {
			errs = append(errs, fmt.Errorf("alert webhook: %w", err))
		}
	}
	return errors.Join(errs...)
}

// run runs the command in a process group of its own, killed whole when
// the timeout passes: what it started must not outlive it.
func (n Notifier) run(ctx context.Context, timeout time.Duration, a Alert, body []byte) error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, "/bin/sh", "-c", n.Command)
	env := n.Env
	if env == nil {
		env = os.Environ()
	}
	cmd.Env = append(env,
		"AGENTMSG_ALERT_EVENT="+string(a.Event),
		"AGENTMSG_ALERT_TEAM="+a.Team,
		"AGENTMSG_ALERT_AGENT="+a.Agent,
		"AGENTMSG_ALERT_MESSAGE_ID="+a.MessageID,
		"AGENTMSG_ALERT_REASON="+a.Reason,
		"AGENTMSG_ALERT_TEXT="+a.Text)
	cmd.Stdin = bytes.NewReader(append(body, '\n'))
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	cmd.WaitDelay = time.Second
	if err := cmd.Run(); err != nil {
		if ctx.Err() != nil {
			return fmt.Errorf("%q did not finish within %s", n.Command, timeout)
		}
		return fmt.Errorf("%q: %w%s", n.Command, err, said(out.Bytes()))
	}
	return nil
}

// post POSTs the alert; any status but 2xx is a failure.
func (n Notifier) post(ctx context.Context, timeout time.Duration, body []byte) error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, n.Webhook, bytes.NewReader(body))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("User-Agent", "agentmsg-alerts")
	client := n.Client
	if client == nil {
		client = http.DefaultClient
	}
	resp, err := client.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	answer, _ := io.ReadAll(io.LimitReader(resp.Body, 512))
	if resp.StatusCode/100 != 2 {
		return fmt.Errorf("%s answered %s%s", n.Webhook, resp.Status, said(answer))
	}
	return nil
}

// said quotes the first line of what a command or a server said, if
// anything.
func said(b []byte) string {
	line, _, _ := strings.Cut(strings.TrimSpace(string(b)), "\n")
	if line == "" {
		return ""
	}
	if len(line) > 200 {
		line = line[:200] + "…"
	}
	return fmt.Sprintf(": %q", line)
}
