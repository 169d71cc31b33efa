// Package recorder records capture runs into fixtures: the capture's
// input, every HTTP exchange with the agent service (streamed responses
// event by event, with arrival times), and the tools the server ran.
//
// A Recorder is two seams of the capture pipeline that meet through the
// request context: a brainwire.Observer, which starts a recording for each
// sampled capture and finishes it when the capture ends, and an
// http.RoundTripper (Transport) under the agent service's client, which
// records the exchanges made with that capture's context. The transport
// tees each response body as the provider reads it: the bytes reach the
// reader unchanged and at once, and the writer parses the events out of
// them, timed by the read that brought each. A recording never fails or slows a capture; it is bounded in memory,
// redacted of secrets, and written atomically by a background writer.
//
// The fixture format (Fixture, Marshal, Load) is documented in
// fixtures/README.md.
package recorder
