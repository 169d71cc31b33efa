package app

import (
	"net/http"
	"time"
)

// DefaultIdleConns is how many idle connections to the agent service are
// kept for reuse unless Upstream.IdleConns says otherwise.
const DefaultIdleConns = 1024

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

// NewTransport returns the default transport to the agent service
// (Upstream{}.Transport()).
func NewTransport() *http.Transport { return Upstream{}.Transport() }
