package simulator

import (
	"net"
	"net/http"
	"sync/atomic"
)

// StatsPath answers GET with the simulator's traffic counts as JSON
// (Stats), so that a load test can tell how many connections its client
// opened. No authentication: the simulator serves loopback.
const StatsPath = "/simulator/stats"

// Stats are the simulator's traffic counts since it started.
type Stats struct {
	// Connections is how many connections Serve accepted.
	Connections int64 `json:"connections"`
	// Requests is how many requests were served, HTTP2Requests how many
	// of them came over HTTP/2 (h2c on a plain listener).
	Requests      int64 `json:"requests"`
	HTTP2Requests int64 `json:"http2_requests"`
	// PacedLate counts the paced frames (reasoning and text chunks) by
	// how late each was ready to write against its stream's schedule:
	// the latency the simulator's own load adds, which a load test on
	// the same machine must not count as its client's.
	PacedLate LateCounts `json:"paced_late"`
	// Refused counts the calls refused under #refuse, by status ("429").
	Refused map[string]int64 `json:"refused,omitempty"`
}

// LateCounts is a histogram of lateness: Counts[i] frames were at most
// BoundsMs[i] milliseconds late (and more than BoundsMs[i-1]); the last
// count, which has no bound, holds the later ones.
type LateCounts struct {
	BoundsMs []float64 `json:"bounds_ms"`
	Counts   []int64   `json:"counts"`
}

// traffic counts what the simulator served.
type traffic struct {
	conns, requests, h2 atomic.Int64
	late                lateCounts
}

// Stats returns the traffic counts so far.
func (s *Simulator) Stats() Stats {
	return Stats{
		Connections: s.traffic.conns.Load(), Requests: s.traffic.requests.Load(), HTTP2Requests: s.traffic.h2.Load(),
		PacedLate: s.traffic.late.snapshot(), Refused: s.refusedByStatus(),
	}
}

// count counts a request; it reports whether the request was for the
// stats, which it then answers.
func (s *Simulator) count(w http.ResponseWriter, req *http.Request) bool {
	if req.URL.Path == StatsPath {
		if req.Method != http.MethodGet {
			w.Header().Set("Allow", http.MethodGet)
			writeError(w, &httpError{status: http.StatusMethodNotAllowed, code: "method_not_allowed", message: "Use GET."}, false)
			return true
		}
		_ = writeJSON(w, http.StatusOK, s.Stats())
		return true
	}
	s.traffic.requests.Add(1)
	if req.ProtoMajor == 2 {
		s.traffic.h2.Add(1)
	}
	return false
}

// protocols are what Serve speaks: HTTP/1.1, and HTTP/2 without TLS (h2c
// with prior knowledge), as a client that knows the upstream does uses it
// to stream many runs over a few connections.
func protocols() *http.Protocols {
	var p http.Protocols
	p.SetHTTP1(true)
	p.SetUnencryptedHTTP2(true)
	return &p
}

// countConns counts the connections a server accepts.
func (s *Simulator) countConns(_ net.Conn, state http.ConnState) {
	if state == http.StateNew {
		s.traffic.conns.Add(1)
	}
}
