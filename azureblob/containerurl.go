package azureblob

import (
	"fmt"
	"net/url"
	"strings"
)

// SplitContainerURL splits a container's URL into its account URL and
// container name: https://<account>.blob.core.windows.net/<container>, or
// for Azurite http://127.0.0.1:10000/devstoreaccount1/<container>.
func SplitContainerURL(rawURL string) (accountURL, container string, err error) {
	u, err := url.Parse(rawURL)
	if err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" {
		shown, _, _ := strings.Cut(rawURL, "?") // a query may hold a SAS signature
		return "", "", fmt.Errorf("azureblob: %q is not an http(s) container URL", shown)
	}
	if u.RawQuery != "" || u.Fragment != "" || u.User != nil {
		// Not echoed whole: a query may hold a SAS signature.
		return "", "", fmt.Errorf("azureblob: container URL %s://%s%s must have no query (SAS tokens are not supported), fragment or user", u.Scheme, u.Host, u.Path)
	}
	p := strings.Trim(u.Path, "/")
	i := strings.LastIndexByte(p, '/')
	container = p[i+1:]
	if !validContainer(container) {
		return "", "", fmt.Errorf("azureblob: %q does not end in a container name (3-63 lowercase letters, digits and single hyphens)", rawURL)
	}
	u.Path, u.RawPath = "", ""
	if i > 0 {
		u.Path = "/" + p[:i]
	}
	return u.String(), container, nil
}

// SameAccount reports whether two account URLs name the same account.
func SameAccount(a, b string) bool {
	ua, errA := url.Parse(a)
	ub, errB := url.Parse(b)
	return errA == nil && errB == nil && ua.Scheme == ub.Scheme && strings.EqualFold(ua.Host, ub.Host) &&
		strings.Trim(ua.Path, "/") == strings.Trim(ub.Path, "/")
}
