package foundry

import (
	"bytes"
	"encoding/json"
	"errors"

	"github.com/brainwire/brainwire"
	"github.com/brainwire/brainwire/internal/jsonscan"
)

// decodeRun decodes a run object into run exactly as json.Unmarshal(data,
// run) would (the same fields, keys matched the same case-insensitive
// way, an error whenever it errs), but reads only the members Run has a
// field for. A run object carries the agent's instructions and its tool
// definitions, kilobytes that each of a run's four or five status events
// repeats: sc validates them without building them, where encoding/json
// scans them twice. Strings and numbers are read in place; the nested
// objects, which few events carry, go to encoding/json.
func decodeRun(sc *jsonscan.Scanner, data []byte, run *Run) error {
	sc.Reset(data)
	if sc.Null() { // encoding/json leaves run as it is
		return sc.End()
	}
	var scratch []byte
	str := func(dst *string) error {
		if sc.Null() {
			return nil
		}
		raw, plain, err := sc.String()
		if err != nil {
			return errRunField(err)
		}
		if plain {
			*dst = string(raw)
		} else {
			scratch = jsonscan.Unquote(scratch[:0], raw)
			*dst = string(scratch)
		}
		return nil
	}
	err := sc.Object(func(raw []byte, plain bool) error {
		key := raw
		if !plain {
			scratch = jsonscan.Unquote(scratch[:0], raw)
			key = scratch
		}
		fold := func(name string) bool { return bytes.EqualFold(key, []byte(name)) }
		switch {
		case fold("id"):
			return str(&run.ID)
		case fold("thread_id"):
			return str(&run.ThreadID)
		case fold("assistant_id"):
			return str(&run.AssistantID)
		case fold("model"):
			return str(&run.Model)
		case fold("status"):
			s := string(run.Status)
			err := str(&s)
			run.Status = brainwire.RunStatus(s)
			return err
		case fold("created_at"):
			if sc.Null() {
				return nil
			}
			n, err := sc.Int64()
			if err != nil {
				return errRunField(err)
			}
			run.CreatedAt = n
			return nil
		case fold("required_action"):
			return object(sc, data, &run.RequiredAction)
		case fold("last_error"):
			return object(sc, data, &run.LastError)
		case fold("usage"):
			return object(sc, data, &run.Usage)
		}
		return sc.Skip()
	})
	if errors.Is(err, jsonscan.ErrType) {
		return errors.New("a run is a JSON object")
	}
	if err != nil {
		return err
	}
	return sc.End()
}

// object decodes the value at the cursor into *dst as encoding/json does:
// null sets it to nil, an object is decoded into it.
func object[T any](sc *jsonscan.Scanner, data []byte, dst **T) error {
	if sc.Null() {
		*dst = nil
		return nil
	}
	start := sc.Pos()
	if err := sc.Skip(); err != nil {
		return err
	}
	return json.Unmarshal(data[start:sc.Pos()], dst)
}

func errRunField(err error) error {
	if errors.Is(err, jsonscan.ErrType) {
		return errors.New("a run field holds a value of the wrong type")
	}
	return err
}
