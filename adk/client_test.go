package adk_test

import (
	"net/http"
	"strings"
	"testing"

	"github.com/brainwire/brainwire/adk"
	"github.com/brainwire/brainwire/adk/adktest"
)

// The base URL is read as every provider's is (agenthttp.ParseBase), and
// may carry no credentials of its own.
func TestNewClient(t *testing.T) {
	for _, tt := range []struct {
		url     string
		wantErr string
	}{
		{"http://127.0.0.1:8001", ""},
		{"https://agents.example.com/adk/", ""},
		{"127.0.0.1:8001", "parsing"},
		{"//example.com", "want an absolute http(s) URL"},
		{"ftp://example.com", "want an absolute http(s) URL"},
		{"https://example.com/?key=secret", "want no query"},
		{"https://user:pw@example.com", "want no query, fragment or user info"},
		{"http://[::1", "parsing"},
	} {
		_, err := adk.NewClient(tt.url, nil)
		if tt.wantErr == "" && err != nil || tt.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tt.wantErr)) {
			t.Errorf("%s: err = %v, want %q", tt.url, err, tt.wantErr)
		}
	}
}

func TestNewProviderNeedsAnApp(t *testing.T) {
	c, err := adk.NewClient("http://127.0.0.1:8001", nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := adk.NewProvider(c, ""); err == nil {
		t.Fatal("a provider without an app")
	}
}

// A base URL with a path prefix (a proxy's) prefixes every route, and
// path segments are escaped.
func TestClientPathPrefix(t *testing.T) {
	srv := adktest.NewServer(t,
		adktest.Expect("POST /adk/apps/{app}/users/{user}/sessions", adktest.JSON(http.StatusOK, adktest.Session("s-1", "a", "u"))),
	)
	c, err := adk.NewClient(srv.URL()+"/adk", srv.Client())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.CreateSession(t.Context(), "a", "who/me?"); err != nil {
		t.Fatal(err)
	}
	if p := srv.Requests()[0].Path; p != "/adk/apps/a/users/who%2Fme%3F/sessions" {
		t.Fatalf("path %q", p)
	}
}

func TestCreateSessionWithoutID(t *testing.T) {
	srv := adktest.NewServer(t, adktest.Expect("POST /apps/a/users/u/sessions", adktest.JSON(http.StatusOK, `{"appName":"a"}`)))
	c, _ := adk.NewClient(srv.URL(), srv.Client())
	if _, err := c.CreateSession(t.Context(), "a", "u"); err == nil || !strings.Contains(err.Error(), "has no id") {
		t.Fatalf("err = %v", err)
	}
}

func TestParseHeader(t *testing.T) {
	for _, tt := range []struct {
		in, name, value, wantErr string
	}{
		{"Authorization: Bearer abc", "Authorization", "Bearer abc", ""},
		{" X-API-Key :  k1:k2 ", "X-API-Key", "k1:k2", ""},
		{"Authorization", "", "", "want \"Name: value\""},
		{"Authorization:", "", "", "want \"Name: value\""},
		{": value", "", "", "want \"Name: value\""},
		{"Bad Name: v", "", "", "is not a header name"},
	} {
		name, value, err := adk.ParseHeader(tt.in)
		if tt.wantErr == "" && err != nil || tt.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tt.wantErr)) {
			t.Errorf("%q: err = %v, want %q", tt.in, err, tt.wantErr)
		}
		if name != tt.name || value != tt.value {
			t.Errorf("%q: %q %q", tt.in, name, value)
		}
	}
}
