package load

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"fmt"
	"io"
	"net/http"
)

// The sink's Application Insights ingestion endpoint: POST /v2/track with
// gzip-compressed JSON lines, one envelope per line, answered as the
// service answers a batch it accepts whole. Like the OTLP side it reads
// only what it counts, without decoding the JSON: the kind of an item by
// its base type, a reasoning chunk by its message, both as the server's
// exporter writes them (TestSinkCountsAppInsightsItems holds it to that).
var (
	baseMessage  = []byte(`"baseType":"MessageData"`)
	baseRequest  = []byte(`"baseType":"RequestData"`)
	chunkMessage = []byte(`"message":"Reasoning chunk"`)
)

const (
	trackPath     = "/v2/track"
	maxTrackBody  = 64 << 20
	maxTrackLine  = 1 << 20
	trackAccepted = `{"itemsReceived":%d,"itemsAccepted":%d,"errors":[]}`
)

// TrackHandler is the sink's ingestion endpoint.
func (s *Sink) TrackHandler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("POST "+trackPath, s.track)
	return mux
}

func (s *Sink) track(w http.ResponseWriter, r *http.Request) {
	c := &s.c
	c.aiRequests.Add(1)
	body := http.MaxBytesReader(w, r.Body, maxTrackBody)
	counted := &countingReader{r: body}
	var in io.Reader = counted
	if r.Header.Get("Content-Encoding") == "gzip" {
		zr, err := gzip.NewReader(counted)
		if err != nil {
			c.aiMalformed.Add(1)
			http.Error(w, "not gzip: "+err.Error(), http.StatusBadRequest)
			return
		}
		in = zr
	}
	items := 0
	sc := bufio.NewScanner(in)
	sc.Buffer(make([]byte, 0, 64<<10), maxTrackLine)
	for sc.Scan() {
		line := sc.Bytes()
		if len(bytes.TrimSpace(line)) == 0 {
			continue
		}
		items++
		switch {
		case bytes.Contains(line, baseMessage):
			if bytes.Contains(line, chunkMessage) {
				c.aiChunkItems.Add(1)
			}
		case bytes.Contains(line, baseRequest):
			c.aiRequestItems.Add(1)
		}
	}
	c.aiBytes.Add(counted.n)
	if err := sc.Err(); err != nil {
		c.aiMalformed.Add(1)
		http.Error(w, "reading the batch: "+err.Error(), http.StatusBadRequest)
		return
	}
	c.aiItems.Add(int64(items))
	w.Header().Set("Content-Type", "application/json")
	fmt.Fprintf(w, trackAccepted, items, items)
}

type countingReader struct {
	r io.Reader
	n int64
}

func (c *countingReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.n += int64(n)
	return n, err
}
