// Package shell quotes words for a POSIX shell, for the command lines
// agentmsg prints for a person or writes into another program's settings.
package shell

import "strings"

// Quote quotes s for a POSIX shell: as it is when it holds only characters
// no shell reads specially, else in single quotes.
func Quote(s string) string {
	if s != "" && strings.Trim(s, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789/._-+%=") == "" {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}
