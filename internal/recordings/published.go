package recordings

import (
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"

	"go.yaml.in/yaml/v4"
)

// The published recordings are streams of the Responses API that others
// recorded from OpenAI (api.openai.com) and Azure OpenAI
// (<resource>.openai.azure.com/openai/v1) and published as the test data
// of a Go module: go-vcr cassettes, one per test, each holding the test's
// HTTP exchanges with the service in order (a tool round is two). They are
// read where `go mod download` puts the module, in the module cache, and
// never copied into this repository.
//
// Source: charm.land/fantasy (github.com/charmbracelet/fantasy), Apache
// License 2.0, directory providertests/testdata.
const (
	PublishedModule  = "charm.land/fantasy"
	PublishedVersion = "v0.41.2"
	// publishedSum is the module's checksum (go.sum's h1: line): the
	// recordings read are exactly those this package was written against.
	publishedSum = "h1:ML6LCJwFHLaKb521rVY6jXOJNsf9koIJtcnY0O1GKsU="
	// publishedDir is where the module keeps its cassettes.
	publishedDir = "providertests/testdata"
)

var published struct {
	once sync.Once
	dir  string
	err  error
}

// PublishedDir returns the directory of the published cassettes,
// downloading the module into the module cache on first use (the Go
// module proxy must be reachable, or the module already cached). Without
// it the test is skipped, or fails under CI, where it must be there.
func PublishedDir(t testing.TB) string {
	t.Helper()
	published.once.Do(func() { published.dir, published.err = downloadPublished() })
	if published.err != nil {
		if os.Getenv("CI") != "" {
			t.Fatalf("published recordings: %v", published.err)
		}
		t.Skipf("published recordings: %v", published.err)
	}
	return published.dir
}

// downloadPublished runs `go mod download -json` outside any module, so
// that this repository's go.mod and go.sum are neither read nor changed.
func downloadPublished() (string, error) {
	gobin, err := exec.LookPath("go") // go test puts its own first on PATH
	if err != nil {
		return "", err
	}
	tmp, err := os.MkdirTemp("", "brainwire-recordings-*")
	if err != nil {
		return "", err
	}
	defer os.RemoveAll(tmp)
	mod := PublishedModule + "@" + PublishedVersion
	cmd := exec.Command(gobin, "mod", "download", "-json", mod)
	cmd.Dir = tmp
	cmd.Env = append(os.Environ(), "GOFLAGS=", "GOWORK=off", "GO111MODULE=on")
	out, err := cmd.Output()
	var info struct {
		Dir, Sum, Error string
	}
	if jerr := json.Unmarshal(out, &info); jerr != nil {
		if err == nil {
			err = jerr
		}
		msg := ""
		if ee, ok := err.(*exec.ExitError); ok {
			msg = strings.TrimSpace(string(ee.Stderr))
		}
		return "", fmt.Errorf("go mod download %s: %v %s", mod, err, msg)
	}
	switch {
	case info.Error != "":
		return "", fmt.Errorf("go mod download %s: %s", mod, info.Error)
	case info.Sum != publishedSum:
		return "", fmt.Errorf("%s has checksum %s, want %s", mod, info.Sum, publishedSum)
	}
	dir := filepath.Join(info.Dir, filepath.FromSlash(publishedDir))
	if _, err := os.Stat(dir); err != nil {
		return "", err
	}
	return dir, nil
}

// Exchange is one recorded HTTP exchange.
type Exchange struct {
	Method      string
	URL         string
	RequestBody string
	Status      int
	ContentType string
	// Body is the response body as the service sent it: for a stream,
	// its bytes, event after event.
	Body string
}

// Host is the host the request went to (api.openai.com,
// <resource>.openai.azure.com).
func (e Exchange) Host() string {
	rest, _ := strings.CutPrefix(e.URL, "https://")
	host, _, _ := strings.Cut(rest, "/")
	return host
}

// cassette is the part of a go-vcr cassette (version 2) read here.
type cassette struct {
	Version      int `yaml:"version"`
	Interactions []struct {
		Request struct {
			Body   string `yaml:"body"`
			URL    string `yaml:"url"`
			Method string `yaml:"method"`
		} `yaml:"request"`
		Response struct {
			Body    string              `yaml:"body"`
			Headers map[string][]string `yaml:"headers"`
			Code    int                 `yaml:"code"`
		} `yaml:"response"`
	} `yaml:"interactions"`
}

// ReadCassette reads the exchanges of the published cassette at rel, a
// path under PublishedDir.
func ReadCassette(t testing.TB, rel string) []Exchange {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(PublishedDir(t), filepath.FromSlash(rel)))
	if err != nil {
		t.Fatal(err)
	}
	var c cassette
	if err := yaml.Unmarshal(b, &c); err != nil {
		t.Fatalf("%s: %v", rel, err)
	}
	if c.Version != 2 {
		t.Fatalf("%s: cassette version %d, want 2", rel, c.Version)
	}
	out := make([]Exchange, len(c.Interactions))
	for i, in := range c.Interactions {
		h := http.Header(in.Response.Headers)
		out[i] = Exchange{
			Method:      in.Request.Method,
			URL:         in.Request.URL,
			RequestBody: in.Request.Body,
			Status:      in.Response.Code,
			ContentType: h.Get("Content-Type"),
			Body:        in.Response.Body,
		}
	}
	return out
}

// ResponsesStreams lists the published cassettes of streamed Responses
// API calls (POST .../v1/responses answered with an event stream, every
// exchange of the cassette), as paths under PublishedDir, sorted.
func ResponsesStreams(t testing.TB) []string {
	t.Helper()
	dir := PublishedDir(t)
	paths, err := filepath.Glob(filepath.Join(dir, "Test*Responses*", "*", "*.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, p := range paths {
		rel, err := filepath.Rel(dir, p)
		if err != nil {
			t.Fatal(err)
		}
		rel = filepath.ToSlash(rel)
		exs := ReadCassette(t, rel)
		streamed := len(exs) > 0
		for _, ex := range exs {
			if ex.Method != http.MethodPost || !strings.HasSuffix(ex.URL, "/v1/responses") || !strings.HasPrefix(ex.ContentType, "text/event-stream") || ex.Status != http.StatusOK {
				streamed = false
			}
		}
		if streamed {
			out = append(out, rel)
		}
	}
	sort.Strings(out)
	if len(out) == 0 {
		t.Fatalf("no streamed Responses API cassettes under %s", dir)
	}
	return out
}

// Label names a cassette's exchange for test names and messages:
// "TestAzureResponsesCommon/azure-o4-mini/tool_streaming.yaml#2".
func Label(rel string, i int) string { return rel + "#" + strconv.Itoa(i+1) }
