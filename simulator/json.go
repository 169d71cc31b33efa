package simulator

import (
	"bytes"
	"encoding/json"
	"fmt"
)

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
