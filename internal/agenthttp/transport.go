package agenthttp

import (
	"net/http"
	"time"
)

// DefaultIdleConns is how many idle connections to the agent service are
// kept for reuse unless Upstream.IdleConns says otherwise.
const DefaultIdleConns = 1024

// DefaultH2CConns and DefaultMaxConns bound the connections to an h2c
// service and to any other unless Upstream.MaxConns says otherwise.
const (
	DefaultH2CConns = 64
	DefaultMaxConns = 1024
)

// Upstream shapes the transport to the agent service.
//
// Every capture makes a few calls upstream, one after the other, and
// streams for as long as the agent works. Over HTTP/1.1 each stream holds
// a connection, so the idle pool must be about as large as the number of
// captures in flight, or most calls open a new connection (against Azure,
// a TLS handshake each). Over HTTP/2 thousands of streams share a few
// connections: the transport negotiates it with TLS endpoints that offer
// it (Azure's do), and speaks it without TLS when H2C is set.
type Upstream struct {
	// H2C speaks HTTP/2 without TLS (prior knowledge) to http://
	// endpoints: only for a service known to accept it, such as
	// brainwire's simulator. https:// endpoints negotiate HTTP/2 either
	// way.
	H2C bool
	// IdleConns bounds the idle connections kept for reuse
	// (DefaultIdleConns when 0).
	IdleConns int
	// MaxConns bounds the connections being dialled or pooled at once (0:
	// DefaultH2CConns with H2C, else DefaultMaxConns; below 0, no bound).
	//
	// Over HTTP/2 it bounds how many are dialled at once when no
	// connection has a stream free: a connection that fills up leaves the
	// count, so thousands of streams still get the connections they need,
	// a few at a time. Without it, every call that finds none free dials
	// one of its own while the first is still being set up, and nearly
	// all are closed again as soon as they are up: a cold server hit by
	// 10,000 captures dialled 7,223 connections, 1,400 open at once
	// (against Azure, a TLS handshake each), and at times more than the
	// process could open: 419 of such 10,000 captures failed. Over
	// HTTP/1.1, where a call holds its connection, it bounds the calls in
	// flight: the rest wait for a connection.
	MaxConns int
}

// Transport returns the transport: pooled connections (HTTP/2 where the
// service offers it), bounded connection set-up and time to the first
// response byte, and no overall timeout (runs stream for as long as the
// run timeout allows). A dead HTTP/2 connection, which would stall every
// stream on it, is found by pings when it goes quiet.
func (u Upstream) Transport() *http.Transport {
	t := http.DefaultTransport.(*http.Transport).Clone()
	t.ResponseHeaderTimeout = 30 * time.Second
	idle := u.IdleConns
	if idle <= 0 {
		idle = DefaultIdleConns
	}
	t.MaxIdleConns, t.MaxIdleConnsPerHost = idle, idle
	t.MaxConnsPerHost = u.maxConns()
	t.Protocols = new(http.Protocols)
	t.Protocols.SetHTTP2(true)
	if u.H2C {
		// Without HTTP/1 in the set, http:// URLs go over h2c.
		t.Protocols.SetUnencryptedHTTP2(true)
	} else {
		t.Protocols.SetHTTP1(true)
	}
	t.HTTP2 = &http.HTTP2Config{
		SendPingTimeout: 15 * time.Second,
		PingTimeout:     15 * time.Second,
	}
	return t
}

// maxConns is MaxConns with its default applied: 0 means no bound.
func (u Upstream) maxConns() int {
	switch {
	case u.MaxConns > 0:
		return u.MaxConns
	case u.MaxConns < 0:
		return 0
	case u.H2C:
		return DefaultH2CConns
	}
	return DefaultMaxConns
}

// NewTransport returns the default transport to the agent service
// (Upstream{}.Transport()).
func NewTransport() *http.Transport { return Upstream{}.Transport() }
