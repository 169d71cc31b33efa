package simulator

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strconv"
)

type lastError struct {
	Code    string `json:"code"`
	Message string `json:"message"`
}

type listObject struct {
	Object  string `json:"object"`
	Data    any    `json:"data"`
	FirstID string `json:"first_id"`
	LastID  string `json:"last_id"`
	HasMore bool   `json:"has_more"`
}

// jsonFloat encodes whole numbers with a decimal point (1.0), as the
// service does for temperature and top_p.
type jsonFloat float64

func (f jsonFloat) MarshalJSON() ([]byte, error) {
	s := strconv.FormatFloat(float64(f), 'f', -1, 64)
	if !bytes.ContainsAny([]byte(s), ".eE") {
		s += ".0"
	}
	return []byte(s), nil
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
