package hosts

import (
	"fmt"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
)

// startTimeout bounds how long an embedded server may take to open its
// JetStream store; a store on a slow disk replays its files first.
const startTimeout = 30 * time.Second

// Embedded is a NATS server with JetStream running inside this process and
// reached only in process: one machine needs nothing installed and opens no
// port.
type Embedded struct {
	server *server.Server
}

// StartEmbedded starts the in-process server, keeping its streams under dir.
func StartEmbedded(dir string) (*Embedded, error) {
	srv, err := server.NewServer(&server.Options{
		ServerName: "agentmsg",
		JetStream:  true,
		StoreDir:   dir,
		DontListen: true,
		NoSigs:     true,
		NoLog:      true,
		// A packet the outbox acknowledged survives a power cut, as an
		// inbox line does (the mailbox fsyncs each message).
		SyncAlways: true,
	})
	if err != nil {
		return nil, fmt.Errorf("embedded NATS server: %w", err)
	}
	go srv.Start()
	if !srv.ReadyForConnections(startTimeout) {
		srv.Shutdown()
		return nil, fmt.Errorf("embedded NATS server under %s: not ready after %s", dir, startTimeout)
	}
	return &Embedded{server: srv}, nil
}

// Connect opens a client connection to the embedded server, in process.
func (e *Embedded) Connect(name string) (*nats.Conn, error) {
	return nats.Connect("", nats.Name(name), nats.InProcessServer(e.server))
}

// Close stops the server and waits until its store is closed.
func (e *Embedded) Close() {
	e.server.Shutdown()
	e.server.WaitForShutdown()
}
