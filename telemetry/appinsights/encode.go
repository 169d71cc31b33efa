package appinsights

import (
	"strconv"
	"time"

	"github.com/microsoft/ApplicationInsights-Go/appinsights/contracts"

	"github.com/brainwire/brainwire/internal/jsonw"
	"github.com/brainwire/brainwire/internal/textcut"
)

// Field limits of the ingestion schema (the contracts' Sanitize methods).
const (
	maxMessage       = 32768
	maxPropertyValue = 8192
	maxPropertyKey   = 150
	maxName          = 1024
	maxTagValue      = 1024
	maxEventName     = 512
)

// envelopeNames are the envelope and base type names of the item kinds,
// as the contracts package derives them from the instrumentation key.
type envelopeNames struct {
	message, messageBase string
	request, requestBase string
	event, eventBase     string
}

func newEnvelopeNames(nameKey string) envelopeNames {
	m, r, ev := contracts.NewMessageData(), contracts.NewRequestData(), contracts.NewEventData()
	return envelopeNames{
		message: m.EnvelopeName(nameKey), messageBase: m.BaseType(),
		request: r.EnvelopeName(nameKey), requestBase: r.BaseType(),
		event: ev.EnvelopeName(nameKey), eventBase: ev.BaseType(),
	}
}

// appendEnvelope appends it as one line of JSON, in the shape
// json.Marshal gives a contracts.Envelope holding a contracts.Data of
// MessageData, RequestData or EventData (envelope_test.go holds it to
// that). Written by hand because a capture sends an item per reasoning
// chunk: a chunk's item takes 0.9 µs and no allocation here, 4.8 µs and 35
// allocations as a contracts.Envelope through json.Marshal, which is
// 0.2 ms more CPU per capture of 53 chunks (the load test's), two thirds
// of what a capture may cost more with telemetry on.
func (e *Exporter) appendEnvelope(b []byte, it *item) []byte {
	var (
		name string
		op   Operation
		ts   time.Time
	)
	switch {
	case it.req != nil:
		name, op, ts = e.names.request, it.req.Operation, it.req.Time
	case it.event != nil:
		name, op, ts = e.names.event, it.event.Operation, it.event.Time
	default:
		name, op, ts = e.names.message, it.trace.Operation, it.trace.Time
	}
	if ts.IsZero() {
		ts = time.Now()
	}
	b = append(b, `{"ver":1,"name":`...)
	b = appendString(b, name, maxName)
	b = append(b, `,"time":"`...)
	b = ts.UTC().AppendFormat(b, "2006-01-02T15:04:05.999999Z")
	b = append(b, `","sampleRate":100,"seq":"","iKey":`...)
	b = appendString(b, e.cfg.ConnectionString.InstrumentationKey, 40)
	b = append(b, `,"tags":{`...)
	b = e.appendTags(b, op)
	b = append(b, `},"data":{"baseType":`...)
	switch {
	case it.req != nil:
		b = appendString(b, e.names.requestBase, maxName)
		b = appendRequestData(b, it.req)
	case it.event != nil:
		b = appendString(b, e.names.eventBase, maxName)
		b = appendEventData(b, it.event)
	default:
		b = appendString(b, e.names.messageBase, maxName)
		b = appendMessageData(b, &it.trace)
	}
	return append(b, "}}}\n"...)
}

// appendTags appends the members of "tags": the configured tags, then the
// item's operation id, parent id and name, which replace configured tags of
// those keys. Empty values are left out.
func (e *Exporter) appendTags(b []byte, op Operation) []byte {
	first := true
	tag := func(k, v string) {
		if v == "" {
			return
		}
		if !first {
			b = append(b, ',')
		}
		first = false
		b = appendString(b, k, maxPropertyKey)
		b = append(b, ':')
		b = appendString(b, v, maxTagValue)
	}
	for _, kv := range e.tags {
		if kv.Key != contracts.OperationId && kv.Key != contracts.OperationParentId && kv.Key != contracts.OperationName {
			tag(kv.Key, kv.Value)
		}
	}
	tag(contracts.OperationId, op.ID)
	tag(contracts.OperationParentId, op.ParentID)
	tag(contracts.OperationName, op.Name)
	return b
}

// appendRequestData appends the "baseData" of a RequestData, up to but not
// including its closing brace.
func appendRequestData(b []byte, r *Request) []byte {
	b = append(b, `,"baseData":{"ver":2,"id":`...)
	b = appendString(b, r.ID, 128)
	b = append(b, `,"source":"","name":`...)
	b = appendString(b, r.Name, maxName)
	b = append(b, `,"duration":"`...)
	b = append(b, formatDuration(r.Duration)...)
	b = append(b, `","responseCode":`...)
	b = appendString(b, r.ResponseCode, maxName)
	b = append(b, `,"success":`...)
	b = strconv.AppendBool(b, r.Success)
	b = append(b, `,"url":`...)
	b = appendString(b, r.URL, 2048)
	b = appendProperties(b, nil, r.Properties)
	return appendMeasurements(b, r.Measurements)
}

// appendEventData appends the "baseData" of an EventData, up to but not
// including its closing brace.
func appendEventData(b []byte, ev *Event) []byte {
	b = append(b, `,"baseData":{"ver":2,"name":`...)
	b = appendString(b, ev.Name, maxEventName)
	b = appendProperties(b, nil, ev.Properties)
	return appendMeasurements(b, ev.Measurements)
}

// appendMeasurements writes "measurements" (omitted when empty).
func appendMeasurements(b []byte, ms []Measurement) []byte {
	if len(ms) == 0 {
		return b
	}
	b = append(b, `,"measurements":{`...)
	for i, m := range ms {
		if i > 0 {
			b = append(b, ',')
		}
		b = appendString(b, m.Key, maxPropertyKey)
		b = append(b, ':')
		b = strconv.AppendFloat(b, m.Value, 'g', -1, 64)
	}
	return append(b, '}')
}

// appendMessageData appends the "baseData" of a MessageData, up to but not
// including its closing brace.
func appendMessageData(b []byte, t *Trace) []byte {
	b = append(b, `,"baseData":{"ver":2,"message":`...)
	b = appendString(b, t.Message, maxMessage)
	b = append(b, `,"severityLevel":`...)
	b = strconv.AppendInt(b, int64(t.Severity), 10)
	return appendProperties(b, t.Common, t.Properties)
}

// appendProperties writes "properties" (omitted when empty, as the
// contracts' omitempty does); a key in own wins over the same in common.
func appendProperties(b []byte, common, own []Property) []byte {
	if len(common)+len(own) == 0 {
		return b
	}
	b = append(b, `,"properties":{`...)
	first := true
	add := func(p Property) {
		if !first {
			b = append(b, ',')
		}
		first = false
		b = appendString(b, p.Key, maxPropertyKey)
		b = append(b, ':')
		b = appendString(b, p.Value, maxPropertyValue)
	}
	for _, p := range common {
		if !hasKey(own, p.Key) {
			add(p)
		}
	}
	for i, p := range own {
		if !hasKey(own[i+1:], p.Key) {
			add(p)
		}
	}
	return append(b, '}')
}

func hasKey(ps []Property, k string) bool {
	for _, p := range ps {
		if p.Key == k {
			return true
		}
	}
	return false
}

// appendString appends s, cut to at most limit bytes on a character
// boundary, as a JSON string. Invalid UTF-8 becomes U+FFFD.
func appendString(b []byte, s string, limit int) []byte {
	return jsonw.String(b, textcut.Prefix(s, limit))
}
