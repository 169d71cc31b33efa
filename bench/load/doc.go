// Package load drives many concurrent captures against a running brainwire
// server and reports what the phones saw and what the server spent.
//
// Each capture is one phone: its own connection on loopback, a POST to
// /api/capture, the capture-v2 stream read to COMPLETE, then the
// connection closed, as the app does. Captures start spread over a ramp,
// all of a round at most in flight, each bounded by a timeout. A run is one
// or more rounds; the first warms up the server's pools, so the later ones
// are its steady state.
//
// Per round the report gives time to first byte, to the outcome and to
// COMPLETE (p50, p99, max), errors by kind, the server's CPU per capture and
// RSS per concurrent stream (from /proc), its descriptors, and the
// upstream connections opened (counted by the simulator). Launch starts the
// server, the simulator and an OTLP receiver as processes of their own, so
// that each one's CPU and memory are its own.
//
// Linux only: the figures come from /proc.
package load
