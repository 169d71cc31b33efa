package simulator

import (
	"fmt"
	"net/http"
	"slices"

	"github.com/brainwire/brainwire/responses/responseswire"
)

// A conversation's items, as GET /conversations/{id}/items lists them:
// what each response completed in it took in (messages, function call
// outputs) and gave out (reasoning, messages, function calls), oldest
// first, so that a client whose answer was lost can look its input up.

// maxConversationItems bounds the items a conversation keeps; the oldest
// go first.
const maxConversationItems = 4 * maxSessionMessages

// convItem is one item of a conversation.
type convItem struct {
	id   string
	obj  any // the item as the API writes it
	size int // the bytes of text it holds, for eviction
}

// The input items, as a conversation lists them.
type (
	inputMessageItem struct {
		Type    string          `json:"type"`
		ID      string          `json:"id"`
		Status  string          `json:"status"`
		Role    string          `json:"role"`
		Content []inputTextPart `json:"content"`
	}
	inputTextPart struct {
		Type string `json:"type"`
		Text string `json:"text"`
	}
	functionCallOutputItem struct {
		ID     string `json:"id"`
		Type   string `json:"type"`
		CallID string `json:"call_id"`
		Output string `json:"output"`
		Status string `json:"status"`
	}
)

// inputItems are the items a response's input adds to its conversation,
// with their ids.
func (s *Simulator) inputItems(input []inputItem) []convItem {
	out := make([]convItem, 0, len(input))
	for _, in := range input {
		switch in.kind {
		case inputMessage:
			m := in.message
			id := s.cfg.NewID("msg")
			var obj any = inputMessageItem{Type: "message", ID: id, Status: "completed", Role: m.obj.Role,
				Content: []inputTextPart{{Type: "input_text", Text: m.text}}}
			if m.obj.Role == "assistant" {
				obj = responseswire.NewMessageItem(id, []string{m.text})
			}
			out = append(out, convItem{id: id, obj: obj, size: len(m.text)})
		case inputFunctionOutput:
			id := s.cfg.NewID("fco")
			out = append(out, convItem{id: id, size: len(in.output),
				obj: functionCallOutputItem{ID: id, Type: "function_call_output", CallID: in.callID, Output: in.output, Status: "completed"}})
		}
	}
	return out
}

// outputItems are the items a delivered plan adds to its conversation.
func outputItems(p *responsePlan) []convItem {
	out := make([]convItem, 0, len(p.items))
	for _, it := range p.items {
		size := 0
		for _, c := range it.chunks {
			size += len(c)
		}
		if it.call != nil {
			size += len(it.call.arguments)
		}
		out = append(out, convItem{id: it.id, obj: itemObject(it), size: size})
	}
	return out
}

// addItems appends items to a conversation's, dropping the oldest beyond
// the bound; it returns the change in the bytes the conversation holds.
func (c *conversation) addItems(items []convItem) int {
	d := 0
	for _, it := range items {
		d += it.size
	}
	c.items = append(c.items, items...)
	if n := len(c.items) - maxConversationItems; n > 0 {
		for _, it := range c.items[:n] {
			d -= it.size
		}
		c.items = slices.Delete(c.items, 0, n)
	}
	return d
}

// itemList is a page of a conversation's items; first_id and last_id are
// null on an empty page.
type itemList struct {
	Object  string  `json:"object"`
	Data    []any   `json:"data"`
	FirstID *string `json:"first_id"`
	LastID  *string `json:"last_id"`
	HasMore bool    `json:"has_more"`
}

// listConversationItems answers GET /conversations/{id}/items: newest
// first unless order=asc, limit items (20 by default, at most 100), those
// after the item named by after.
func (s *Simulator) listConversationItems(w http.ResponseWriter, req *http.Request, ids []string) error {
	id := ids[0]
	st := s.responses
	st.mu.Lock()
	c, ok := st.conversations.get(id)
	var items []convItem
	if ok {
		items = slices.Clone(c.items)
	}
	st.mu.Unlock()
	if !ok {
		return &httpError{status: http.StatusNotFound, code: "not_found", message: fmt.Sprintf("Conversation with id '%s' not found.", id)}
	}
	page, hasMore, err := paginate(req.URL.Query(), items, func(it convItem) string { return it.id })
	if err != nil {
		return err
	}
	list := itemList{Object: "list", Data: make([]any, len(page)), HasMore: hasMore}
	for i, it := range page {
		list.Data[i] = it.obj
	}
	if len(page) > 0 {
		list.FirstID, list.LastID = &page[0].id, &page[len(page)-1].id
	}
	return writeJSON(w, http.StatusOK, list)
}
