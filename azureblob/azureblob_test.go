package azureblob_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"io"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/policy"

	"github.com/brainwire/brainwire"
	"github.com/brainwire/brainwire/azureblob"
	"github.com/brainwire/brainwire/internal/npmtest"
	"github.com/brainwire/brainwire/internal/testaudio"
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

	t.Run("RoundTripSpeech", func(t *testing.T) { testRoundTripSpeech(t, s, cfg.AccountURL) })
	t.Run("MultiBlockUpload", func(t *testing.T) { testMultiBlockUpload(t, s) })
	t.Run("ContentTypes", func(t *testing.T) { testContentTypes(t, s) })
	t.Run("Missing", func(t *testing.T) { testMissing(t, s) })
	t.Run("InvalidNames", func(t *testing.T) { testInvalidNames(t, s) })
	t.Run("ForeignURLs", func(t *testing.T) { testForeignURLs(t, s, store(t, "other"), srv.Addr) })
	t.Run("MissingContainer", func(t *testing.T) { testMissingContainer(t, store(t, "never-created")) })
	t.Run("FailedUploadCommitsNothing", func(t *testing.T) { testFailedUpload(t, s) })
	t.Run("Concurrent", func(t *testing.T) { testConcurrent(t, s) })
}

func open(t *testing.T, s *azureblob.Store, u string) ([]byte, brainwire.BlobInfo) {
	t.Helper()
	rc, info, err := s.Open(t.Context(), u)
	if err != nil {
		t.Fatalf("Open(%s): %v", u, err)
	}
	defer rc.Close()
	b, err := io.ReadAll(rc)
	if err != nil {
		t.Fatalf("reading %s: %v", u, err)
	}
	return b, info
}

func testRoundTripSpeech(t *testing.T, s *azureblob.Store, accountURL string) {
	ctx := t.Context()
	wav := testaudio.WAV(t, "Remind me to call Sarah about the garden project on Friday.")

	u, err := s.Put(ctx, "capture-1.wav", "audio/wav", bytes.NewReader(wav))
	if err != nil {
		t.Fatalf("Put: %v", err)
	}
	if want := accountURL + "/audio/capture-1.wav"; u != want {
		t.Errorf("Put returned %q, want %q", u, want)
	}

	got, info := open(t, s, u)
	if !bytes.Equal(got, wav) {
		t.Errorf("downloaded %d bytes differing from the %d uploaded", len(got), len(wav))
	}
	want := brainwire.BlobInfo{Name: "capture-1.wav", ContentType: "audio/wav", Size: int64(len(wav))}
	if info != want {
		t.Errorf("info = %+v, want %+v", info, want)
	}

	if err := s.Delete(ctx, u); err != nil {
		t.Fatalf("Delete: %v", err)
	}
	if _, _, err := s.Open(ctx, u); brainwire.ErrorCode(err) != brainwire.ENotFound {
		t.Errorf("Open after Delete: err = %v, want code %s", err, brainwire.ENotFound)
	}
	if err := s.Delete(ctx, u); err != nil {
		t.Errorf("second Delete: %v, want nil", err)
	}
}

// testMultiBlockUpload sends more than several blocks' worth, so the
// upload is staged block by block and committed as a list.
func testMultiBlockUpload(t *testing.T, s *azureblob.Store) {
	ctx := t.Context()
	data := make([]byte, 3*azureblob.DefaultBlockSize+12345)
	rng := rand.NewChaCha8([32]byte{1})
	_, _ = rng.Read(data)

	// A reader that hides its length, as a request body does.
	u, err := s.Put(ctx, "long.ogg", "audio/ogg", io.MultiReader(bytes.NewReader(data)))
	if err != nil {
		t.Fatalf("Put: %v", err)
	}
	got, info := open(t, s, u)
	if sha256.Sum256(got) != sha256.Sum256(data) {
		t.Errorf("downloaded content differs (%d bytes, want %d)", len(got), len(data))
	}
	if info.Size != int64(len(data)) || info.ContentType != "audio/ogg" {
		t.Errorf("info = %+v", info)
	}
	if err := s.Delete(ctx, u); err != nil {
		t.Fatal(err)
	}
}

func testContentTypes(t *testing.T, s *azureblob.Store) {
	ctx := t.Context()
	for name, ct := range map[string]string{
		"a.webm": "audio/webm;codecs=opus",
		"b.m4a":  "audio/mp4",
		"c.bin":  "",
	} {
		u, err := s.Put(ctx, name, ct, strings.NewReader("x"))
		if err != nil {
			t.Fatalf("Put(%s): %v", name, err)
		}
		want := ct
		if want == "" {
			want = brainwire.DefaultBlobContentType
		}
		if _, info := open(t, s, u); info.ContentType != want {
			t.Errorf("%s: content type = %q, want %q", name, info.ContentType, want)
		}
	}
	if _, err := s.Put(ctx, "d.wav", "audio/", strings.NewReader("x")); brainwire.ErrorCode(err) != brainwire.EInvalid {
		t.Errorf("Put with a malformed content type: err = %v, want code %s", err, brainwire.EInvalid)
	}
}

