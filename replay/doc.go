// Package replay feeds recorded capture runs (fixtures, see package
// recorder) back through the real capture path, to prove byte for byte
// what each client receives: the phone (capture-v2), AG-UI clients and
// earlier app builds (v1), each on its own routes (Protocol).
//
// Upstream is a fake agent service that serves a fixture's exchanges in
// order, checks each request against the recorded one, and reproduces the
// recording's timing (instantly, in real time, or scaled) and its faults:
// error events, non-2xx answers, a stream cut mid-event, writes split at
// chosen byte offsets. Env is the capture server as tests run it, with
// deterministic ids, a fixed clock and its own SQLite store. Run ties them
// together for one fixture; the golden suite in this package runs every
// fixture under fixtures/ in every protocol and compares each output with
// its golden file.
//
// The fixture corpus is recorded against the offline simulator by the
// go:generate lines in corpus.go.
package replay
