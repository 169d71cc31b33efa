package responses

import "net/http"

// APIKeyTransport is an http.RoundTripper that sends an API key with every
// request and passes it on. It is safe for concurrent use.
type APIKeyTransport struct {
	key    string
	header string // "" for Authorization: Bearer
	next   http.RoundTripper
}

// NewAPIKeyTransport returns a transport sending key as
// "Authorization: Bearer <key>", which OpenAI and Azure OpenAI's v1 API
// both accept, or, when header is set ("api-key" for an Azure gateway that
// wants it), as that header. next nil means http.DefaultTransport.
func NewAPIKeyTransport(key, header string, next http.RoundTripper) *APIKeyTransport {
	return &APIKeyTransport{key: key, header: header, next: next}
}

// RoundTrip implements http.RoundTripper.
func (t *APIKeyTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	r := req.Clone(req.Context()) // a RoundTripper must not modify the request
	if t.header == "" {
		r.Header.Set("Authorization", "Bearer "+t.key)
	} else {
		r.Header.Set(t.header, t.key)
	}
	next := t.next
	if next == nil {
		next = http.DefaultTransport
	}
	return next.RoundTrip(r)
}
