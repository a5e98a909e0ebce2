package target

import (
	"errors"
	"fmt"
	"regexp"
)

// ErrHostName: a host name agentmsg cannot use on the bus.
var ErrHostName = errors.New("invalid host name")

// validHost is a host name (send --host NAME): it is a part of NATS
// subjects and stream names, so it has no dots, wildcards or spaces.
var validHost = regexp.MustCompile(`^[a-z0-9][a-z0-9_-]{0,62}$`)

// CheckHost refuses a name that cannot be a host's.
func CheckHost(name string) error {
	if !validHost.MatchString(name) {
		return fmt.Errorf("%w %q: want lower-case letters, digits, '-' and '_', up to 63, such as \"laptop\" or \"build-1\"", ErrHostName, name)
	}
	return nil
}
