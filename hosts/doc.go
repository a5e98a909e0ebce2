// Package hosts joins agentmsg's daemons on many machines through NATS
// JetStream. Each host is a daemon with a name; a message to an agent on
// another host is published once to that host's stream and delivered there
// by the host's own engine, so every rule of one host holds on each.
//
// The parts, and why each is so:
//
//   - The outbox. A packet this host sends (a message, or a state change
//     of a message another host sent) goes straight to the bus when
//     nothing for its host waits in the outbox and the bus takes it at
//     once; otherwise it is written to the outbox, a stream of the
//     embedded, in-process NATS server (see Embedded), whose store is on
//     this machine's disk. A host whose link is down keeps accepting sends
//     to other hosts: they wait there and go out when it is back, and a
//     later send to the same host goes behind them, never around.
//   - The forwarder moves the outbox, in order, to the bus: the cluster the
//     configuration names, or, alone, the embedded server itself. Each
//     packet is published with its id as Nats-Msg-Id, so a publish retried
//     after a lost answer is never a second message; only the stream's
//     acknowledgement lets it go from the outbox.
//   - Every host has one stream on the bus, AGENTMSG_<HOST>, holding what
//     is sent to it, on subjects agentmsg.<kind>.<to>.<from>. A host's
//     user may publish only subjects that end in its own name, so the
//     subject proves the sending host (see Permissions), and it may read
//     only its own stream. It may make or change no stream, consumer or
//     bucket: a stream's configuration alone can copy others' mail in or
//     publish on others' subjects. The operator's user makes them
//     (Provision), and a link refuses a stream of its own that is
//     configured otherwise (unsafe).
//   - A report (a state change of a message) counts only from the host the
//     copy was sent to, of a copy recorded as sent (RecordSent before the
//     packet goes; RecordReport, Watch). A packet's Nats-Msg-Id carries
//     random bits, so no other host can have it dropped as a copy.
//   - The record keeps its message's packet (and those random bits) until
//     a report comes: a daemon killed between recording a copy and handing
//     its packet over sends it when its link opens again within the hour
//     (the bus's memory of ids), ahead of every new send (sendCutOff); one
//     that did go has the same Nats-Msg-Id, and the bus, or the receiving
//     daemon's inbox, takes it once.
//   - The reader reads the host's stream by sequence, a batch at a time
//     (order per sender and recipient is the stream's order), hands it to
//     the daemon, and purges it from the stream only once the daemon has
//     recorded it durably: the stream's first sequence is the cursor. A
//     packet read twice (a crash before the purge) is recorded once: the
//     daemon's record is idempotent by message id. A plain subscription on
//     the host's subjects is its doorbell, and tells a state change to the
//     send waiting for it the moment it is published.
//   - Presence: each host puts its name, agents and the time into a
//     key-value bucket every few seconds, and publishes a heartbeat that
//     every host hears (beats.go): whether a host is up is what this host
//     heard of it, not a read of the bucket that a cluster electing a
//     leader answers late; `agentmsg hosts` reads both.
package hosts
