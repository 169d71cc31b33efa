package cosmos

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"regexp"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore/policy"
	"github.com/Azure/azure-sdk-for-go/sdk/data/azcosmos"

	"github.com/brainwire/brainwire/internal/npmtest"
)

// emulatorKey is the Cosmos DB emulator's published well-known key.
const emulatorKey = "C2y6yDjf5/R+ob0N8A7Cgv30VRDJIWEHLM+4QDU5DE2nQ9nDuVTqobD4b8mGGyPMbIZnqyMsEcaGQy67XIw/Jw=="

// emulator is the cosmosdb-server every test of a run shares; each test
// gets its own database in it.
type emulator struct {
	endpoint string
	seq      atomic.Int64
}

// TestEmulator starts cosmosdb-server once and runs every test that needs
// it as a subtest, in parallel, each on a fresh database.
func TestEmulator(t *testing.T) {
	start := time.Now()
	// The bundled TLS certificate expired in 2021: plain HTTP only.
	srv := npmtest.Start(t, "cosmosdb-server", "--port", "{port}", "--host", "127.0.0.1", "--no-ssl")
	t.Logf("cosmosdb-server listening on %s after %v", srv.Addr, time.Since(start).Round(time.Millisecond))
	e := &emulator{endpoint: "http://" + srv.Addr}

	tests := []struct {
		name string
		fn   func(*testing.T, *emulator)
	}{
		{"EnsureContainers", testEnsureContainers},
		{"Ping", testPing},
		{"TokenCredential", testTokenCredential},
		{"KeyWinsOverCredential", testKeyWinsOverCredential},
		{"StoredDocuments", testStoredDocuments},
		{"RecordIDCollision", testRecordIDCollision},
		{"InboxWriteFailsAfterRecord", testInboxWriteFailsAfterRecord},
		{"InboxWriteFailsCleanupFails", testInboxWriteFailsCleanupFails},
		{"CancelledDuringInboxWrite", testCancelledDuringInboxWrite},
		{"RefileConcurrentChange", testRefileConcurrentChange},
		{"RefileOldRecordDeleteFails", testRefileOldRecordDeleteFails},
		{"RecategorizeConcurrentChange", testRecategorizeConcurrentChange},
		{"ShadowMeetsWrites", testShadowMeetsWrites},
		{"DeleteItemFails", testDeleteItemFails},
		{"Validation", testValidation},
		{"Conformance", testConformance},
		{"KeyDocuments", testKeyDocuments},
		{"FilingRacesATakeover", testFilingRacesATakeover},
		{"KeyedItemWriteLosesItsAnswer", testKeyedItemWriteLosesItsAnswer},
		{"CheckSetup", testCheckSetup},
		{"CheckSetupMissingContainer", testCheckSetupMissingContainer},
		{"CheckSetupUnreachable", testCheckSetupUnreachable},
		{"Replicas", testReplicas},
		{"ClaimRetriesAfterAConcurrentChange", testClaimRetriesAfterAConcurrentChange},
		{"ClaimGivesUpAfterRepeatedChanges", testClaimGivesUpAfterRepeatedChanges},
	}

	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			tc.fn(t, e)
		})
	}
}

// storeOptions adjust the store a test opens.
type storeOptions struct {
	faults   *faults
	logger   *slog.Logger
	database string // reuse another store's database
	noEnsure bool
	cred     *fakeCredential
	key      string
}

// dbName returns a database name unique within the run.
func (e *emulator) dbName(t *testing.T) string {
	name := regexp.MustCompile(`[^A-Za-z0-9-]+`).ReplaceAllString(t.Name(), "-")
	if len(name) > 200 {
		name = name[len(name)-200:]
	}
	return fmt.Sprintf("%s-%d", name, e.seq.Add(1))
}

// open returns a store on a fresh database, with its containers created.
func (e *emulator) open(t *testing.T, o storeOptions) *Store {
	t.Helper()
	ctx := context.Background()
	cfg := Config{Endpoint: e.endpoint, Key: emulatorKey, Database: o.database, Logger: o.logger}
	if o.cred != nil {
		cfg.Key, cfg.Credential = o.key, o.cred
	}
	fresh := cfg.Database == ""
	if fresh {
		cfg.Database = e.dbName(t)
	}
	if o.faults == nil {
		o.faults = newFaults()
	}
	cfg.ClientOptions = &azcosmos.ClientOptions{ClientOptions: policy.ClientOptions{
		Transport: o.faults,
		// Injected failures must reach the store, not be retried away.
		Retry: policy.RetryOptions{MaxRetries: -1},
	}}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.NewTextHandler(testWriter{t}, nil))
	}
	s, err := Open(ctx, cfg)
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	s.compensate = 5 * time.Second
	t.Cleanup(func() { _ = s.Close() })
	if o.noEnsure {
		return s
	}
	if err := s.EnsureContainers(ctx); err != nil {
		t.Fatalf("EnsureContainers: %v", err)
	}
	if fresh {
		// The emulator keeps everything in memory: give it back.
		t.Cleanup(func() { _, _ = s.db.Delete(context.Background(), nil) })
	}
	return s
}

// testWriter sends a logger's output to the test log.
type testWriter struct{ t *testing.T }

func (w testWriter) Write(p []byte) (int, error) {
	w.t.Helper()
	w.t.Log(strings.TrimRight(string(p), "\n"))
	return len(p), nil
}

// faults is an HTTP transport to the emulator that can fail chosen
// requests, or run a hook just before them, to drive a store into its
// failure paths.
type faults struct {
	client http.Client
	mu     sync.Mutex
	rules  []*fault
	seen   []string // "METHOD path" of every request, in order
	auth   []string // the Authorization header of every request
}

// fault affects the next n requests whose method matches and whose path
// ends with path.
type fault struct {
	method, path string
	n            int
	before       func(*http.Request) // runs before the request goes out (or fails)
	err          error               // fail the request with this instead of sending it
	lose         error               // send the request, then fail it with this: its answer is lost
}

func newFaults() *faults { return &faults{} }

func (f *faults) add(r *fault) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if r.n == 0 {
		r.n = 1
	}
	f.rules = append(f.rules, r)
}

func (f *faults) requests() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]string(nil), f.seen...)
}

func (f *faults) authorizations() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]string(nil), f.auth...)
}

func (f *faults) Do(req *http.Request) (*http.Response, error) {
	f.mu.Lock()
	f.seen = append(f.seen, req.Method+" "+req.URL.Path)
	f.auth = append(f.auth, req.Header.Get("Authorization"))
	var hit *fault
	for _, r := range f.rules {
		if r.n > 0 && r.method == req.Method && strings.HasSuffix(req.URL.Path, r.path) {
			r.n--
			hit = r
			break
		}
	}
	f.mu.Unlock()
	if hit != nil {
		if hit.before != nil {
			hit.before(req)
		}
		if hit.err != nil {
			return nil, hit.err
		}
	}
	resp, err := f.client.Do(req)
	if err != nil {
		return nil, err
	}
	if hit != nil && hit.lose != nil {
		resp.Body.Close()
		return nil, hit.lose
	}
	return npmtest.FixCosmosRead(req, resp)
}

// textLogger logs as text into w, for assertions on what was logged.
func textLogger(w io.Writer) *slog.Logger { return slog.New(slog.NewTextHandler(w, nil)) }
