package responses

import (
	"encoding/json"

	"github.com/brainwire/brainwire/internal/jsonscan"
)

// payloads reads the event payloads the decoder acts on. scanPayloads is
// the decoder's; the tests' encoding/json reference (jsonPayloads) reads
// the same documents as maps of raw members, and the fuzz targets hold
// the two to the same results.
type payloads interface {
	// delta reads a text delta event.
	delta(data []byte, p *deltaPayload) error
	// response reads a lifecycle event's response object into r, whose
	// Output then holds the function calls only.
	response(data []byte, r *Response) error
	// item reads response.output_item.done's item; ok is false without
	// one.
	item(data []byte, it *OutputItem) (ok bool, err error)
}

// scanPayloads reads payloads with the scanner: a response's output,
// which repeats every text the response streamed, is validated and
// skipped but for its function calls.
type scanPayloads struct {
	sc      jsonscan.Scanner // text deltas
	scratch []byte
}

func (p *scanPayloads) delta(data []byte, dp *deltaPayload) error {
	var err error
	p.scratch, err = scanDelta(&p.sc, data, dp, p.scratch)
	return err
}

// member finds the last occurrence of key in the object data, found at
// nesting depth depth.
func (p *scanPayloads) member(data []byte, depth int, key string) (value []byte, found bool, err error) {
	err = members(data, depth, &p.scratch, func(k, v []byte) error {
		if string(k) == key {
			value, found = v, true
		}
		return nil
	})
	return value, found, err
}

func (p *scanPayloads) item(data []byte, it *OutputItem) (bool, error) {
	raw, found, err := p.member(data, 1, "item")
	if err != nil || !found {
		return false, err
	}
	return true, json.Unmarshal(raw, it)
}

func (p *scanPayloads) response(data []byte, r *Response) error {
	*r = Response{}
	raw, found, err := p.member(data, 1, "response")
	if err != nil || !found {
		return err
	}
	// The last occurrence of each member counts, as in a map.
	var id, status, conv, prev, rerr, incomplete, usage, output []byte
	err = members(raw, 2, &p.scratch, func(k, v []byte) error {
		switch string(k) {
		case "id":
			id = v
		case "status":
			status = v
		case "conversation":
			conv = v
		case "previous_response_id":
			prev = v
		case "error":
			rerr = v
		case "incomplete_details":
			incomplete = v
		case "usage":
			usage = v
		case "output":
			output = v
		}
		return nil
	})
	if err != nil {
		return err
	}
	if err := decodeFields(r, id, status, conv, prev, rerr, incomplete, usage); err != nil {
		return err
	}
	if output == nil {
		return nil
	}
	return elements(output, 3, func(elem []byte) error {
		typ, found, err := p.member(elem, 4, "type")
		if err != nil || !found {
			return err
		}
		return appendFunctionCall(r, typ, elem)
	})
}

// decodeFields reads a response's members from their raw values (nil
// when absent) with encoding/json.
func decodeFields(r *Response, id, status, conv, prev, rerr, incomplete, usage []byte) error {
	for _, f := range []struct {
		raw []byte
		v   any
	}{
		{id, &r.ID}, {status, &r.Status}, {prev, &r.PreviousResponseID},
		{rerr, &r.Error}, {incomplete, &r.IncompleteDetails}, {usage, &r.Usage},
	} {
		if f.raw == nil {
			continue
		}
		if err := json.Unmarshal(f.raw, f.v); err != nil {
			return err
		}
	}
	if conv != nil {
		r.Conversation = append(json.RawMessage(nil), conv...)
	}
	return nil
}

// appendFunctionCall adds the output item elem to r's output when its
// type (raw JSON) is function_call.
func appendFunctionCall(r *Response, typ, elem []byte) error {
	var t string
	if err := json.Unmarshal(typ, &t); err != nil {
		return err
	}
	if t != "function_call" {
		return nil
	}
	var it OutputItem
	if err := json.Unmarshal(elem, &it); err != nil {
		return err
	}
	r.Output = append(r.Output, it)
	return nil
}