func testMissing(t *testing.T, s *azureblob.Store) {
	u := s.URL() + "/never-put.wav"
	if _, _, err := s.Open(t.Context(), u); brainwire.ErrorCode(err) != brainwire.ENotFound {
		t.Errorf("Open of a missing blob: err = %v, want code %s", err, brainwire.ENotFound)
	}
	if err := s.Delete(t.Context(), u); err != nil {
		t.Errorf("Delete of a missing blob: %v", err)
	}
}

func testInvalidNames(t *testing.T, s *azureblob.Store) {
	for _, name := range []string{"", "..", "../other/x.wav", "a/b.wav", `a\b`, "/x.wav", ".hidden", "a b", "x?y", "x#y", "%2e%2e",
		strings.Repeat("n", brainwire.MaxBlobNameLen+1)} {
		if _, err := s.Put(t.Context(), name, "audio/wav", strings.NewReader("x")); brainwire.ErrorCode(err) != brainwire.EInvalid {
			t.Errorf("Put(%q): err = %v, want code %s", name, err, brainwire.EInvalid)
		}
	}
}

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
	for _, raw := range []string{
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
		mine + "#x",
		base,
		base + "/",
		base + "/sub/mine.wav",
		"file:///tmp/mine.wav",
		"mine.wav",
		"",
	} {
		if _, _, err := s.Open(ctx, raw); brainwire.ErrorCode(err) != brainwire.EInvalid {
			t.Errorf("Open(%q): err = %v, want code %s", raw, err, brainwire.EInvalid)
		}
		if err := s.Delete(ctx, raw); brainwire.ErrorCode(err) != brainwire.EInvalid {
			t.Errorf("Delete(%q): err = %v, want code %s", raw, err, brainwire.EInvalid)
		}
	}
	if got, _ := open(t, other, theirs); string(got) != "theirs" {
		t.Errorf("the other container's blob now holds %q", got)
	}
	if got, _ := open(t, s, mine); string(got) != "mine" {
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

// brokenReader yields n bytes, then fails like an upload cut off.
type brokenReader struct{ n int }

func (r *brokenReader) Read(p []byte) (int, error) {
	if r.n == 0 {
		return 0, io.ErrUnexpectedEOF
	}
	n := min(len(p), r.n)
	clear(p[:n])
	r.n -= n
	return n, nil
}

func testFailedUpload(t *testing.T, s *azureblob.Store) {
	ctx := t.Context()
	u, err := s.Put(ctx, "kept.wav", "audio/wav", strings.NewReader("old"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Put(ctx, "kept.wav", "audio/mpeg", &brokenReader{n: 2*azureblob.DefaultBlockSize + 10}); err == nil {
		t.Fatal("Put from a failing reader succeeded")
	}
	if got, info := open(t, s, u); string(got) != "old" || info.ContentType != "audio/wav" {
		t.Errorf("after a failed replace: %q %+v, want the old blob", got, info)
	}
	if _, err := s.Put(ctx, "never.wav", "audio/wav", &brokenReader{n: 100}); err == nil {
		t.Fatal("Put from a failing reader succeeded")
	}
	if _, _, err := s.Open(ctx, s.URL()+"/never.wav"); brainwire.ErrorCode(err) != brainwire.ENotFound {
		t.Errorf("Open of a failed upload: err = %v, want code %s", err, brainwire.ENotFound)
	}
}

func testConcurrent(t *testing.T, s *azureblob.Store) {
	ctx := t.Context()
	var wg sync.WaitGroup
	for i := range 6 {
		wg.Go(func() {
			name := string(rune('a'+i)) + ".wav"
			body := strings.Repeat(name, 1000)
			u, err := s.Put(ctx, name, "audio/wav", strings.NewReader(body))
			if err != nil {
				t.Errorf("Put(%s): %v", name, err)
				return
			}
			rc, _, err := s.Open(ctx, u)
			if err != nil {
				t.Errorf("Open(%s): %v", name, err)
				return
			}
			defer rc.Close()
			if got, err := io.ReadAll(rc); err != nil || string(got) != body {
				t.Errorf("%s: read %d bytes, err %v", name, len(got), err)
			}
			if err := s.Delete(ctx, u); err != nil {
				t.Errorf("Delete(%s): %v", name, err)
			}
		})
	}
	wg.Wait()
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
