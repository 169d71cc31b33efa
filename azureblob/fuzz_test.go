package azureblob_test

import (
	"strings"
	"testing"

	"github.com/brainwire/brainwire/azureblob"
)

// FuzzConfigFromConnectionString parses any AZURE_STORAGE_CONNECTION_STRING.
// It must be an error that echoes no value of the string (an account key or
// a SAS signature may be among them), or a config with an account name, a
// key and an account URL.
func FuzzConfigFromConnectionString(f *testing.F) {
	for _, s := range []string{
		azureblob.DevConnectionString, "UseDevelopmentStorage=true", "usedevelopmentstorage=TRUE;AccountName=x",
		"DefaultEndpointsProtocol=https;AccountName=brainwire;AccountKey=a2V5PQ==;EndpointSuffix=core.windows.net",
		" accountname=x ; accountkey=eQ== ; endpointsuffix=core.chinacloudapi.cn ;", "", ";;", "AccountName=x", "AccountKey=eQ==",
		"garbage", "BlobEndpoint=https://x.blob.core.windows.net;SharedAccessSignature=sv=2020&sig=abc",
		"AccountName=x;AccountKey=secretsecret;=v", "AccountName=x;AccountKey=secretsecret;BlobEndpoint=",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		cfg, err := azureblob.ConfigFromConnectionString(s, "audio")
		if err != nil {
			for part := range strings.SplitSeq(s, ";") {
				_, v, _ := strings.Cut(part, "=")
				if v = strings.TrimSpace(v); len(v) >= 8 && strings.Contains(err.Error(), v) {
					t.Fatalf("%q: the error echoes %q: %v", s, v, err)
				}
			}
			return
		}
		if cfg.AccountName == "" || cfg.AccountKey == "" || cfg.AccountURL == "" || cfg.Container != "audio" {
			t.Fatalf("%q: config %+v", s, cfg)
		}
	})
}
