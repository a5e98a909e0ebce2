package hosts

import (
	"fmt"
	"strings"

	"github.com/nats-io/nkeys"
)

// Permissions are what host name's NATS user may do on the bus, and no
// more: publish its own packets (subjects that end in its name, so that
// the subject proves the sender), run and read its own stream and its
// presence entry, read the presence of others, hear what is published to
// it (the doorbell) and receive answers on its own inbox prefix. It can
// neither read another host's stream or packets nor send as another host.
func Permissions(name string) (publish, subscribe []string) {
	stream, kv := streamName(name), "KV_"+presenceBucket
	publish = []string{
		subject("*", "*", name),
		"$JS.API.INFO",
		"$JS.API.STREAM.CREATE." + stream,
		"$JS.API.STREAM.UPDATE." + stream,
		"$JS.API.STREAM.INFO." + stream,
		"$JS.API.STREAM.MSG.GET." + stream,
		"$JS.API.STREAM.PURGE." + stream,
		// Presence: its own entry, and reading everyone's.
		"$JS.API.STREAM.CREATE." + kv,
		"$JS.API.STREAM.INFO." + kv,
		"$KV." + presenceBucket + "." + name,
		"$JS.API.DIRECT.GET." + kv + ".>",
	}
	subscribe = []string{inboxPrefix(name) + ".>", subject("*", name, "*")}
	return publish, subscribe
}

// inboxPrefix is where host name's answers come (nats.CustomInboxPrefix).
func inboxPrefix(name string) string { return "_INBOX_" + name }

// NewUser makes a NATS user key pair for a host: the seed it connects
// with (its nkey_file) and the public key the bus knows it by.
func NewUser() (seed []byte, public string, err error) {
	kp, err := nkeys.CreateUser()
	if err != nil {
		return nil, "", err
	}
	if seed, err = kp.Seed(); err != nil {
		return nil, "", err
	}
	public, err = kp.PublicKey()
	return seed, public, err
}

// UserConfig is host name's entry in a nats-server configuration's
// authorization users, for its public key.
func UserConfig(name, public string) string {
	pub, sub := Permissions(name)
	quote := func(list []string) string {
		q := make([]string, len(list))
		for i, s := range list {
			q[i] = fmt.Sprintf("%q", s)
		}
		return strings.Join(q, ", ")
	}
	return fmt.Sprintf("# agentmsg host %s\n{ nkey: %q, permissions: { publish: { allow: [%s] }, subscribe: { allow: [%s] } } }\n",
		name, public, quote(pub), quote(sub))
}
