package responses

import (
	"context"
	"fmt"
	"net/http"

	"github.com/brainwire/brainwire/internal/agenthttp"
)

// lookupDepth is how many of a conversation's newest items a lost
// response's input is looked for among.
const lookupDepth = 20

// convItem is the part of a conversation item a lookup reads: a message
// (its text parts), a function call's output, or anything else.
type convItem struct {
	Type    string `json:"type"`
	Role    string `json:"role"`
	CallID  string `json:"call_id"`
	Content []struct {
		Type string `json:"type"`
		Text string `json:"text"`
	} `json:"content"`
}

func (it convItem) text() string {
	var s string
	for _, c := range it.Content {
		s += c.Text
	}
	return s
}

// tookInput says whether a response whose answer was lost took its input
// into the conversation: the conversation's newest items
// (GET /conversations/{id}/items, newest first) hold it.
//
// Function call outputs are known by their call ids, which are answered
// once. Messages carry no id of ours: the newest input the conversation
// holds (past what the model wrote since) must be ours, its messages'
// texts equal. The same words sent twice in a row, the first time to no
// avail, read as taken: the call fails rather than being sent twice.
func (c *Client) tookInput(ctx context.Context, conversationID string, input []InputItem) (bool, error) {
	var list struct {
		Data []convItem `json:"data"`
	}
	u := c.api.URL("conversations", conversationID, "items")
	sep := "?"
	if c.api.Query != "" {
		sep = "&"
	}
	u += sep + "order=desc&limit=" + fmt.Sprint(lookupDepth)
	if err := c.api.Do(agenthttp.Op(ctx, OpListConversationItems, conversationID, ""), http.MethodGet, u, nil, &list); err != nil {
		return false, fmt.Errorf("listing items of conversation %s: %w", conversationID, err)
	}
	var outputs []string
	for _, in := range input {
		if in.Type == "function_call_output" {
			outputs = append(outputs, in.CallID)
		}
	}
	if len(outputs) > 0 {
		for _, it := range list.Data {
			if it.Type == "function_call_output" && it.CallID == outputs[0] {
				return true, nil
			}
		}
		return false, nil
	}
	// The newest input items, newest first, past the model's output.
	var newest []convItem
	for _, it := range list.Data {
		isInput := it.Type == "function_call_output" || (it.Type == "message" && it.Role != "assistant")
		if !isInput {
			if len(newest) > 0 {
				break
			}
			continue
		}
		newest = append(newest, it)
	}
	if len(newest) < len(input) {
		return false, nil
	}
	for i, in := range input {
		it := newest[len(input)-1-i]
		if it.Type != "message" || it.Role != in.Role || it.text() != in.Content {
			return false, nil
		}
	}
	return true, nil
}
