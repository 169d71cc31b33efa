package main

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/brainwire/brainwire/recorder"
	"github.com/brainwire/brainwire/replay"
)

const recordToken = "tok-9b1e5c0a7d2f4e8b8c3a6f1e0d9c2b7a"

func envFunc(env map[string]string) func(string) string {
	return func(k string) string { return env[k] }
}

func runCmd(t *testing.T, env map[string]string, args ...string) (stdout string, err error) {
	t.Helper()
	var out, errb bytes.Buffer
	err = run(t.Context(), args, envFunc(env), &out, &errb)
	if err != nil {
		t.Logf("brainwire %s: %v\nstderr:\n%s", strings.Join(args, " "), err, errb.String())
	}
	return out.String(), err
}

// TestRecordThenReplay records a capture with `brainwire record` (the
// simulator answering, a static token configured), then replays it with
// `brainwire replay`: the output is the golden file, -check passes, and
// fails with a diff once the golden file no longer matches. The fixture
// holds no trace of the token, which also appears in the capture text.
func TestRecordThenReplay(t *testing.T) {
	dir := t.TempDir()
	env := map[string]string{"AZURE_AI_PROJECT_TOKEN": recordToken}
	out, err := runCmd(t, env, "record", "-sim-chunk-delay", "1ms", "-dir", dir, "-name", "people",
		"-text", "Call mom about her birthday, token "+recordToken)
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, "people.json")
	ssePath, aguiPath, v1Path := replay.GoldenPath(path, replay.CaptureV2), replay.GoldenPath(path, replay.AGUI), replay.GoldenPath(path, replay.V1)
	for _, p := range []string{path, ssePath, dir + "/people" + replay.TelemetryGoldenSuffix, aguiPath, v1Path} {
		if _, err := os.Stat(p); err != nil {
			t.Fatalf("record did not write %s: %v\n%s", p, err, out)
		}
	}
	raw, _ := os.ReadFile(path)
	if bytes.Contains(raw, []byte(recordToken)) {
		t.Fatal("the fixture contains the configured token")
	}
	golden, _ := os.ReadFile(ssePath)
	if !strings.Contains(string(golden), `"type":"CLASSIFIED"`) {
		t.Fatalf("golden = %s", golden)
	}

	printed, err := runCmd(t, env, "replay", path)
	if err != nil || printed != string(golden) {
		t.Fatalf("replay printed\n%s\nwant the golden file\n%s", printed, golden)
	}
	for p, golden := range map[string]string{"agui": aguiPath, "v1": v1Path} {
		want, _ := os.ReadFile(golden)
		if printed, err := runCmd(t, env, "replay", "-protocol", p, path); err != nil || printed != string(want) || !strings.Contains(printed, `"type":"RUN_FINISHED"`) {
			t.Fatalf("replay -protocol %s printed\n%s\nwant the golden file\n%s", p, printed, want)
		}
	}
	if out, err := runCmd(t, env, "replay", "-check", path); err != nil || !strings.HasPrefix(out, "ok ") {
		t.Fatalf("replay -check: %v\n%s", err, out)
	}
	os.WriteFile(ssePath, bytes.Replace(golden, []byte("People"), []byte("Ideas"), 1), 0o644)
	out, err = runCmd(t, env, "replay", "-check", path)
	if err == nil || !strings.Contains(out, "FAIL "+path) || !strings.Contains(out, `-data: {"type":"CLASSIFIED","value":{"inboxItemId":"00000000-0000-4000-8000-000000000003","bucket":"Ideas"`) {
		t.Fatalf("replay -check of a changed golden: err %v\n%s", err, out)
	}
}

func TestRecordFaultsAndVoice(t *testing.T) {
	dir := t.TempDir()
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"-name", "cut", "-cut", "1:8", "-text", "Finish the launch deck"}, `"message":"The agent service failed: the agent service's event stream broke off"`},
		{[]string{"-name", "throttled", "-retries", "0", "-http-error", "1:429", "-text", "Finish the launch deck"}, `"code":"busy","retryAfterSeconds":20}`},
		{[]string{"-name", "voice", "-transcript", "Call my sister about the tickets"}, `"stepName":"Processing"`},
		{[]string{"-name", "utf8", "-split-utf8", "4", "-text", "Lunch with 李明 🍜 on Sunday"}, `"type":"CLASSIFIED"`},
	} {
		out, err := runCmd(t, nil, append([]string{"record", "-sim-chunk-delay", "0", "-dir", dir}, c.args...)...)
		if err != nil || !strings.Contains(out, c.want) {
			t.Errorf("record %v: %v\n%s", c.args, err, out)
		}
	}
	fx, err := recorder.Load(filepath.Join(dir, "utf8.json"))
	if err != nil {
		t.Fatal(err)
	}
	splits := 0
	for _, ex := range fx.Exchanges {
		if ex.Response != nil && ex.Response.IsStream() {
			splits = len(ex.Response.SplitAt) // the first stream's
			break
		}
	}
	if splits != 4 {
		t.Errorf("%d split offsets recorded, want 4", splits)
	}
	if _, err := runCmd(t, nil, "record", "-dir", dir, "-name", "cut", "-text", "again"); err == nil {
		t.Error("record overwrote a fixture without -force")
	}
	var u usageError
	if _, err := runCmd(t, nil, "record", "-dir", dir); !errors.As(err, &u) {
		t.Errorf("record without a capture: %v", err)
	}
}

