package foundry

import (
	"context"
	"fmt"
	"net/http"
	"sync"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/policy"

	"github.com/brainwire/brainwire/internal/agenthttp"
)

// Scope is the Entra ID scope of Foundry Agent Service tokens.
const Scope = "https://ai.azure.com/.default"

const (
	// refreshBefore is how long before expiry a cached token is replaced.
	refreshBefore = 5 * time.Minute
	// stillUsable is how long before expiry a token may still be sent
	// while another request is fetching its replacement.
	stillUsable = 30 * time.Second
)

// NewStaticTokenTransport returns a transport sending
// "Authorization: Bearer <token>" with a fixed token, such as one the
// caller read from AZURE_AI_PROJECT_TOKEN. next nil means
// http.DefaultTransport.
func NewStaticTokenTransport(token string, next http.RoundTripper) http.RoundTripper {
	return agenthttp.NewHeaderTransport("Authorization", "Bearer "+token, next)
}

// NewTokenTransport returns a transport sending
// "Authorization: Bearer <token>" with tokens for Scope from cred (for
// example azidentity.NewDefaultAzureCredential). A token is cached until
// shortly before it expires; concurrent requests share one refresh. A
// request whose token cannot be had fails with that error. next nil means
// http.DefaultTransport.
func NewTokenTransport(cred azcore.TokenCredential, next http.RoundTripper) http.RoundTripper {
	c := &tokenCache{cred: cred, now: time.Now}
	return agenthttp.NewHeaderFuncTransport("Authorization", c.bearer, next)
}

type tokenCache struct {
	cred azcore.TokenCredential
	now  func() time.Time

	mu         sync.Mutex
	tok        azcore.AccessToken
	refreshing chan struct{} // closed when the refresh in flight ends
}

// bearer is the Authorization header's value: "Bearer <token>".
func (c *tokenCache) bearer(ctx context.Context) (string, error) {
	tok, err := c.get(ctx)
	if err != nil {
		return "", err
	}
	return "Bearer " + tok, nil
}

func (c *tokenCache) get(ctx context.Context) (string, error) {
	for {
		c.mu.Lock()
		now := c.now()
		if c.tok.Token != "" && now.Before(c.refreshAt()) {
			tok := c.tok.Token
			c.mu.Unlock()
			return tok, nil
		}
		if wait := c.refreshing; wait != nil {
			if c.tok.Token != "" && now.Before(c.tok.ExpiresOn.Add(-stillUsable)) {
				tok := c.tok.Token
				c.mu.Unlock()
				return tok, nil
			}
			c.mu.Unlock()
			select {
			case <-wait:
				continue
			case <-ctx.Done():
				return "", fmt.Errorf("waiting for an access token: %w", ctx.Err())
			}
		}
		done := make(chan struct{})
		c.refreshing = done
		c.mu.Unlock()

		tok, err := c.cred.GetToken(ctx, policy.TokenRequestOptions{Scopes: []string{Scope}})

		c.mu.Lock()
		if err == nil {
			c.tok = tok
		}
		c.refreshing = nil
		c.mu.Unlock()
		close(done)
		if err != nil {
			return "", fmt.Errorf("getting an access token for %s: %w", Scope, err)
		}
		return tok.Token, nil
	}
}

// refreshAt is when the cached token should be replaced: its suggested
// refresh time if the credential gave one, else shortly before expiry.
func (c *tokenCache) refreshAt() time.Time {
	at := c.tok.ExpiresOn.Add(-refreshBefore)
	if !c.tok.RefreshOn.IsZero() && c.tok.RefreshOn.Before(at) {
		at = c.tok.RefreshOn
	}
	return at
}
