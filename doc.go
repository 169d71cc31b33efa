// Package brainwire holds the domain of the capture backend: the normalized
// agent events a provider emits, the capture events the phone protocols are
// built from, the stored documents, and the interfaces (Provider, Store,
// ToolSet, ReasoningSink) the rest of the program is written against.
//
// Implementations live in packages named after what they wrap (foundry,
// sqlite, simulator, ...) and are wired together only in cmd/brainwire.
package brainwire
