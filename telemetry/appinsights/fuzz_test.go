package appinsights_test

import (
	"net/url"
	"strings"
	"testing"

	"github.com/brainwire/brainwire/telemetry/appinsights"
)

// FuzzParseConnectionString parses any APPLICATIONINSIGHTS_CONNECTION_STRING.
// It must be an error or a connection string with a key and an http(s)
// ingestion endpoint whose TrackURL is that endpoint's /v2/track; and
// writing the result back as a connection string must parse to the same.
func FuzzParseConnectionString(f *testing.F) {
	for _, s := range []string{
		"InstrumentationKey=abc-123;IngestionEndpoint=https://westeurope-5.in.applicationinsights.azure.com/;LiveEndpoint=https://westeurope.livediagnostics.monitor.azure.com/;ApplicationId=x",
		" instrumentationkey = abc ; ", "InstrumentationKey=abc;EndpointSuffix=applicationinsights.azure.cn",
		"InstrumentationKey=abc;EndpointSuffix=ai.contoso.com;Location=westus2", "IngestionEndpoint=https://x/",
		"InstrumentationKey=abc;Authorization=AAD", "InstrumentationKey=abc;IngestionEndpoint=ftp://x", "InstrumentationKeyabc",
		"InstrumentationKey=a=b;IngestionEndpoint=http://127.0.0.1:1234", "InstrumentationKey=k;IngestionEndpoint=https://x/path/",
		"InstrumentationKey=k;EndpointSuffix=./;Location=.", "InstrumentationKey=k;InstrumentationKey=;", ";;;", "",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		cs, err := appinsights.ParseConnectionString(s)
		if err != nil {
			return
		}
		if cs.InstrumentationKey == "" || strings.TrimSpace(cs.InstrumentationKey) != cs.InstrumentationKey {
			t.Fatalf("%q: instrumentation key %q", s, cs.InstrumentationKey)
		}
		ep, err := url.Parse(cs.IngestionEndpoint)
		if err != nil || (ep.Scheme != "http" && ep.Scheme != "https") || ep.Host == "" {
			t.Fatalf("%q: ingestion endpoint %q (%v)", s, cs.IngestionEndpoint, err)
		}
		track, err := url.Parse(cs.TrackURL())
		if err != nil || track.Scheme != ep.Scheme || track.Host != ep.Host || !strings.HasSuffix(track.Path, "/v2/track") || track.RawQuery != "" || track.Fragment != "" {
			t.Fatalf("%q: envelopes would go to %q (%v), not the endpoint's /v2/track", s, cs.TrackURL(), err)
		}
		again, err := appinsights.ParseConnectionString("InstrumentationKey=" + cs.InstrumentationKey + ";IngestionEndpoint=" + cs.IngestionEndpoint)
		if err != nil || again != cs {
			t.Fatalf("%q: %+v written back parses to %+v, %v", s, cs, again, err)
		}
	})
}
