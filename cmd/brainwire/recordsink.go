package main

import (
	"context"
	"fmt"
	"os"
	"strings"

	"github.com/brainwire/brainwire/azureblob"
	"github.com/brainwire/brainwire/recorder"
)

// recordingSink is where live recordings go: target is a directory, or the
// URL of a Blob Storage container (created if missing), written with the
// account key of AZURE_STORAGE_CONNECTION_STRING when that names the same
// account, else with Entra ID.
func recordingSink(ctx context.Context, target string, getenv func(string) string) (recorder.Sink, error) {
	if !strings.HasPrefix(target, "https://") && !strings.HasPrefix(target, "http://") {
		if err := os.MkdirAll(target, 0o755); err != nil {
			return nil, err
		}
		return recorder.DirSink{Dir: target}, nil
	}
	accountURL, container, err := azureblob.SplitContainerURL(target)
	if err != nil {
		return nil, err
	}
	cfg := azureblob.Config{AccountURL: accountURL, Container: container}
	if conn := getenv("AZURE_STORAGE_CONNECTION_STRING"); conn != "" {
		if kc, err := azureblob.ConfigFromConnectionString(conn, container); err == nil && azureblob.SameAccount(kc.AccountURL, accountURL) {
			cfg.AccountName, cfg.AccountKey = kc.AccountName, kc.AccountKey
		}
	}
	if cfg.AccountKey == "" {
		cred := newCredential()
		c, err := cred()
		if err != nil {
			return nil, fmt.Errorf("Blob Storage credentials for %s (set AZURE_STORAGE_CONNECTION_STRING for that account or configure Entra ID): %w", accountURL, err)
		}
		cfg.TokenCredential = c
	}
	st, err := azureblob.New(cfg)
	if err != nil {
		return nil, err
	}
	if err := st.EnsureContainer(ctx); err != nil {
		return nil, err
	}
	return recorder.BlobSink{Blobs: st}, nil
}
