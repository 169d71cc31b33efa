package simulator

import (
	"bytes"
	"encoding/json"
	"fmt"
)

// listObject is a page of a list operation.
type listObject struct {
	Object  string `json:"object"`
	Data    any    `json:"data"`
	FirstID string `json:"first_id"`
	LastID  string `json:"last_id"`
	HasMore bool   `json:"has_more"`
}

// marshalLine encodes v as one line of JSON without HTML escaping, so text
// reads as the service writes it.
func marshalLine(v any) ([]byte, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, fmt.Errorf("encode %T: %w", v, err)
	}
	return bytes.TrimRight(buf.Bytes(), "\n"), nil
}

func ptr[T any](v T) *T { return &v }
