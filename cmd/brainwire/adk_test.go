package main

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/brainwire/brainwire/recorder"
	"github.com/brainwire/brainwire/simulator"
)

const adkProxyKey = "adk-proxy-key-5f2c9e41b7d3"

// adkUpstream is the simulator's ADK face behind a recording of the
// requests it got, standing for an ADK API server behind a proxy.
type adkUpstream struct {
	url  string
	mu   sync.Mutex
	reqs []adkRequest
}

type adkRequest struct {
	path   string
	header http.Header
	body   map[string]any
}

func startADK(t *testing.T) *adkUpstream {
	t.Helper()
	sim := simulator.New(simulator.Config{ChunkDelay: -1})
	u := &adkUpstream{}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		var body map[string]any
		_ = json.Unmarshal(b, &body)
		u.mu.Lock()
		u.reqs = append(u.reqs, adkRequest{path: r.URL.Path, header: r.Header.Clone(), body: body})
		u.mu.Unlock()
		r.Body = io.NopCloser(bytes.NewReader(b))
		sim.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	u.url = srv.URL
	return u
}

func (u *adkUpstream) requests() []adkRequest {
	u.mu.Lock()
	defer u.mu.Unlock()
	return append([]adkRequest(nil), u.reqs...)
}

func adkEnv(u *adkUpstream) map[string]string {
	return map[string]string{
		"ADK_API_BASE_URL": u.url,
		"ADK_APP_NAME":     simulator.DefaultADKApp,
		"ADK_AUTH_HEADER":  "X-Api-Key: " + adkProxyKey,
	}
}

// post sends a phone request and returns the SSE body.
func post(t *testing.T, base, route, body string) string {
	t.Helper()
	req, _ := http.NewRequest(http.MethodPost, base+route, strings.NewReader(body))
	req.Header.Set("Authorization", "Bearer "+phoneKey)
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("%s: %d %s", route, resp.StatusCode, b)
	}
	return string(b)
}

// misunderstoodThenAnswered captures what the agent cannot make out, then
// answers its question with a follow-up, which must file the same item
// under People; it returns the upstream thread the misunderstood item
// holds (foundryConversationId).
func misunderstoodThenAnswered(t *testing.T, base string) string {
	t.Helper()
	first := post(t, base, "/api/capture", `{"text":"hmm zzkx"}`)
	var mis struct {
		Value struct {
			InboxItemID string `json:"inboxItemId"`
			Thread      string `json:"foundryConversationId"`
		} `json:"value"`
	}
	for line := range strings.SplitSeq(first, "\n") {
		if strings.Contains(line, `"type":"MISUNDERSTOOD"`) {
			json.Unmarshal([]byte(strings.TrimPrefix(line, "data: ")), &mis)
		}
	}
	if mis.Value.InboxItemID == "" {
		t.Fatalf("capture, want MISUNDERSTOOD:\n%s", first)
	}
	body, _ := json.Marshal(map[string]any{"inbox_item_id": mis.Value.InboxItemID, "follow_up_text": "I meant call my sister about her birthday", "follow_up_round": 1})
	if out := post(t, base, "/api/capture/follow-up", string(body)); !strings.Contains(out, `"type":"CLASSIFIED","value":{"inboxItemId":"`+mis.Value.InboxItemID+`","bucket":"People"`) {
		t.Fatalf("follow-up:\n%s", out)
	}
	return mis.Value.Thread
}

