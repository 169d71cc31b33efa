package adk

import (
	"fmt"
	"strings"
)

// The API server has no authentication of its own; a deployment that
// exposes it puts a proxy in front (an API gateway, Cloud Run's IAM, an
// authenticating reverse proxy), which wants one header on every request
// (agenthttp.NewHeaderTransport).

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
