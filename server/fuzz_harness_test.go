package server_test

import (
	"bytes"
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/brainwire/brainwire"
	"github.com/brainwire/brainwire/foundry"
	"github.com/brainwire/brainwire/internal/fuzztest"
	"github.com/brainwire/brainwire/localblob"
	"github.com/brainwire/brainwire/protocol/agui/aguitest"
	"github.com/brainwire/brainwire/server"
	"github.com/brainwire/brainwire/simulator"
	"github.com/brainwire/brainwire/sqlite"
	"github.com/brainwire/brainwire/wiring"
)

// fuzzServer is the capture server as serve wires it (wiring.New) over a real
// SQLite store and local audio storage, with the offline simulator
// upstream answering at once, driven in-process through its handler so
// that a panic fails the fuzz input that caused it.
//
// The store holds a fixed set of documents (the baseline): alice's
// classified, misunderstood and low-confidence captures and bob's
// classified one, filed by real captures. Every request is checked, then the store is put back to
// the baseline, so each input starts from the same documents.
type fuzzServer struct {
	handler  http.Handler
	store    *sqlite.Store
	db       *sql.DB // a connection of its own, to read and restore every row
	blobDir  string
	baseline []tableRows
	// Seeded documents.
	classified, misunderstood, pending, bobs brainwire.InboxItem
}

// The tables the store keeps, children last.
var fuzzTables = []string{"inbox", "bucket_records"}

type tableRows struct {
	table string
	cols  []string
	rows  [][]any
}

// fixedTranscriber hears the same words in any audio.
type fixedTranscriber struct{}

func (fixedTranscriber) Transcribe(_ context.Context, audio io.Reader, _, _ string) (string, error) {
	if _, err := io.Copy(io.Discard, audio); err != nil {
		return "", err
	}
	return "Call mom about her birthday on Sunday", nil
}

// fuzzMaxAudio keeps the upload limit within the fuzz engine's reach.
const fuzzMaxAudio = 32 << 10

func newFuzzServer(f *testing.F) *fuzzServer {
	f.Helper()
	sim := httptest.NewServer(simulator.New(simulator.Config{ChunkDelay: -1}))
	f.Cleanup(sim.Close)
	dir := f.TempDir()
	dbPath := filepath.Join(dir, "brainwire.db")
	st, err := sqlite.Open(context.Background(), dbPath)
	if err != nil {
		f.Fatal(err)
	}
	f.Cleanup(func() { st.Close() })
	blobDir := filepath.Join(dir, "audio")
	blobs, err := localblob.New(blobDir)
	if err != nil {
		f.Fatal(err)
	}
	var n atomic.Int64
	srv, err := wiring.New(wiring.Config{
		Server: server.Config{
			Keys:          server.Keys{testKey: testUser, otherKey: "bob"},
			Store:         st,
			Blobs:         blobs,
			Transcriber:   fixedTranscriber{},
			MaxAudioBytes: fuzzMaxAudio,
			RunTimeout:    20 * time.Second,
			NewID:         func() string { return fmt.Sprintf("id%d", n.Add(1)) },
			Now:           func() time.Time { return fixedNow },
		},
		Agent: wiring.Foundry(sim.URL+simulator.ProjectPath, simulator.DefaultAgentID, "v1",
			func(rt http.RoundTripper) http.RoundTripper { return foundry.NewStaticTokenTransport("simulator", rt) }),
	})
	if err != nil {
		f.Fatal(err)
	}
	db, err := sql.Open("sqlite", "file:"+filepath.ToSlash(dbPath)+"?_pragma=busy_timeout(10000)")
	if err != nil {
		f.Fatal(err)
	}
	f.Cleanup(func() { db.Close() })
	s := &fuzzServer{handler: srv.Handler(), store: st, db: db, blobDir: blobDir}

	// The baseline, filed by real captures.
	for _, c := range []struct{ key, text string }{
		{testKey, "Call mom about her birthday on Sunday"},
		{testKey, "hmm zzkx"},
		{testKey, "Call Sarah about the project idea"},
		{otherKey, "Lunch with Sarah on Friday"},
	} {
		body, _ := json.Marshal(map[string]string{"text": c.text})
		if w := s.serve(s.request(http.MethodPost, "/api/capture", "", "application/json", body, c.key)); w.Code != http.StatusOK {
			f.Fatalf("seeding %q: %d %s", c.text, w.Code, w.Body)
		}
	}
	for _, u := range []string{testUser, "bob"} {
		page, err := st.ListInbox(context.Background(), u, brainwire.ListOptions{})
		if err != nil {
			f.Fatal(err)
		}
		for _, it := range page.Items {
			switch {
			case u == "bob":
				s.bobs = it
			case it.Status == brainwire.StatusMisunderstood:
				s.misunderstood = it
			case it.Status == brainwire.StatusPending:
				s.pending = it
			default:
				s.classified = it
			}
		}
	}
	if s.classified.ID == "" || s.misunderstood.ID == "" || s.misunderstood.UpstreamThreadID == "" || s.pending.ID == "" || s.bobs.ID == "" {
		f.Fatalf("seeding: got %+v, %+v, %+v, %+v", s.classified, s.misunderstood, s.pending, s.bobs)
	}
	if s.baseline, err = s.rows(); err != nil {
		f.Fatal(err)
	}
	return s
}