// TestServeWithADK runs `brainwire serve` against an ADK API server: it
// says so, /health checks the app is served, a capture is classified with
// file_capture run here, and its follow-up continues the same session.
func TestServeWithADK(t *testing.T) {
	up := startADK(t)
	base, logs, stop := runServe(t, adkEnv(up))
	defer stop()
	if !strings.Contains(logs.String(), `msg="agent: Google ADK API server" endpoint=`+up.url+` provider=gcp.gen_ai app=brainwire_classifier auth_header=X-Api-Key`) {
		t.Errorf("serve does not say which agent service it uses:\n%s", logs)
	}

	resp, err := http.Get(base + "/health")
	if err != nil {
		t.Fatal(err)
	}
	var health struct {
		Backends map[string]struct {
			Kind      string `json:"kind"`
			Reachable *bool  `json:"reachable"`
		} `json:"backends"`
	}
	json.NewDecoder(resp.Body).Decode(&health)
	resp.Body.Close()
	if a := health.Backends["agent"]; resp.StatusCode != 200 || a.Kind != "gcp.gen_ai" || a.Reachable == nil || !*a.Reachable {
		t.Fatalf("health %d %+v", resp.StatusCode, health)
	}

	session := misunderstoodThenAnswered(t, base)

	var runs []adkRequest
	for _, r := range up.requests() {
		if r.header.Get("X-Api-Key") != adkProxyKey {
			t.Errorf("%s without the proxy's header", r.path)
		}
		if r.path == "/run_sse" {
			runs = append(runs, r)
		}
	}
	if len(runs) != 4 {
		t.Fatalf("%d runs, want 2 captures of 2 requests each", len(runs))
	}
	for _, r := range runs {
		if r.body["sessionId"] != session || r.body["userId"] != "phone-user" {
			t.Errorf("run on session %v for %v, want %s for phone-user", r.body["sessionId"], r.body["userId"], session)
		}
	}
	if sd, _ := runs[2].body["stateDelta"].(map[string]any); !strings.Contains(sd["brainwire_instructions"].(string), "follow-up round 1") {
		t.Errorf("the follow-up's instructions: %v", runs[2].body["stateDelta"])
	}
	if strings.Contains(logs.String(), adkProxyKey) {
		t.Error("the logs show the proxy's key")
	}
}

// TestRecordADK records against the simulator's ADK face (-api adk) and
// against a configured ADK API server behind a proxy: the fixtures replay
// and hold no trace of the proxy's key.
func TestRecordADK(t *testing.T) {
	t.Run("the simulator's face", func(t *testing.T) {
		dir := t.TempDir()
		if _, err := runCmd(t, nil, "record", "-sim", "-api", "adk", "-sim-chunk-delay", "1ms", "-dir", dir, "-name", "c",
			"-text", "Call mom about her birthday"); err != nil {
			t.Fatal(err)
		}
		checkADKFixture(t, filepath.Join(dir, "c.json"), "simulator")
	})
	t.Run("a configured server", func(t *testing.T) {
		up := startADK(t)
		dir := t.TempDir()
		if _, err := runCmd(t, adkEnv(up), "record", "-dir", dir, "-name", "c", "-text", "Call mom, key "+adkProxyKey); err != nil {
			t.Fatal(err)
		}
		raw := checkADKFixture(t, filepath.Join(dir, "c.json"), "adk")
		if bytes.Contains(raw, []byte(adkProxyKey)) {
			t.Fatal("the fixture holds the proxy's key")
		}
	})
}

func checkADKFixture(t *testing.T, path, upstream string) []byte {
	t.Helper()
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	fx, err := recorder.Unmarshal(raw)
	if err != nil {
		t.Fatal(err)
	}
	if fx.Upstream != upstream || fx.Exchanges[0].Request.Path != "/apps/brainwire_classifier/users/replay-user/sessions" ||
		fx.Exchanges[1].Request.Path != "/run_sse" {
		t.Fatalf("fixture upstream %q, first requests %s, %s", fx.Upstream, fx.Exchanges[0].Request.Path, fx.Exchanges[1].Request.Path)
	}
	if out, err := runCmd(t, nil, "replay", "-check", path); err != nil || !strings.HasPrefix(out, "ok ") {
		t.Fatalf("replay -check: %v\n%s", err, out)
	}
	return raw
}

// hangBound is how long a test waits for what must happen soon.
const hangBound = 10 * time.Second
