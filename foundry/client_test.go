package foundry_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/brainwire/brainwire"
	"github.com/brainwire/brainwire/foundry"
	"github.com/brainwire/brainwire/foundry/foundrytest"
)

func TestClientCalls(t *testing.T) {
	srv := foundrytest.NewServer(t)
	c, err := foundry.NewClient(srv.Endpoint()+"/", srv.Client(), foundry.WithAPIVersion("2025-05-15-preview"))
	if err != nil {
		t.Fatal(err)
	}
	ctx := t.Context()

	run, err := c.GetRun(ctx, "thread_1", "run_1")
	if err != nil || run.ID != "run_1" || run.ThreadID != "thread_1" || run.Status != "in_progress" || run.AssistantID == "" {
		t.Fatalf("GetRun: %+v, %v", run, err)
	}
	run, err = c.CancelRun(ctx, "thread_1", "run_1")
	if err != nil || run.Status != "cancelling" {
		t.Fatalf("CancelRun: %+v, %v", run, err)
	}
	if run, _ := c.GetRun(ctx, "thread_1", "run_1"); run.Status != "cancelling" {
		t.Fatalf("GetRun after cancel: %s", run.Status)
	}

	want := []string{"GET /threads/thread_1/runs/run_1", "POST /threads/thread_1/runs/run_1/cancel", "GET /threads/thread_1/runs/run_1"}
	reqs := srv.Requests()
	if len(reqs) != len(want) {
		t.Fatalf("requests %v", reqs)
	}
	for i, r := range reqs {
		if r.String() != want[i] || r.Query.Get("api-version") != "2025-05-15-preview" || len(r.Query) != 1 {
			t.Errorf("request %d: %s ?%s, want %s", i, r, r.Query.Encode(), want[i])
		}
	}
	for i := range reqs {
		if len(reqs[i].RawBody) != 0 || reqs[i].Header.Get("Content-Type") != "" {
			t.Errorf("%s with a body: %q", reqs[i], reqs[i].RawBody)
		}
	}
}

func TestClientStreamWantsEventStream(t *testing.T) {
	r := foundrytest.NewRun("thread_1", "run_1")
	srv := foundrytest.NewServer(t, foundrytest.Expect("POST /threads/runs", foundrytest.JSON(200, r.Object("queued"))))
	c, _ := foundry.NewClient(srv.Endpoint(), srv.Client())
	_, err := c.CreateThreadAndRun(t.Context(), foundry.CreateThreadAndRunRequest{AssistantID: "a"})
	if err == nil || !strings.Contains(err.Error(), "expected an event stream, got application/json") || brainwire.ErrorCode(err) != brainwire.EUpstream {
		t.Fatalf("got %v", err)
	}
}

func TestAPIErrorBodies(t *testing.T) {
	long := strings.Repeat("é", 2100) // 4200 bytes, cut on a rune boundary
	longMessage := strings.Repeat("é", 300)
	tests := []struct {
		name string
		resp foundrytest.Response
		want foundry.APIError
	}{
		{"full", foundrytest.JSON(429, `{"error":{"message":"Too many","type":"rate_limit","param":"x","code":"429"}}`),
			foundry.APIError{Service: "foundry", StatusCode: 429, Message: "Too many", Type: "rate_limit", Param: "x", Code: "429"}},
		{"nulls and numbers", foundrytest.JSON(400, `{"error":{"message":"Bad","type":null,"param":null,"code":400}}`),
			foundry.APIError{Service: "foundry", StatusCode: 400, Message: "Bad", Code: "400"}},
		{"error string", foundrytest.JSON(403, `{"error":"Forbidden"}`), foundry.APIError{Service: "foundry", StatusCode: 403, Message: "Forbidden"}},
		{"long message", foundrytest.JSON(400, `{"error":{"message":"`+longMessage+`"}}`),
			foundry.APIError{Service: "foundry", StatusCode: 400, Message: longMessage[:512] + "…"}},
		{"no message", foundrytest.JSON(500, `{"error":{"code":"server_error"}}`),
			foundry.APIError{Service: "foundry", StatusCode: 500, Code: "server_error", Body: `{"error":{"code":"server_error"}}`}},
		{"empty", foundrytest.Raw(503, "text/plain", ""), foundry.APIError{Service: "foundry", StatusCode: 503}},
		{"long text", foundrytest.Raw(500, "text/plain", long), foundry.APIError{Service: "foundry", StatusCode: 500, Body: long[:4096] + "…"}},
		{"a gateway's page", foundrytest.Raw(http.StatusBadGateway, "text/html", "<html>Bad gateway</html>"),
			foundry.APIError{Service: "foundry", StatusCode: 502, Body: "<html>Bad gateway</html>"}},
		{"top-level message", foundrytest.JSON(http.StatusUnauthorized, `{"statusCode":401,"message":"Access denied due to invalid subscription key."}`),
			foundry.APIError{Service: "foundry", StatusCode: 401, Message: "Access denied due to invalid subscription key."}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv := foundrytest.NewServer(t, foundrytest.Expect("GET /threads/t/runs/r", tt.resp))
			c, _ := foundry.NewClient(srv.Endpoint(), srv.Client())
			_, err := c.GetRun(t.Context(), "t", "r")
			var apiErr *foundry.APIError
			if !errors.As(err, &apiErr) {
				t.Fatalf("got %v", err)
			}
			if *apiErr != tt.want {
				t.Fatalf("got %+v\nwant %+v", *apiErr, tt.want)
			}
			// People get the service's own message, or only the status:
			// never the body.
			code, msg := brainwire.EUpstream, tt.want.Message
			if msg == "" {
				msg = fmt.Sprintf("it answered %d %s", tt.want.StatusCode, http.StatusText(tt.want.StatusCode))
			}
			switch tt.want.StatusCode {
			case http.StatusUnauthorized, http.StatusForbidden:
				// A refused credential is brainwire's failure to sign in.
				code, msg = brainwire.EUpstreamAuth, "brainwire could not sign in to the agent service"
			case http.StatusTooManyRequests:
				// A service asking to be called later is busy.
				code, msg = brainwire.EBusy, "The agent service is busy; try again later"
			}
			var be *brainwire.Error
			if !errors.As(err, &be) || be.Code != code || be.Message != msg {
				t.Fatalf("brainwire error %+v, want %s %q", be, code, msg)
			}
			if !strings.Contains(err.Error(), "getting run r") || !strings.Contains(err.Error(), tt.want.Message+tt.want.Body) {
				t.Fatalf("error %q", err)
			}
		})
	}
}

