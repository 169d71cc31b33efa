package main

import (
	"context"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/container"

	"github.com/brainwire/brainwire/azureblob"
	"github.com/brainwire/brainwire/internal/npmtest"
	"github.com/brainwire/brainwire/recorder"
	"github.com/brainwire/brainwire/replay"
)

// With BRAINWIRE_RECORD_DIR set to a Blob Storage container URL, the live
// recordings of every replica land in that one container (Azurite here),
// each a fixture that replays to what the phone got.
func TestReplicasRecordIntoOneBlobContainer(t *testing.T) {
	srv := npmtest.Start(t, "azurite-blob", "--blobHost", "127.0.0.1", "--blobPort", "{port}", "--location", "{dir}",
		"--skipApiVersionCheck", "--loose", "--disableTelemetry", "--silent")
	accountURL := "http://" + srv.Addr + "/devstoreaccount1"
	conn := strings.Replace(azureblob.DevConnectionString, "http://127.0.0.1:10000/devstoreaccount1", accountURL, 1)
	env := map[string]string{
		"BRAINWIRE_RECORD_DIR":            accountURL + "/live-fixtures",
		"AZURE_STORAGE_CONNECTION_STRING": conn,
		"AZURE_AI_PROJECT_TOKEN":          recordToken,
	}
	var live []string
	for i, text := range []string{"Call mom about her birthday", "Finish the launch deck before Friday"} {
		r, err := startReplica(t, env, false)
		if err != nil {
			t.Fatalf("replica %d: %v", i, err)
		}
		ans := call(t, r, http.MethodPost, "/api/capture", `{"text":"`+text+`"}`)
		if ans.status != http.StatusOK {
			t.Fatalf("replica %d: %d %s", i, ans.status, ans.body)
		}
		live = append(live, ans.body)
		if err := r.stop(); err != nil { // writes out what is queued
			t.Fatalf("replica %d: %v", i, err)
		}
	}

	cfg, err := azureblob.ConfigFromConnectionString(conn, "live-fixtures")
	if err != nil {
		t.Fatal(err)
	}
	cred, _ := container.NewSharedKeyCredential(cfg.AccountName, cfg.AccountKey)
	cc, err := container.NewClientWithSharedKeyCredential(accountURL+"/live-fixtures", cred, nil)
	if err != nil {
		t.Fatal(err)
	}
	st, err := azureblob.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	var replayed []string
	pager := cc.NewListBlobsFlatPager(nil)
	for pager.More() {
		page, err := pager.NextPage(ctx)
		if err != nil {
			t.Fatal(err)
		}
		for _, b := range page.Segment.BlobItems {
			if !strings.HasSuffix(*b.Name, ".json") {
				t.Errorf("blob %s is not a fixture", *b.Name)
			}
			rc, _, err := st.Open(ctx, st.URL()+"/"+*b.Name)
			if err != nil {
				t.Fatal(err)
			}
			raw, _ := io.ReadAll(rc)
			rc.Close()
			if strings.Contains(string(raw), recordToken) || strings.Contains(string(raw), cfg.AccountKey) {
				t.Fatalf("%s holds a secret", *b.Name)
			}
			fx, err := recorder.Unmarshal(raw)
			if err != nil {
				t.Fatalf("%s: %v", *b.Name, err)
			}
			res, err := replay.Run(ctx, fx, replay.Options{})
			if err != nil {
				t.Fatalf("replaying %s: %v", *b.Name, err)
			}
			replayed = append(replayed, uuidRE.ReplaceAllString(string(res.SSE), "<id>"))
		}
	}
	if len(replayed) != len(live) {
		t.Fatalf("%d recordings in the container, want %d", len(replayed), len(live))
	}
	for _, l := range live {
		found := false
		for _, r := range replayed {
			found = found || r == uuidRE.ReplaceAllString(l, "<id>")
		}
		if !found {
			t.Errorf("no recording replays to the live capture:\n%s", l)
		}
	}
}

func TestRecordingSinkRefusesBadContainerURLs(t *testing.T) {
	for _, target := range []string{
		"https://acct.blob.core.windows.net",
		"https://acct.blob.core.windows.net/Bad_Name",
		"https://acct.blob.core.windows.net/fixtures?sv=2024-01-01&sig=secret",
	} {
		if _, err := recordingSink(t.Context(), target, envFunc(nil)); err == nil {
			t.Errorf("%s accepted", target)
		} else if strings.Contains(err.Error(), "secret") {
			t.Errorf("the error repeats the SAS signature: %v", err)
		}
	}
}
