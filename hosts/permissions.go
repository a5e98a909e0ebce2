package hosts

import (
	"fmt"
	"strings"

	"github.com/nats-io/nkeys"
)

// Permissions are what host name's NATS user may do on the bus, and no
// more: publish its own packets (subjects that end in its name, so that
// the subject proves the sender) and heartbeats, read and clear its own
// stream, put its own presence entry and read everyone's, hear what is
// published to it (the doorbell) and everyone's heartbeats, and receive
// answers on its own inbox prefix.
//
// It may not make or change any stream, consumer or bucket: a stream's
// configuration is enough to read others' mail (sources, mirror: the
// server copies another stream in), to speak for another host (republish:
// the server publishes on any subject), and to keep a host out for good
// (a stream that takes its subjects before it joins). The operator makes
// every host's stream and the presence bucket (Provision, through the
// user AdminPermissions describes), before the host joins.
func Permissions(name string) (publish, subscribe []string) {
	stream, kv := streamName(name), "KV_"+presenceBucket
	publish = []string{
		subject("*", "*", name),
		beatSubject(name),
		"$JS.API.STREAM.INFO." + stream,
		"$JS.API.STREAM.MSG.GET." + stream,
		"$JS.API.STREAM.PURGE." + stream,
		// Presence: its own entry, and reading everyone's.
		"$JS.API.STREAM.INFO." + kv,
		"$KV." + presenceBucket + "." + name,
		"$JS.API.DIRECT.GET." + kv + ".>",
	}
	subscribe = []string{inboxPrefix(name) + ".>", subject("*", name, "*"), beatSubject("*")}
	return publish, subscribe
}

// AdminPermissions are what the operator's NATS user may do: make, look
// at, change and remove streams (the hosts' and the presence bucket's; a
// stream name is one token of the subject, and NATS has no wildcard for
// its prefix), and nothing else: it neither publishes nor reads packets.
// Its key stays with the operator (agentmsg hosts init writes it; hosts
// add uses it); whoever holds it is trusted as the NATS configuration is.
func AdminPermissions() (publish, subscribe []string) {
	var pub []string
	for _, api := range []string{"CREATE", "UPDATE", "INFO", "DELETE"} {
		pub = append(pub, "$JS.API.STREAM."+api+".*")
	}
	pub = append(pub, "$JS.API.INFO")
	return pub, []string{adminInbox + ".>"}
}

// inboxPrefix is where host name's answers come (nats.CustomInboxPrefix).
func inboxPrefix(name string) string { return "_INBOX_" + name }

// adminInbox is where the operator's answers come: no host's, since a host
// name cannot begin with '_'.
const adminInbox = "_INBOX__agentmsg_admin"

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
	return userEntry("agentmsg host "+name, public, pub, sub)
}

// AdminConfig is the operator's entry in a nats-server configuration's
// authorization users, for its public key.
func AdminConfig(public string) string {
	pub, sub := AdminPermissions()
	return userEntry("agentmsg operator: makes the hosts' streams (agentmsg hosts add)", public, pub, sub)
}

func userEntry(comment, public string, pub, sub []string) string {
	quote := func(list []string) string {
		q := make([]string, len(list))
		for i, s := range list {
			q[i] = fmt.Sprintf("%q", s)
		}
		return strings.Join(q, ", ")
	}
	return fmt.Sprintf("# %s\n{ nkey: %q, permissions: { publish: { allow: [%s] }, subscribe: { allow: [%s] } } }\n",
		comment, public, quote(pub), quote(sub))
}
