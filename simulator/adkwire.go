package simulator

import (
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"time"
	"unicode/utf16"
)

// The ADK API server's wire shapes: pydantic models dumped with camelCase
// aliases and without null members, fields in declaration order (the
// model response's, then the event's). Empty objects stay, as they do on
// the wire.

type adkEvent struct {
	ModelVersion       string      `json:"modelVersion,omitempty"`
	Content            *adkContent `json:"content,omitempty"`
	Partial            *bool       `json:"partial,omitempty"`
	FinishReason       string      `json:"finishReason,omitempty"`
	ErrorCode          string      `json:"errorCode,omitempty"`
	ErrorMessage       string      `json:"errorMessage,omitempty"`
	UsageMetadata      *adkUsage   `json:"usageMetadata,omitempty"`
	InvocationID       string      `json:"invocationId"`
	Author             string      `json:"author"`
	Actions            adkActions  `json:"actions"`
	NodeInfo           adkNode     `json:"nodeInfo"`
	LongRunningToolIDs []string    `json:"longRunningToolIds,omitempty"`
	ID                 string      `json:"id"`
	Timestamp          adkTime     `json:"timestamp"`
}

type adkContent struct {
	Parts []adkPart `json:"parts"`
	Role  string    `json:"role"`
}

type adkPart struct {
	FunctionCall     *adkFunctionCall `json:"functionCall,omitempty"`
	Text             string           `json:"text,omitempty"`
	Thought          bool             `json:"thought,omitempty"`
	ThoughtSignature string           `json:"thoughtSignature,omitempty"`
}

type adkFunctionCall struct {
	ID   string          `json:"id"`
	Args json.RawMessage `json:"args"`
	Name string          `json:"name"`
}

type adkUsage struct {
	CandidatesTokenCount int64 `json:"candidatesTokenCount,omitempty"`
	PromptTokenCount     int64 `json:"promptTokenCount"`
	ThoughtsTokenCount   int64 `json:"thoughtsTokenCount,omitempty"`
	TotalTokenCount      int64 `json:"totalTokenCount"`
}

type adkActions struct {
	StateDelta                 struct{} `json:"stateDelta"`
	ArtifactDelta              struct{} `json:"artifactDelta"`
	RequestedAuthConfigs       struct{} `json:"requestedAuthConfigs"`
	RequestedToolConfirmations struct{} `json:"requestedToolConfirmations"`
}

type adkNode struct {
	Path string `json:"path"`
}

type adkSessionObject struct {
	ID             string          `json:"id"`
	AppName        string          `json:"appName"`
	UserID         string          `json:"userId"`
	State          json.RawMessage `json:"state"`
	Events         []struct{}      `json:"events"`
	LastUpdateTime adkTime         `json:"lastUpdateTime"`
}

// adkTime is a time as the server writes it: seconds since the epoch, a
// float with microseconds.
type adkTime time.Time

func (t adkTime) MarshalJSON() ([]byte, error) {
	us := time.Time(t).UnixMicro()
	return []byte(strconv.FormatFloat(float64(us)/1e6, 'f', -1, 64)), nil
}

// adkErrorFrame is the payload the server writes when an exception ends a
// run after the stream started, as Python's json.dumps writes it (spaces
// after separators, ASCII only).
func adkErrorFrame(errorType, message string, at time.Time) []byte {
	ts, _ := adkTime(at).MarshalJSON()
	return fmt.Appendf(nil, `{"error": %s, "error_details": {"error_type": %s, "error_message": %s, "timestamp": %s}}`,
		pyString(errorType+": "+message), pyString(errorType), pyString(message), ts)
}

// pyString encodes s as json.dumps does by default.
func pyString(s string) string {
	var b strings.Builder
	b.WriteByte('"')
	for _, r := range s {
		switch {
		case r == '"':
			b.WriteString(`\"`)
		case r == '\\':
			b.WriteString(`\\`)
		case r == '\n':
			b.WriteString(`\n`)
		case r == '\r':
			b.WriteString(`\r`)
		case r == '\t':
			b.WriteString(`\t`)
		case r < 0x20 || r > 0x7e:
			if r > 0xffff {
				hi, lo := utf16.EncodeRune(r)
				fmt.Fprintf(&b, `\u%04x\u%04x`, hi, lo)
			} else {
				fmt.Fprintf(&b, `\u%04x`, r)
			}
		default:
			b.WriteRune(r)
		}
	}
	b.WriteByte('"')
	return b.String()
}

// uuid returns a version-4-shaped UUID drawn from Config.NewID, so that
// seeded ids stay deterministic: ADK names sessions, events and
// invocations with uuid4s.
func (s *Simulator) uuid() string {
	sum := sha256.Sum256([]byte(s.cfg.NewID("uuid")))
	b := sum[:16]
	b[6] = b[6]&0x0f | 0x40
	b[8] = b[8]&0x3f | 0x80
	return fmt.Sprintf("%x-%x-%x-%x-%x", b[0:4], b[4:6], b[6:8], b[8:10], b[10:16])
}

// adkSignature stands for the opaque signature Gemini puts on
// function-call parts.
func adkSignature(id string) string {
	sum := sha256.Sum256([]byte(id))
	return base64.URLEncoding.EncodeToString(sum[:16])
}