func TestProviderPingGetsTheAgent(t *testing.T) {
	up := foundrytest.NewServer(t,
		foundrytest.Expect("GET /assistants/asst_ok", foundrytest.JSON(200, map[string]any{"id": "asst_ok", "object": "assistant", "name": "Classifier"})),
		foundrytest.Expect("GET /assistants/asst_gone", foundrytest.Error(404, "not_found", "No assistant found with id 'asst_gone'.")),
	)
	c, err := foundry.NewClient(up.Endpoint(), up.Client())
	if err != nil {
		t.Fatal(err)
	}
	if err := mustProvider(t, c, "asst_ok").Ping(context.Background()); err != nil {
		t.Fatalf("ping: %v", err)
	}
	err = mustProvider(t, c, "asst_gone").Ping(context.Background())
	var apiErr *foundry.APIError
	if !errors.As(err, &apiErr) || apiErr.StatusCode != 404 || apiErr.Code != "not_found" {
		t.Fatalf("ping of a missing agent: %v", err)
	}
}

func TestProviderDescribesTheAgent(t *testing.T) {
	tools := []any{map[string]any{"type": "function", "function": map[string]any{"name": "file_capture", "parameters": map[string]any{"type": "object"}}}}
	agent := func(id string, metadata map[string]any) map[string]any {
		return map[string]any{"id": id, "object": "assistant", "created_at": 1735689600, "name": "Classifier",
			"description": "Files captures", "model": "gpt-4o", "instructions": "Classify each capture.",
			"tools": tools, "tool_resources": map[string]any{}, "temperature": 1, "top_p": 1, "metadata": metadata}
	}
	up := foundrytest.NewServer(t,
		foundrytest.Expect("GET /assistants/asst_v", foundrytest.JSON(200, agent("asst_v", map[string]any{"version": "2025-06-01", "owner": "me"}))),
		foundrytest.Expect("GET /assistants/asst_h", foundrytest.JSON(200, agent("asst_h", map[string]any{}))),
		foundrytest.Expect("GET /assistants/asst_bare", foundrytest.JSON(200, map[string]any{"id": "asst_bare", "object": "assistant", "model": "gpt-4o", "instructions": "", "tools": nil, "metadata": nil})),
		foundrytest.Expect("GET /assistants/asst_gone", foundrytest.Error(404, "not_found", "No assistant found with id 'asst_gone'.")),
		foundrytest.Expect("GET /assistants/asst_bad", foundrytest.JSON(200, map[string]any{"id": "asst_bad", "metadata": map[string]any{"version": 3}})),
	)
	c, err := foundry.NewClient(up.Endpoint(), up.Client())
	if err != nil {
		t.Fatal(err)
	}
	describe := func(id string) (brainwire.AgentInfo, error) {
		return mustProvider(t, c, id).DescribeAgent(t.Context())
	}

	v, err := describe("asst_v")
	if err != nil {
		t.Fatal(err)
	}
	if v.Version != "2025-06-01" || v.ID != "asst_v" || v.Name != "Classifier" || v.Model != "gpt-4o" || v.Instructions != "Classify each capture." {
		t.Errorf("declared version: %+v", v)
	}
	if v.InstructionsHash != brainwire.HashInstructions("Classify each capture.", v.Tools, "gpt-4o") || !strings.Contains(string(v.Tools), "file_capture") {
		t.Errorf("hash %s of tools %s", v.InstructionsHash, v.Tools)
	}
	h, err := describe("asst_h")
	if err != nil {
		t.Fatal(err)
	}
	if h.Version != h.InstructionsHash || h.InstructionsHash != v.InstructionsHash {
		t.Errorf("undeclared version %q, hash %q: want the hash, equal to the declared agent's %q", h.Version, h.InstructionsHash, v.InstructionsHash)
	}
	bare, err := describe("asst_bare")
	if err != nil {
		t.Fatal(err)
	}
	if bare.Tools != nil || bare.Version == "" || bare.Version != brainwire.HashInstructions("", nil, "gpt-4o") {
		t.Errorf("agent without tools or metadata: %+v", bare)
	}
	if _, err := describe("asst_gone"); err == nil {
		t.Error("missing agent described")
	}
	if _, err := describe("asst_bad"); err == nil {
		t.Error("metadata with a non-string value decoded")
	}
	if got := up.Requests()[0]; got.Method != "GET" || got.Query.Get("api-version") == "" {
		t.Errorf("request %v %v", got, got.Query)
	}
}

func TestNewProviderNeedsAnAgent(t *testing.T) {
	c, err := foundry.NewClient("https://r.services.ai.azure.com/api/projects/p", nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := foundry.NewProvider(c, ""); err == nil {
		t.Fatal("a provider without an agent id")
	}
}