var uuidRE = regexp.MustCompile(`[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}`)

func TestSecretsFromEnv(t *testing.T) {
	got := secretsFromEnv(envFunc(map[string]string{
		"AZURE_AI_PROJECT_TOKEN":          "tok",
		"AZURE_STORAGE_CONNECTION_STRING": "DefaultEndpointsProtocol=https;AccountName=a;AccountKey=S3cr3tKey==;EndpointSuffix=core.windows.net",
		"BRAINWIRE_API_KEYS":              "phone-key-0123456789:me, other-key-0123456789",
		"ADK_AUTH_HEADER":                 "Authorization: Bearer adk-t0k3n-0123",
	}))
	for _, want := range []string{"tok", "S3cr3tKey==", "phone-key-0123456789", "other-key-0123456789", "Bearer adk-t0k3n-0123", "adk-t0k3n-0123"} {
		if !slices.Contains(got, want) {
			t.Errorf("%q is not among the secrets %q", want, got)
		}
	}
}

// TestServeRecordsLive runs `brainwire serve` with BRAINWIRE_RECORD_DIR,
// on the simulator and on an ADK agent behind a proxy: a capture served
// with production ids (the user's id in the ADK agent's requests) is
// recorded there under its upstream, without the token or the proxy's
// key, and replays to the same bytes up to those ids.
func TestServeRecordsLive(t *testing.T) {
	for _, c := range []struct {
		upstream, secret, path string
		env                    map[string]string
	}{
		{"simulator", recordToken, "", map[string]string{"AZURE_AI_PROJECT_TOKEN": recordToken}},
		{"adk", adkProxyKey, "/users/phone-user/", adkEnv(startADK(t))},
	} {
		t.Run(c.upstream, func(t *testing.T) {
			dir := t.TempDir()
			c.env["BRAINWIRE_RECORD_DIR"], c.env["BRAINWIRE_RECORD_SAMPLE"] = dir, "1"
			live := post(t, startServe(t, c.env), "/api/capture", `{"text":"Call mom about her birthday"}`)
			raw := waitForRecording(t, dir)
			if bytes.Contains(raw, []byte(c.secret)) {
				t.Fatal("the recording holds the secret")
			}
			fx, err := recorder.Unmarshal(raw)
			if err != nil {
				t.Fatal(err)
			}
			if fx.Upstream != c.upstream || !strings.Contains(fx.Exchanges[0].Request.Path, c.path) {
				t.Fatalf("recording upstream %q, first request %s", fx.Upstream, fx.Exchanges[0].Request.Path)
			}
			res, err := replay.Run(t.Context(), fx, replay.Options{})
			if err != nil {
				t.Fatal(err)
			}
			mask := func(b string) string { return uuidRE.ReplaceAllString(b, "<id>") }
			if mask(string(res.SSE)) != mask(live) {
				t.Fatalf("replay differs from the live capture beyond ids:\n%s", replay.Diff(mask(live), mask(string(res.SSE)), "live", "replay"))
			}
		})
	}
}

// waitForRecording waits for the one recording a capture writes to dir
// and returns its bytes.
func waitForRecording(t *testing.T, dir string) []byte {
	t.Helper()
	deadline := time.Now().Add(hangBound)
	var entries []os.DirEntry
	for len(entries) == 0 && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
		all, _ := os.ReadDir(dir)
		entries = entries[:0]
		for _, e := range all {
			// A recording is written under a temporary dot-name first,
			// then renamed.
			if !strings.HasPrefix(e.Name(), ".") {
				entries = append(entries, e)
			}
		}
	}
	if len(entries) != 1 {
		t.Fatalf("%d recordings in %s, want 1", len(entries), dir)
	}
	raw, err := os.ReadFile(filepath.Join(dir, entries[0].Name()))
	if err != nil {
		t.Fatal(err)
	}
	return raw
}
