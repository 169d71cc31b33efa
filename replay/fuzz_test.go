package replay_test

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"testing"
	"time"

	"github.com/brainwire/brainwire/internal/fuzztest"
	"github.com/brainwire/brainwire/recorder"
	"github.com/brainwire/brainwire/replay"
)

// FuzzUpstream serves any fixture the loader accepts, as `brainwire
// replay` does, to requests rebuilt from its own recorded ones: a hostile
// fixture must not panic the fake upstream (other than the documented
// http.ErrAbortHandler of a recorded cut) or hang it, and every recorded
// request must match itself.
func FuzzUpstream(f *testing.F) {
	for _, b := range fuzztest.SmallFixtures(f) {
		f.Add(b)
	}
	for _, s := range []string{
		`{"version":1,"exchanges":[{"request":{"method":"POST","path":"/threads/runs"},"response":{"status":0}}]}`,
		`{"version":1,"exchanges":[{"request":{"method":"GET","path":"/x"},"response":{"status":200,"events":[{"ms":5,"event":"a","data_text":"1"}],` +
			`"split_at":[-3,0,1,2,3,99],"partial":"data: x","error":"reset"}}]}`,
		`{"version":1,"exchanges":[{"request":{"method":"POST","path":"/x","query":{"k":"[REDACTED]","a;b":"c,d"}},"response":{"status":200,"closed":true,"events":[]}}]}`,
		`{"version":1,"exchanges":[{"request":{"method":"bad method","path":"no-slash"},"error":"dial tcp: refused"}]}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, file []byte) {
		defer fuzztest.Deadline(30 * time.Second)()
		fx, err := recorder.Unmarshal(file)
		if err != nil {
			return
		}
		exchanges := fx.Exchanges[:min(len(fx.Exchanges), 8)]
		up := replay.NewUpstream(exchanges, 0)
		defer up.Close()
		for _, ex := range exchanges {
			serveRecorded(t, up, ex.Request)
		}
		if err := up.Err(); err != nil {
			t.Fatalf("recorded requests do not match themselves: %v", err)
		}
	})
}

// serveRecorded makes the recorded request rq to up. A response held open
// for a client that closed it early is let go after a moment.
func serveRecorded(t *testing.T, up *replay.Upstream, rq recorder.Request) {
	t.Helper()
	q := url.Values{}
	for k, v := range rq.Query {
		q.Set(k, v)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	r := (&http.Request{
		Method: rq.Method,
		URL:    &url.URL{Path: rq.Path, RawQuery: q.Encode()},
		Header: http.Header{},
		Body:   io.NopCloser(bytes.NewReader(rq.BodyBytes())),
	}).WithContext(ctx)
	defer func() {
		if v := recover(); v != nil && v != http.ErrAbortHandler {
			panic(v)
		}
	}()
	up.ServeHTTP(httptest.NewRecorder(), r)
}
