package adk

import (
	"fmt"
	"net/http"
	"net/textproto"
	"strings"
)

// The API server has no authentication of its own; a deployment that
// exposes it puts a proxy in front (an API gateway, Cloud Run's IAM, an
// authenticating reverse proxy), which wants one header on every request.

// HeaderTransport is an http.RoundTripper that sets one header on every
// request and passes it on. It is safe for concurrent use.
type HeaderTransport struct {
	name, value string
	next        http.RoundTripper
}

// NewHeaderTransport returns a transport setting name: value. next nil
// means http.DefaultTransport.
func NewHeaderTransport(name, value string, next http.RoundTripper) *HeaderTransport {
	return &HeaderTransport{name: textproto.CanonicalMIMEHeaderKey(name), value: value, next: next}
}

// RoundTrip implements http.RoundTripper.
func (t *HeaderTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	r := req.Clone(req.Context()) // a RoundTripper must not modify the request
	r.Header.Set(t.name, t.value)
	next := t.next
	if next == nil {
		next = http.DefaultTransport
	}
	return next.RoundTrip(r)
}

// ParseHeader reads a header given as "Name: value", as ADK_AUTH_HEADER
// holds it ("Authorization: Bearer …", "X-API-Key: …").
func ParseHeader(s string) (name, value string, err error) {
	name, value, ok := strings.Cut(s, ":")
	name, value = strings.TrimSpace(name), strings.TrimSpace(value)
	if !ok || name == "" || value == "" {
		return "", "", fmt.Errorf("want \"Name: value\"")
	}
	for _, c := range name {
		if c <= ' ' || c >= 0x7f || strings.ContainsRune(`"(),/:;<=>?@[\]{}`, c) {
			return "", "", fmt.Errorf("%q is not a header name", name)
		}
	}
	if strings.ContainsAny(value, "\r\n\x00") {
		return "", "", fmt.Errorf("the header value must be one line")
	}
	return name, value, nil
}
