// Package brainwire holds the domain of the capture backend: a Capture and
// its CaptureResult, the normalized agent events a provider emits, the
// capture events the phone protocols are built from, the stored documents,
// the application errors, and the interfaces (Provider and its Run, Store,
// ToolSet, BlobStore, Transcriber, Observer) the rest of the program is
// written against.
//
// Implementations live in packages named after what they wrap (foundry,
// sqlite, cosmos, simulator, telemetry, ...) and are wired together in one
// place, package wiring, which cmd/brainwire and the replay harness call.
package brainwire
