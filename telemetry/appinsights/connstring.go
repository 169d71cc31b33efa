package appinsights

import (
	"errors"
	"fmt"
	"net/url"
	"strings"
)

// DefaultIngestionEndpoint is used when a connection string names neither
// an IngestionEndpoint nor an EndpointSuffix.
const DefaultIngestionEndpoint = "https://dc.services.visualstudio.com"

// ConnectionString is the part of an Application Insights connection string
// this package uses.
type ConnectionString struct {
	InstrumentationKey string
	// IngestionEndpoint is the ingestion service's base URL, without the
	// /v2/track path.
	IngestionEndpoint string
}

// TrackURL is where envelopes are posted.
func (c ConnectionString) TrackURL() string {
	return strings.TrimRight(c.IngestionEndpoint, "/") + "/v2/track"
}

// ParseConnectionString parses "InstrumentationKey=…;IngestionEndpoint=…"
// as the Azure portal shows it. Keys are case-insensitive; unknown keys
// (LiveEndpoint, ApplicationId, …) are ignored.
func ParseConnectionString(s string) (ConnectionString, error) {
	fields := map[string]string{}
	for part := range strings.SplitSeq(s, ";") {
		part = strings.TrimSpace(part)
		if part == "" {
			continue
		}
		k, v, ok := strings.Cut(part, "=")
		if !ok {
			return ConnectionString{}, fmt.Errorf("connection string: %q is not key=value", redact(part))
		}
		fields[strings.ToLower(strings.TrimSpace(k))] = strings.TrimSpace(v)
	}
	if strings.EqualFold(fields["authorization"], "aad") {
		return ConnectionString{}, errors.New("connection string: Authorization=AAD (Entra ID ingestion) is not supported; use a connection string with local authentication")
	}
	c := ConnectionString{InstrumentationKey: fields["instrumentationkey"]}
	if c.InstrumentationKey == "" {
		return ConnectionString{}, errors.New("connection string: InstrumentationKey is missing")
	}
	switch {
	case fields["ingestionendpoint"] != "":
		c.IngestionEndpoint = fields["ingestionendpoint"]
	case fields["endpointsuffix"] != "":
		host := "dc." + strings.Trim(fields["endpointsuffix"], "./")
		if loc := strings.Trim(fields["location"], "."); loc != "" {
			host = loc + "." + host
		}
		c.IngestionEndpoint = "https://" + host
	default:
		c.IngestionEndpoint = DefaultIngestionEndpoint
	}
	// TrackURL appends the path: a query or fragment would swallow it.
	u, err := url.Parse(c.IngestionEndpoint)
	if err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" || strings.ContainsAny(c.IngestionEndpoint, "?#") {
		return ConnectionString{}, fmt.Errorf("connection string: IngestionEndpoint %q is not an http(s) URL", c.IngestionEndpoint)
	}
	return c, nil
}

// redact keeps a malformed fragment recognisable without echoing a key.
func redact(s string) string {
	if len(s) > 12 {
		return s[:12] + "…"
	}
	return s
}