// request builds a request with key (none when empty); path and rawQuery
// go into the URL as they are, so that any bytes can be tried.
func (s *fuzzServer) request(method, path, rawQuery, contentType string, body []byte, key string) *http.Request {
	r := httptest.NewRequest(method, "/", bytes.NewReader(body))
	r.URL = &url.URL{Path: path, RawQuery: rawQuery}
	r.RequestURI = r.URL.RequestURI()
	if contentType != "" {
		r.Header.Set("Content-Type", contentType)
	}
	if key != "" {
		r.Header.Set("Authorization", "Bearer "+key)
	}
	return r
}

func (s *fuzzServer) serve(r *http.Request) *httptest.ResponseRecorder {
	w := httptest.NewRecorder()
	s.handler.ServeHTTP(w, r)
	return w
}

// check sends r and checks the answer: a 2xx that is what the route
// promises, or a 4xx JSON error; never a 5xx. After a 4xx the store must
// hold exactly what it held before; after anything, bob's documents are
// untouched (every request is alice's) and no audio is left behind. The
// store is then put back to the baseline.
func (s *fuzzServer) check(t *testing.T, r *http.Request) *httptest.ResponseRecorder {
	t.Helper()
	defer fuzztest.Deadline(time.Minute)()
	w := s.serve(r)
	after, err := s.rows()
	if err != nil {
		t.Fatal(err)
	}
	changed := !reflect.DeepEqual(after, s.baseline)
	defer func() {
		if changed {
			if err := s.restore(); err != nil {
				t.Fatal(err)
			}
		}
	}()
	switch code := w.Code; {
	case code >= 200 && code < 300:
		s.checkSuccess(t, r, w)
	case code >= 400 && code < 500:
		var e struct{ Detail string }
		if ct := w.Header().Get("Content-Type"); ct != "application/json" || json.Unmarshal(w.Body.Bytes(), &e) != nil || e.Detail == "" {
			t.Fatalf("%d is not a JSON error: %s %q", code, ct, w.Body)
		}
		if changed {
			t.Fatalf("%d %s, yet the store changed:\nbefore %v\nafter  %v", code, w.Body, s.baseline, after)
		}
	default:
		t.Fatalf("answered %d: %s", code, w.Body)
	}
	if !reflect.DeepEqual(userRows(after, "bob"), userRows(s.baseline, "bob")) {
		t.Fatalf("alice's request changed bob's documents:\nbefore %v\nafter  %v", s.baseline, after)
	}
	if left, _ := os.ReadDir(s.blobDir); len(left) > 0 {
		t.Fatalf("%d: audio left behind: %v", w.Code, left)
	}
	return w
}

