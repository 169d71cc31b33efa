package brainwire

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
)

// AgentInfo describes the agent that runs captures: which agent it is and
// which instructions it follows. Version is what a person tuning the agent
// compares: every capture, its inbox item, its trace and the capture
// metrics carry it.
type AgentInfo struct {
	// Name and ID are the agent's display name and its id on the agent
	// service (an assistant id, a Foundry agent name, ...).
	Name string
	ID   string
	// Version names the instructions: the agent's own version when it
	// declares one (metadata.version, a Foundry agent version, ...), else
	// InstructionsHash.
	Version string
	// Model is the model deployment the agent runs on.
	Model string
	// Instructions are the agent's system instructions.
	Instructions string
	// Tools are the agent's tool definitions as the service describes
	// them, JSON; nil when it has none.
	Tools json.RawMessage
	// InstructionsHash is HashInstructions of the three above.
	InstructionsHash string
	// Defined is set for an agent brainwire defines itself with each
	// request (an ephemeral agent): its version is its instructions'
	// ContentVersion, so an instructions file has one version wherever
	// it runs.
	Defined bool
}

// IsZero reports whether nothing is known about the agent.
func (a AgentInfo) IsZero() bool {
	return a.Name == "" && a.ID == "" && a.Version == "" && a.Model == "" && a.Instructions == "" && a.InstructionsHash == ""
}

// HashInstructions is a short, stable name for what decides an agent's
// behaviour: its instructions, its tool definitions and its model. JSON
// tools are compacted first, so that formatting does not count.
func HashInstructions(instructions string, tools json.RawMessage, model string) string {
	h := sha256.New()
	write := func(s []byte) {
		// Length-prefixed, so that no two different inputs collide by
		// moving bytes from one field to the next.
		var n [8]byte
		for i, l := 0, len(s); i < 8; i++ {
			n[i] = byte(l >> (8 * i))
		}
		h.Write(n[:])
		h.Write(s)
	}
	write([]byte(instructions))
	var compact bytes.Buffer
	if len(tools) > 0 && json.Compact(&compact, tools) == nil {
		write(compact.Bytes())
	} else {
		write(tools)
	}
	write([]byte(model))
	return hex.EncodeToString(h.Sum(nil))[:12]
}

// Described returns a with InstructionsHash set, and Version set to the
// hash unless version (the agent's own) is given.
func (a AgentInfo) Described(version string) AgentInfo {
	a.InstructionsHash = HashInstructions(a.Instructions, a.Tools, a.Model)
	a.Version = version
	if a.Version == "" {
		a.Version = a.InstructionsHash
	}
	return a
}

// WithInstructions returns the agent as it runs with instructions in place
// of its own, as `brainwire eval -instructions` runs it: the version is
// then the hash, whatever version the agent declares, since those are not
// the instructions the declared version names. Empty instructions change
// nothing.
func (a AgentInfo) WithInstructions(instructions string) AgentInfo {
	if instructions == "" {
		return a
	}
	a.Instructions = instructions
	if a.Defined {
		return a.Described(ContentVersion(instructions))
	}
	return a.Described("")
}

// ContentVersion names instructions by their content: "sha256:" and the
// first 12 hex digits of their SHA-256. It is the version of an agent
// brainwire defines: the same instructions file has the same version
// wherever it runs, and any edit gives a new one.
func ContentVersion(instructions string) string {
	sum := sha256.Sum256([]byte(instructions))
	return "sha256:" + hex.EncodeToString(sum[:6])
}

// AgentDescriber is implemented by providers that can say which agent they
// run. The server asks at start-up, every few minutes and on the health
// check; a failed answer keeps what it knew.
type AgentDescriber interface {
	DescribeAgent(ctx context.Context) (AgentInfo, error)
}

// TraceRef locates an agent run in the telemetry: the trace id and the id
// of the run's own span (invoke_agent), in hex as W3C trace context writes
// them. The same ids correlate the run's Application Insights items.
type TraceRef struct {
	TraceID string
	SpanID  string
}

// IsZero reports whether the run was not traced.
func (r TraceRef) IsZero() bool { return r.TraceID == "" && r.SpanID == "" }

type runTraceKey struct{}

// WithRunTrace returns ctx carrying where telemetry records the capture's
// agent run; observers set it in StartCapture.
func WithRunTrace(ctx context.Context, ref TraceRef) context.Context {
	return context.WithValue(ctx, runTraceKey{}, ref)
}

// RunTraceFrom returns where telemetry records the capture's agent run.
func RunTraceFrom(ctx context.Context) (TraceRef, bool) {
	ref, ok := ctx.Value(runTraceKey{}).(TraceRef)
	return ref, ok
}
