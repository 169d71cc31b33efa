package azureblob_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/policy"

	"github.com/brainwire/brainwire"
	"github.com/brainwire/brainwire/azureblob"
	"github.com/brainwire/brainwire/blobtest"
	"github.com/brainwire/brainwire/internal/npmtest"
)

// TestAzurite runs every test that needs Blob Storage against one Azurite,
// started once for the package.
func TestAzurite(t *testing.T) {
	srv := npmtest.Start(t, "azurite-blob",
		"--blobHost", "127.0.0.1", "--blobPort", "{port}", "--location", "{dir}",
		// The SDK speaks a newer REST version than Azurite knows of.
		"--skipApiVersionCheck", "--loose",
		"--disableTelemetry", "--silent")
	cfg, err := azureblob.ConfigFromConnectionString(azureblob.DevConnectionString, "audio")
	if err != nil {
		t.Fatal(err)
	}
	cfg.AccountURL = "http://" + srv.Addr + "/devstoreaccount1"

	store := func(t *testing.T, container string) *azureblob.Store {
		t.Helper()
		c := cfg
		c.Container = container
		s, err := azureblob.New(c)
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	s := store(t, "audio")
	for range 2 { // the second call finds the container there
		if err := s.EnsureContainer(t.Context()); err != nil {
			t.Fatalf("EnsureContainer: %v", err)
		}
	}

	var containers atomic.Int64
	t.Run("Conformance", func(t *testing.T) {
		blobtest.Run(t, func(t *testing.T) brainwire.BlobStore {
			s := store(t, fmt.Sprintf("conformance-%d", containers.Add(1)))
			if err := s.EnsureContainer(t.Context()); err != nil {
				t.Fatalf("EnsureContainer: %v", err)
			}
			return s
		})
	})
	t.Run("URL", func(t *testing.T) { testURL(t, s, cfg.AccountURL) })
	t.Run("ForeignURLs", func(t *testing.T) { testForeignURLs(t, s, store(t, "other"), srv.Addr) })
	t.Run("MissingContainer", func(t *testing.T) { testMissingContainer(t, store(t, "never-created")) })
}

// testURL checks that a blob's URL is the blob's own URL in the service,
// which a client with access to the container could fetch directly.
func testURL(t *testing.T, s *azureblob.Store, accountURL string) {
	u, err := s.Put(t.Context(), "capture-1.wav", "audio/wav", strings.NewReader("audio"))
	if err != nil {
		t.Fatalf("Put: %v", err)
	}
	if want := accountURL + "/audio/capture-1.wav"; u != want {
		t.Errorf("Put returned %q, want %q", u, want)
	}
	if s.URL() != accountURL+"/audio" {
		t.Errorf("URL() = %q, want %q", s.URL(), accountURL+"/audio")
	}
}

// testForeignURLs tries URLs of other containers, accounts and hosts; the
// conformance suite covers the ones any store must refuse.
func testForeignURLs(t *testing.T, s, other *azureblob.Store, addr string) {
	ctx := t.Context()
	if err := other.EnsureContainer(ctx); err != nil {
		t.Fatal(err)
	}
	// A real blob in another container of the same account.
	theirs, err := other.Put(ctx, "theirs.wav", "audio/wav", strings.NewReader("theirs"))
	if err != nil {
		t.Fatal(err)
	}
	mine, err := s.Put(ctx, "mine.wav", "audio/wav", strings.NewReader("mine"))
	if err != nil {
		t.Fatal(err)
	}
	base := s.URL()
	blobtest.Refuses(t, s, []string{
		theirs,
		base + "/../other/theirs.wav",
		base + "/..%2Fother%2Ftheirs.wav",
		"http://" + addr + "/otheraccount/audio/mine.wav",
		"http://localhost" + addr[strings.LastIndex(addr, ":"):] + "/devstoreaccount1/audio/mine.wav",
		"https://" + addr + "/devstoreaccount1/audio/mine.wav",
		"http://user@" + addr + "/devstoreaccount1/audio/mine.wav",
		"https://evil.example/devstoreaccount1/audio/mine.wav",
		mine + "?snapshot=2024-01-01T00:00:00.0000000Z",
		mine + "?sv=2020-01-01&sig=abc",
		"file:///tmp/mine.wav",
	})
	if got, _ := blobtest.Read(t, other, theirs); string(got) != "theirs" {
		t.Errorf("the other container's blob now holds %q", got)
	}
	if got, _ := blobtest.Read(t, s, mine); string(got) != "mine" {
		t.Errorf("own blob now holds %q", got)
	}
}

func testMissingContainer(t *testing.T, s *azureblob.Store) {
	ctx := t.Context()
	_, err := s.Put(ctx, "x.wav", "audio/wav", strings.NewReader("x"))
	if brainwire.ErrorCode(err) != brainwire.EUnavailable {
		t.Errorf("Put into a missing container: err = %v, want code %s", err, brainwire.EUnavailable)
	}
	u := s.URL() + "/x.wav"
	if _, _, err := s.Open(ctx, u); brainwire.ErrorCode(err) != brainwire.ENotFound {
		t.Errorf("Open in a missing container: err = %v, want code %s", err, brainwire.ENotFound)
	}
	if err := s.Delete(ctx, u); err != nil {
		t.Errorf("Delete in a missing container: %v", err)
	}
}

// fakeCredential hands out a fixed token and records the scopes asked for.
type fakeCredential struct {
	mu     sync.Mutex
	scopes []string
}

func (c *fakeCredential) GetToken(_ context.Context, opts policy.TokenRequestOptions) (azcore.AccessToken, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.scopes = append(c.scopes, opts.Scopes...)
	return azcore.AccessToken{Token: "entra-token", ExpiresOn: time.Now().Add(time.Hour)}, nil
}

// TestTokenCredential checks that a store configured with an Entra ID
// credential authenticates with a storage-scoped bearer token.
func TestTokenCredential(t *testing.T) {
	var (
		mu   sync.Mutex
		seen []string
	)
	srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		seen = append(seen, r.Method+" "+r.URL.Path+" "+r.Header.Get("Authorization"))
		mu.Unlock()
		w.Header().Set("x-ms-request-id", "1")
		w.WriteHeader(http.StatusAccepted)
	}))
	defer srv.Close()

	cred := &fakeCredential{}
	s, err := azureblob.New(azureblob.Config{
		AccountURL:      srv.URL,
		Container:       "audio",
		TokenCredential: cred,
		HTTPClient:      srv.Client(),
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Delete(t.Context(), srv.URL+"/audio/x.wav"); err != nil {
		t.Fatalf("Delete: %v", err)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(seen) != 1 || seen[0] != "DELETE /audio/x.wav Bearer entra-token" {
		t.Errorf("requests = %q, want one DELETE with the bearer token", seen)
	}
	cred.mu.Lock()
	defer cred.mu.Unlock()
	if len(cred.scopes) == 0 || cred.scopes[0] != "https://storage.azure.com/.default" {
		t.Errorf("token scopes = %q", cred.scopes)
	}
}

func TestNewRejectsBadConfig(t *testing.T) {
	ok := azureblob.Config{AccountURL: "https://acct.blob.core.windows.net", Container: "audio", AccountName: "acct", AccountKey: "a2V5"}
	if _, err := azureblob.New(ok); err != nil {
		t.Fatalf("New(valid config): %v", err)
	}
	for name, mutate := range map[string]func(*azureblob.Config){
		"no URL":            func(c *azureblob.Config) { c.AccountURL = "" },
		"relative URL":      func(c *azureblob.Config) { c.AccountURL = "acct.blob.core.windows.net" },
		"ftp URL":           func(c *azureblob.Config) { c.AccountURL = "ftp://acct.blob.core.windows.net" },
		"SAS in URL":        func(c *azureblob.Config) { c.AccountURL += "?sv=1&sig=x" },
		"no container":      func(c *azureblob.Config) { c.Container = "" },
		"upper container":   func(c *azureblob.Config) { c.Container = "Audio" },
		"short container":   func(c *azureblob.Config) { c.Container = "au" },
		"double hyphen":     func(c *azureblob.Config) { c.Container = "au--dio" },
		"no credential":     func(c *azureblob.Config) { c.AccountKey = "" },
		"key without name":  func(c *azureblob.Config) { c.AccountName = "" },
		"key not base64":    func(c *azureblob.Config) { c.AccountKey = "not base64!" },
		"two credentials":   func(c *azureblob.Config) { c.TokenCredential = &fakeCredential{} },
		"container in path": func(c *azureblob.Config) { c.Container = "a/b" },
	} {
		c := ok
		mutate(&c)
		if _, err := azureblob.New(c); err == nil {
			t.Errorf("%s: New succeeded", name)
		}
	}
}

func TestConfigFromConnectionString(t *testing.T) {
	dev, err := azureblob.ConfigFromConnectionString(azureblob.DevConnectionString, "audio")
	if err != nil {
		t.Fatal(err)
	}
	if dev.AccountURL != "http://127.0.0.1:10000/devstoreaccount1" || dev.AccountName != "devstoreaccount1" ||
		dev.Container != "audio" || !strings.HasPrefix(dev.AccountKey, "Eby8") || !strings.HasSuffix(dev.AccountKey, "==") {
		t.Errorf("dev config = %+v", dev)
	}
	short, err := azureblob.ConfigFromConnectionString("UseDevelopmentStorage=true", "audio")
	if err != nil || short != dev {
		t.Errorf("UseDevelopmentStorage=true gave %+v, %v; want %+v", short, err, dev)
	}

	prod, err := azureblob.ConfigFromConnectionString(
		"DefaultEndpointsProtocol=https;AccountName=brainwire;AccountKey=a2V5PQ==;EndpointSuffix=core.windows.net", "audio")
	if err != nil {
		t.Fatal(err)
	}
	if prod.AccountURL != "https://brainwire.blob.core.windows.net" || prod.AccountKey != "a2V5PQ==" || prod.AccountName != "brainwire" {
		t.Errorf("prod config = %+v", prod)
	}
	sovereign, err := azureblob.ConfigFromConnectionString(" accountname=x ; accountkey=eQ== ; endpointsuffix=core.chinacloudapi.cn ;", "c1a")
	if err != nil || sovereign.AccountURL != "https://x.blob.core.chinacloudapi.cn" {
		t.Errorf("sovereign config = %+v, %v", sovereign, err)
	}

	for _, bad := range []string{
		"",
		";;",
		"AccountName=x",
		"AccountKey=eQ==",
		"garbage",
		"BlobEndpoint=https://x.blob.core.windows.net;SharedAccessSignature=sv=2020&sig=abc",
	} {
		if _, err := azureblob.ConfigFromConnectionString(bad, "audio"); err == nil {
			t.Errorf("ConfigFromConnectionString(%q) succeeded", bad)
		} else if strings.Contains(err.Error(), "sig=abc") {
			t.Errorf("error echoes a secret: %v", err)
		}
	}
}