// checkSuccess checks a 2xx answer: a capture-v2 stream ends with
// COMPLETE, an AG-UI stream keeps AG-UI's rules, a legacy one ends with
// RUN_FINISHED or RUN_ERROR; JSON answers are well formed and never show
// another user's document.
func (s *fuzzServer) checkSuccess(t *testing.T, r *http.Request, w *httptest.ResponseRecorder) {
	t.Helper()
	switch ct := w.Header().Get("Content-Type"); {
	case w.Code == http.StatusNoContent:
	case ct == "text/event-stream":
		frames, err := aguitest.Frames(w.Body.String())
		last := ""
		if len(frames) > 0 {
			last = frames[len(frames)-1]
		}
		switch {
		case err != nil:
		case r.URL.Path == "/api/agui":
			err = aguitest.Verify(frames)
		case strings.HasPrefix(r.URL.Path, "/api/capture"):
			if !strings.HasPrefix(last, `{"type":"COMPLETE"`) {
				err = fmt.Errorf("the stream does not end with COMPLETE")
			}
		case !strings.Contains(last, `"type":"RUN_FINISHED"`) && !strings.Contains(last, `"type":"RUN_ERROR"`):
			err = fmt.Errorf("a legacy stream ends with %q", last)
		}
		if err != nil {
			t.Fatalf("%s %s: %v\n%s", r.Method, r.URL, err, w.Body)
		}
	case ct == "application/json":
		var v any
		if err := json.Unmarshal(w.Body.Bytes(), &v); err != nil {
			t.Fatalf("%s %s: %d with a body that is not JSON: %q", r.Method, r.URL, w.Code, w.Body)
		}
		for _, u := range userIDs(v) {
			if u != testUser {
				t.Fatalf("%s %s: alice was shown %s's documents: %s", r.Method, r.URL, u, w.Body)
			}
		}
	default:
		t.Fatalf("%s %s: %d with Content-Type %q: %q", r.Method, r.URL, w.Code, ct, w.Body)
	}
}

// rows reads every row of the store's tables, in key order.
func (s *fuzzServer) rows() ([]tableRows, error) {
	var out []tableRows
	for _, table := range fuzzTables {
		rs, err := s.db.Query("SELECT * FROM " + table + " ORDER BY user_id, id")
		if err != nil {
			return nil, err
		}
		tr := tableRows{table: table}
		if tr.cols, err = rs.Columns(); err != nil {
			rs.Close()
			return nil, err
		}
		for rs.Next() {
			vals := make([]any, len(tr.cols))
			ptrs := make([]any, len(vals))
			for i := range vals {
				ptrs[i] = &vals[i]
			}
			if err := rs.Scan(ptrs...); err != nil {
				rs.Close()
				return nil, err
			}
			tr.rows = append(tr.rows, vals)
		}
		rs.Close()
		if err := rs.Err(); err != nil {
			return nil, err
		}
		out = append(out, tr)
	}
	return out, nil
}

// restore puts the baseline rows back, in one transaction.
func (s *fuzzServer) restore() error {
	tx, err := s.db.Begin()
	if err != nil {
		return err
	}
	defer tx.Rollback()
	for i := len(fuzzTables) - 1; i >= 0; i-- {
		if _, err := tx.Exec("DELETE FROM " + fuzzTables[i]); err != nil {
			return err
		}
	}
	for _, tr := range s.baseline {
		q := "INSERT INTO " + tr.table + " (" + strings.Join(tr.cols, ", ") + ") VALUES (?" + strings.Repeat(", ?", len(tr.cols)-1) + ")"
		for _, row := range tr.rows {
			if _, err := tx.Exec(q, row...); err != nil {
				return err
			}
		}
	}
	return tx.Commit()
}

// userRows is the part of rows that belongs to user.
func userRows(all []tableRows, user string) [][]any {
	var out [][]any
	for _, tr := range all {
		for _, row := range tr.rows {
			if row[0] == user { // user_id is each table's first column
				out = append(out, row)
			}
		}
	}
	return out
}

// userIDs returns every "userId" in a decoded JSON value.
func userIDs(v any) []string {
	var out []string
	switch v := v.(type) {
	case map[string]any:
		for k, x := range v {
			if s, ok := x.(string); ok && k == "userId" {
				out = append(out, s)
			}
			out = append(out, userIDs(x)...)
		}
	case []any:
		for _, x := range v {
			out = append(out, userIDs(x)...)
		}
	}
	return out
}
