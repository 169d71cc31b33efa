package adk

import (
	"context"
	"fmt"
	"net/http"

	"github.com/brainwire/brainwire/adk/adkwire"
	"github.com/brainwire/brainwire/internal/agenthttp"
)

// tookMessage says whether a /run_sse call whose answer was lost brought
// its message into the session: the server appends it as an event of
// the author "user" before the agent runs.
//
// Function responses are known by their calls' ids, which are answered
// once. A text carries no id of ours (an invocation id in the request
// would resume that invocation): the session's newest text from the user
// must be ours. The same words sent twice in a row, the first time to no
// avail, read as taken: the call fails rather than being sent twice.
func (c *Client) tookMessage(ctx context.Context, req RunSSERequest) (bool, error) {
	var s struct {
		Events []adkwire.Event `json:"events"`
	}
	u := c.api.URL("apps", req.AppName, "users", req.UserID, "sessions", req.SessionID)
	if err := c.api.Do(agenthttp.Op(ctx, OpGetSession, req.SessionID, ""), http.MethodGet, u, nil, &s); err != nil {
		return false, fmt.Errorf("getting session %s: %w", req.SessionID, err)
	}
	var answered, text string
	for _, p := range req.NewMessage.Parts {
		if p.FunctionResponse != nil && answered == "" {
			answered = p.FunctionResponse.ID
		}
		text += p.Text
	}
	for i := len(s.Events) - 1; i >= 0; i-- {
		ev := s.Events[i]
		if ev.Author != "user" || ev.Content == nil {
			continue
		}
		var got string
		for _, p := range ev.Content.Parts {
			if answered != "" && p.FunctionResponse != nil && p.FunctionResponse.ID == answered {
				return true, nil
			}
			got += p.Text
		}
		if answered == "" && got != "" {
			return got == text, nil
		}
	}
	return false, nil
}
