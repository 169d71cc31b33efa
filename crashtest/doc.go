// Package crashtest holds the test of brainwire's promise to a phone: a
// capture is filed exactly once and never lost, whatever dies on the way.
//
// Its tests run `brainwire serve` as real processes, two replicas on one
// store (SQLite in a shared data directory, or the Cosmos DB emulator),
// in front of an agent service and a transcription service that refuse,
// reset and stall now and then. Phones send captures with an
// Idempotency-Key and retry on every failure until they hear an outcome,
// while the replicas are killed (SIGKILL) and stopped (SIGSTOP, SIGCONT)
// at random moments, some right after a filing. When the phones are done,
// the test checks what a person would: every key filed at most one item,
// every phone heard what its key replays, each item's text is what its
// phone sent, no audio is left past the sweep, no key is left running.
//
//	go test ./crashtest                                  # the CI run
//	go test ./crashtest -run Crash -crash.captures 2000 -crash.kills 60 -crash.seed 7 -v
//
// A seed makes the run's choices reproducible (the moments still depend
// on the machine); a failed run logs its seed.
package crashtest
