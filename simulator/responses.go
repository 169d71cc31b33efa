package simulator

import (
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"sync"

	"github.com/brainwire/brainwire"
	"github.com/brainwire/brainwire/foundry/foundrywire"
	"github.com/brainwire/brainwire/responses/responseswire"
)

// The Responses API face: the current Foundry Agent Service API (and Azure
// OpenAI's and OpenAI's), on the paths those services use:
//
//	{project}/openai/v1/...   a Foundry project (any /api/projects/<name> prefix)
//	/openai/v1/...            an Azure OpenAI resource
//	/v1/...                   OpenAI
//
//	POST /responses                  create a response (streamed or not)
//	GET  /responses/{id}             a stored response
//	POST /conversations              create a conversation
//	GET  /conversations/{id}         a conversation
//	GET  /conversations/{id}/items   its items, newest first (limit, order, after)
//	GET  /models[/{model}]           the simulated model
//	GET  {project}/agents/{name}[/versions/{v}]?api-version=v1   the simulated Foundry agent
//	GET  {project}/deployments/{name}?api-version=v1            the simulated model's deployment
//
// See the package documentation for what the agent does.

// Defaults of the Responses face.
const (
	// DefaultAgentName is the simulated Foundry agent that agent
	// references may name (version DefaultAgentVersion).
	DefaultAgentName    = "brainwire-classifier-sim"
	DefaultAgentVersion = "1"
	// responsesPrefix is where the face lives after a project prefix.
	responsesPrefix = "/openai/v1"
)

// maxSessionMessages bounds the messages a conversation or a chain of
// responses keeps, as maxThreadMessages does a thread's.
const maxSessionMessages = maxThreadMessages

// responsesOperation returns the operation path ("/responses", ...) of a
// Responses face request, or false for the threads/runs face.
func responsesOperation(path string) (string, bool) {
	p := operationPath(path)
	for _, prefix := range []string{responsesPrefix + "/", "/v1/"} {
		if rest, ok := strings.CutPrefix(p, prefix); ok {
			return "/" + rest, true
		}
	}
	for _, op := range []string{"/agents", "/deployments"} {
		if p == op || strings.HasPrefix(p, op+"/") {
			return p, true
		}
	}
	return "", false
}

// responsesState is the face's memory: conversations and stored
// responses (four times as many), least recently used evicted. Guarded
// by its own mutex.
type responsesState struct {
	mu            sync.Mutex
	conversations *lru[*conversation]
	responses     *lru[*storedResponse]
}

func newResponsesState(maxConversations int) *responsesState {
	return &responsesState{conversations: newLRU[*conversation](maxConversations), responses: newLRU[*storedResponse](4 * maxConversations)}
}

// conversation is a Conversations API conversation: the session its
// responses share, committed when a response in it completes.
type conversation struct {
	obj       conversationObject
	session   *session
	last      *storedResponse // the last completed response, whose calls may be pending
	active    bool            // a response in it is streaming
	items     []convItem      // what its responses took in and gave out (responses_items.go)
	itemBytes int             // the text its items hold
}

// storedResponse is a response and what the agent knew when it ended.
type storedResponse struct {
	obj     responseswire.Response
	session *session  // the session after it, for responses chained to it
	run     runMemory // the agent's memory of the run, for continuations
	pending []*toolCall
	prompt  int64 // its input tokens
}

// session is what the agent has read and written in a chain of responses.
type session struct {
	messages []*message
	tokens   int64 // everything read and written so far
}

// clone copies the session, its messages too: a response that goes on
// from it learns transcripts of its own.
func (s *session) clone() *session {
	c := &session{}
	if s != nil {
		c.tokens = s.tokens
		for _, m := range s.messages {
			mm := *m
			c.messages = append(c.messages, &mm)
		}
	}
	return c
}

func (s *session) add(m *message) {
	s.messages = append(s.messages, m)
	s.tokens += tokens(m.text)
	if len(s.messages) > maxSessionMessages {
		s.messages = s.messages[len(s.messages)-maxSessionMessages:]
	}
}

func (s *session) size() int {
	n := 0
	for _, m := range s.messages {
		n += len(m.text)
	}
	return n
}

func (st *responsesState) storeResponse(r *storedResponse) {
	n := r.session.size()
	if r.obj.Instructions != nil {
		n += len(*r.obj.Instructions)
	}
	for _, t := range r.obj.Tools {
		n += len(t)
	}
	st.responses.put(r.obj.ID, r, n)
}

// commit replaces a conversation's session after a completed response,
// and adds the response's items to its own.
func (st *responsesState) commit(c *conversation, sess *session, last *storedResponse, items []convItem) {
	if _, ok := st.conversations.get(c.obj.ID); !ok {
		return // evicted meanwhile
	}
	c.itemBytes += c.addItems(items)
	c.session, c.last = sess, last
	st.conversations.put(c.obj.ID, c, sess.size()+c.itemBytes)
}

// routeResponses answers one Responses face call.
func (s *Simulator) routeResponses(w http.ResponseWriter, req *http.Request, op string) error {
	if !authorizedKey(req) {
		return &httpError{status: http.StatusUnauthorized, code: "invalid_api_key",
			message: "Missing credentials: send Authorization: Bearer <token> or api-key: <key>."}
	}
	return s.dispatch(w, req, op, responsesRoutes)
}

// responsesRoutes are the Responses face's operations.
var responsesRoutes = []route{
	{http.MethodGet, "agents/**", (*Simulator).getAgent},
	{http.MethodGet, "deployments/**", (*Simulator).getDeployment},
	{http.MethodPost, "responses", (*Simulator).createResponse},
	{http.MethodGet, "responses/*", (*Simulator).getResponse},
	{http.MethodPost, "conversations", (*Simulator).createConversation},
	{http.MethodGet, "conversations/*", (*Simulator).getConversation},
	{http.MethodGet, "conversations/*/items", (*Simulator).listConversationItems},
	{http.MethodGet, "models", func(s *Simulator, w http.ResponseWriter, _ *http.Request, _ []string) error {
		return writeJSON(w, http.StatusOK, foundrywire.List{Object: "list", Data: []responseswire.Model{s.model()}, FirstID: DefaultModel, LastID: DefaultModel})
	}},
	{http.MethodGet, "models/*", func(s *Simulator, w http.ResponseWriter, _ *http.Request, ids []string) error {
		if ids[0] != DefaultModel {
			return notFound("model", ids[0])
		}
		return writeJSON(w, http.StatusOK, s.model())
	}},
}

func (s *Simulator) model() responseswire.Model {
	return responseswire.Model{ID: DefaultModel, Object: "model", Created: 0, OwnedBy: "brainwire-simulator"}
}

// getDeployment answers the project's deployment of the simulated model,
// named after it (GET {project}/deployments/{name}?api-version=v1).
func (s *Simulator) getDeployment(w http.ResponseWriter, req *http.Request, seg []string) error {
	if err := needAPIVersion(req); err != nil {
		return err
	}
	if len(seg) != 1 || seg[0] == "" {
		return noOperation(req)
	}
	if seg[0] != DefaultModel {
		return &httpError{status: http.StatusNotFound, code: "DeploymentNotFound", message: fmt.Sprintf("Deployment %s was not found.", seg[0])}
	}
	d := responseswire.NewDeployment(DefaultModel, DefaultModel)
	d.ModelPublisher = "brainwire-simulator"
	return writeJSON(w, http.StatusOK, d)
}

// authorizedKey accepts any bearer token or api-key: presence only.
func authorizedKey(req *http.Request) bool {
	return authorized(req) || strings.TrimSpace(req.Header.Get("api-key")) != ""
}

func (s *Simulator) getAgent(w http.ResponseWriter, req *http.Request, seg []string) error {
	if err := needAPIVersion(req); err != nil {
		return err
	}
	switch {
	case len(seg) == 1 && seg[0] == DefaultAgentName:
		return writeJSON(w, http.StatusOK, agentObject{Object: "agent", ID: DefaultAgentName, Name: DefaultAgentName,
			Versions: agentVersions{Latest: s.agentVersion()}})
	case len(seg) == 3 && seg[0] == DefaultAgentName && seg[1] == "versions" && seg[2] == DefaultAgentVersion:
		return writeJSON(w, http.StatusOK, s.agentVersion())
	case len(seg) >= 1:
		return &httpError{status: http.StatusNotFound, code: "not_found", message: fmt.Sprintf("Agent %s was not found.", strings.Join(seg, " version "))}
	}
	return &httpError{status: http.StatusNotFound, code: "not_found", message: "No such operation."}
}

func (s *Simulator) agentVersion() agentVersionObject {
	return agentVersionObject{
		Object: "agent.version", ID: DefaultAgentName + ":" + DefaultAgentVersion, Name: DefaultAgentName, Version: DefaultAgentVersion,
		Description: agentDescription,
		Metadata:    json.RawMessage(`{}`), CreatedAt: 0,
		Definition: agentDefinition{Kind: "prompt", Model: DefaultModel, Instructions: s.cfg.Instructions,
			Reasoning: &responseswire.Reasoning{Effort: "low", Summary: ptr("auto")}, Tools: agentTools()},
	}
}

// agentTools are the simulated Foundry agent's own tools, in the flat
// shape.
func agentTools() []json.RawMessage {
	var nested []struct {
		Type     string          `json:"type"`
		Function json.RawMessage `json:"function"`
	}
	_ = json.Unmarshal(defaultTools(), &nested) // a constant that parses
	out := make([]json.RawMessage, len(nested))
	for i, t := range nested {
		var f map[string]json.RawMessage
		_ = json.Unmarshal(t.Function, &f)
		flat := map[string]json.RawMessage{"type": json.RawMessage(`"function"`)}
		for k, v := range f {
			flat[k] = v
		}
		out[i], _ = json.Marshal(flat)
	}
	return out
}

func (s *Simulator) createConversation(w http.ResponseWriter, req *http.Request, _ []string) error {
	var body struct {
		Items    []json.RawMessage `json:"items"`
		Metadata json.RawMessage   `json:"metadata"`
	}
	if err := decode(w, req, &body, true); err != nil {
		return err
	}
	if len(body.Items) > 20 {
		return badRequest("items", "A conversation can be created with at most 20 items.")
	}
	sess := &session{}
	var input []inputItem
	for i, raw := range body.Items {
		in, err := parseInputItem(raw, fmt.Sprintf("items[%d]", i))
		if err != nil {
			return err
		}
		if in.kind != inputMessage {
			return badRequest(fmt.Sprintf("items[%d]", i), "Only messages can start a conversation here.")
		}
		sess.add(in.message)
		input = append(input, in)
	}
	st := s.responses
	c := &conversation{
		obj:     conversationObject{ID: s.cfg.NewID("conv"), Object: "conversation", CreatedAt: s.now(), Metadata: orDefault(body.Metadata, `{}`)},
		session: sess,
	}
	c.itemBytes = c.addItems(s.inputItems(input))
	st.mu.Lock()
	st.conversations.put(c.obj.ID, c, sess.size()+c.itemBytes)
	obj := c.obj
	st.mu.Unlock()
	return writeJSON(w, http.StatusOK, obj)
}

func (s *Simulator) getConversation(w http.ResponseWriter, _ *http.Request, ids []string) error {
	return held(w, &s.responses.mu, func() (conversationObject, error) {
		c, ok := s.responses.conversations.get(ids[0])
		if !ok {
			return conversationObject{}, notFound("conversation", ids[0])
		}
		return c.obj, nil
	})
}

func (s *Simulator) getResponse(w http.ResponseWriter, _ *http.Request, ids []string) error {
	return held(w, &s.responses.mu, func() (responseswire.Response, error) {
		r, ok := s.responses.responses.get(ids[0])
		if !ok {
			return responseswire.Response{}, responseNotFound(ids[0])
		}
		return r.obj, nil
	})
}

func responseNotFound(id string) error {
	return &httpError{status: http.StatusNotFound, code: "not_found", message: fmt.Sprintf("Response with id '%s' not found.", id)}
}

// responseRequest is the body of POST /responses.
type responseRequest struct {
	Model             string                        `json:"model"`
	AgentReference    *responseswire.AgentReference `json:"agent_reference"`
	Instructions      *string                       `json:"instructions"`
	Input             json.RawMessage               `json:"input"`
	Tools             json.RawMessage               `json:"tools"`
	ToolChoice        json.RawMessage               `json:"tool_choice"`
	ParallelToolCalls *bool                         `json:"parallel_tool_calls"`
	Reasoning         *struct {
		Effort  *string `json:"effort"`
		Summary *string `json:"summary"`
	} `json:"reasoning"`
	Conversation       json.RawMessage `json:"conversation"`
	PreviousResponseID *string         `json:"previous_response_id"`
	Store              *bool           `json:"store"`
	Stream             bool            `json:"stream"`
	Background         bool            `json:"background"`
	Metadata           json.RawMessage `json:"metadata"`
}

// inputKind is what an input item is.
type inputKind uint8

const (
	inputMessage inputKind = iota + 1
	inputFunctionOutput
)

type inputItem struct {
	kind    inputKind
	message *message
	callID  string
	output  string
}

// parseInput reads input: a string (one user message) or a list of
// items.
func parseInput(raw json.RawMessage) ([]inputItem, error) {
	if len(raw) == 0 || string(raw) == "null" {
		return nil, nil
	}
	var text string
	if json.Unmarshal(raw, &text) == nil {
		if err := checkText(text, "input"); err != nil {
			return nil, err
		}
		return []inputItem{{kind: inputMessage, message: newMessage("user", text)}}, nil
	}
	var items []json.RawMessage
	if err := json.Unmarshal(raw, &items); err != nil {
		return nil, badRequest("input", "input must be a string or an array of input items.")
	}
	out := make([]inputItem, 0, len(items))
	for i, it := range items {
		in, err := parseInputItem(it, fmt.Sprintf("input[%d]", i))
		if err != nil {
			return nil, err
		}
		out = append(out, in)
	}
	return out, nil
}

func parseInputItem(raw json.RawMessage, param string) (inputItem, error) {
	var it struct {
		Type    string          `json:"type"`
		Role    string          `json:"role"`
		Content json.RawMessage `json:"content"`
		CallID  string          `json:"call_id"`
		Output  json.RawMessage `json:"output"`
	}
	if err := json.Unmarshal(raw, &it); err != nil {
		return inputItem{}, badRequest(param, "Each input item must be an object.")
	}
	switch {
	case it.Type == "function_call_output":
		var out string
		if it.CallID == "" {
			return inputItem{}, badRequest(param+".call_id", "Missing required parameter: '%s.call_id'.", param)
		}
		if err := json.Unmarshal(it.Output, &out); err != nil {
			return inputItem{}, badRequest(param+".output", "%s.output must be a string.", param)
		}
		return inputItem{kind: inputFunctionOutput, callID: it.CallID, output: out}, nil
	case it.Type == "message" || (it.Type == "" && it.Role != ""):
		switch it.Role {
		case "user", "assistant", "system", "developer":
		default:
			return inputItem{}, badRequest(param+".role", "Invalid value: '%s'. Supported values are: 'user', 'assistant', 'system', and 'developer'.", it.Role)
		}
		text, err := contentText(it.Content, param+".content")
		if err != nil {
			return inputItem{}, err
		}
		return inputItem{kind: inputMessage, message: newMessage(it.Role, text)}, nil
	}
	return inputItem{}, badRequest(param+".type", "Input items of type %q are not supported by the simulator (use message or function_call_output).", it.Type)
}

// createResponse validates the request, plans the agent's answer and
// delivers it: streamed, or as the finished response object.
func (s *Simulator) createResponse(w http.ResponseWriter, req *http.Request, _ []string) error {
	var body responseRequest
	if err := decode(w, req, &body, false); err != nil {
		return err
	}
	t, err := s.prepareResponse(&body, func() [sha256.Size]byte { return callKey(req, &body) })
	if err != nil {
		return err
	}
	if !body.Stream {
		t.finish(s, true)
		return writeJSON(w, http.StatusOK, t.resp.obj)
	}
	s.streamResponse(req.Context(), w, t)
	return nil
}

// prepareResponse checks the request against what the service holds and
// plans the response.
func (s *Simulator) prepareResponse(body *responseRequest, call func() [sha256.Size]byte) (*responseTurn, error) {
	if body.Background {
		return nil, badRequest("background", "Background responses are not supported by the simulator.")
	}
	agent := body.AgentReference
	switch {
	case agent != nil && agent.Name == "":
		return nil, badRequest("agent_reference.name", "Missing required parameter: 'agent_reference.name'.")
	case agent != nil && (len(body.Tools) > 0 && string(body.Tools) != "null" || len(body.ToolChoice) > 0 || body.ParallelToolCalls != nil):
		return nil, badRequest("tools", "Not allowed when agent is specified.")
	case agent != nil && agent.Name != DefaultAgentName:
		return nil, &httpError{status: http.StatusNotFound, code: "not_found", message: fmt.Sprintf("Agent %s was not found.", agent.Name), param: "agent_reference.name"}
	case agent != nil && agent.Version != "" && agent.Version != DefaultAgentVersion:
		return nil, &httpError{status: http.StatusNotFound, code: "not_found", message: fmt.Sprintf("Agent %s version %s was not found.", agent.Name, agent.Version), param: "agent_reference.version"}
	case agent == nil && body.Model == "":
		return nil, badRequest("model", "Missing required parameter: 'model'.")
	}
	var convID string
	if len(body.Conversation) > 0 && string(body.Conversation) != "null" {
		var obj struct {
			ID string `json:"id"`
		}
		if json.Unmarshal(body.Conversation, &convID) != nil {
			if json.Unmarshal(body.Conversation, &obj) != nil || obj.ID == "" {
				return nil, badRequest("conversation", "conversation must be an id or {\"id\": ...}.")
			}
			convID = obj.ID
		}
	}
	prevID := deref(body.PreviousResponseID, "")
	if convID != "" && prevID != "" {
		return nil, badRequest("previous_response_id", "Previous response cannot be used in conjunction with conversation.")
	}
	input, err := parseInput(body.Input)
	if err != nil {
		return nil, err
	}
	if len(input) == 0 {
		return nil, badRequest("input", "Missing required parameter: 'input'.")
	}
	tools, names := []json.RawMessage{}, map[string]bool{}
	if len(body.Tools) > 0 && string(body.Tools) != "null" {
		if tools, names, err = readTools(body.Tools, false); err != nil {
			return nil, err
		}
	}
	model, instructions, summary := body.Model, deref(body.Instructions, ""), ""
	if body.Reasoning != nil {
		summary = deref(body.Reasoning.Summary, "")
	}
	if agent != nil {
		model, instructions, summary = DefaultModel, s.cfg.Instructions, "auto"
		tools = agentTools()
		names = map[string]bool{brainwire.ToolFileCapture: true, brainwire.ToolTranscribeAudio: true}
	}
	var choice string
	_ = json.Unmarshal(body.ToolChoice, &choice)

	st := s.responses
	st.mu.Lock()
	defer st.mu.Unlock()
	// What this response continues: a conversation, or a response.
	var conv *conversation
	var prev *storedResponse
	sess := &session{}
	switch {
	case convID != "":
		c, ok := st.conversations.get(convID)
		if !ok {
			return nil, &httpError{status: http.StatusNotFound, code: "not_found", message: fmt.Sprintf("Conversation with id '%s' not found.", convID), param: "conversation"}
		}
		if c.active {
			return nil, badRequest("conversation", "Another response is in progress in conversation %s.", convID)
		}
		conv, prev, sess = c, c.last, c.session.clone()
	case prevID != "":
		p, ok := st.responses.get(prevID)
		if !ok {
			return nil, &httpError{status: http.StatusNotFound, code: "previous_response_not_found",
				message: fmt.Sprintf("Previous response with id '%s' not found.", prevID), param: "previous_response_id"}
		}
		if p.obj.Status == "in_progress" {
			return nil, badRequest("previous_response_id", "Previous response %s is still in progress.", prevID)
		}
		prev, sess = p, p.session.clone()
	}
	// Every function call the previous response made must be answered,
	// and only those.
	outputs := map[string]string{}
	var pending []*toolCall
	if prev != nil {
		pending = prev.pending
	}
	for _, in := range input {
		if in.kind == inputFunctionOutput {
			outputs[in.callID] = in.output
		}
	}
	switch unknown, missing := unanswered(pending, outputs); {
	case len(unknown) > 0:
		return nil, badRequest("input", "No tool call found for function call output with call_id %s.", unknown[0])
	case len(missing) > 0:
		return nil, badRequest("input", "No tool output found for function call %s.", missing[0])
	}

	var run runMemory
	if prev != nil {
		run = prev.run
	}
	newMessage := false
	for _, in := range input {
		switch in.kind {
		case inputMessage:
			sess.add(in.message)
			newMessage = newMessage || in.message.obj.Role == "user"
		case inputFunctionOutput:
			sess.tokens += tokens(in.output)
		}
	}
	if newMessage {
		// A new message from the person starts a new run of the agent.
		run = runMemory{magic: parseMagic(newestUser(sess.messages).text)}
	}
	run.tools, run.noTools = names, choice == "none"
	// A run under #refuse has each of its calls refused before anything
	// changes, as a service refuses a request it has not taken.
	if err := s.refuse(run.magic.refuse, call); err != nil {
		return nil, err
	}

	store := deref(body.Store, true)
	r := &storedResponse{obj: responseswire.Response{
		ID: s.cfg.NewID("resp"), Object: "response", CreatedAt: s.now(), Status: "in_progress", Background: false,
		Instructions: orNull(instructions), Model: model, Output: []json.RawMessage{}, ParallelToolCalls: deref(body.ParallelToolCalls, true),
		PreviousResponseID: orNull(prevID), Reasoning: responseswire.Reasoning{Effort: "medium", Summary: orNull(summary)},
		Store: store, Temperature: responseswire.Float(1), Text: json.RawMessage(`{"format":{"type":"text"}}`),
		ToolChoice: orDefault(body.ToolChoice, `"auto"`), Tools: tools, TopP: responseswire.Float(1), Truncation: "disabled",
		Metadata: orDefault(body.Metadata, `{}`),
	}}
	if body.Reasoning != nil {
		r.obj.Reasoning.Effort = deref(body.Reasoning.Effort, r.obj.Reasoning.Effort)
	}
	if agent != nil {
		r.obj.Reasoning.Effort = "low"
		r.obj.AgentReference = &responseswire.AgentReference{Type: "agent_reference", Name: agent.Name, Version: DefaultAgentVersion}
	}
	if conv != nil {
		r.obj.Conversation = &responseswire.ConversationRef{ID: conv.obj.ID}
		conv.active = true
	}
	t := &responseTurn{resp: r, conv: conv, prev: prev, store: store}
	if conv != nil {
		t.input = s.inputItems(input)
	}
	prompt := 32 + tokens(instructions)
	for _, tool := range tools {
		prompt += tokens(string(tool))
	}
	// The response follows the instructions it was sent, as a run follows
	// its own: their cue lines steer the classifier.
	cls := s.classifierFor(instructions)
	b := &responsePlanner{s: s, cls: cls, sess: sess, run: &run, summaries: summary != "", prompt: prompt + sess.tokens,
		plan: responsePlan{end: "completed"}}
	if newMessage {
		b.start()
	} else {
		b.continueWith(pending, outputs)
	}
	t.plan = &b.plan
	sess.tokens += b.plan.outputTokens
	r.session, r.run, r.prompt = sess, run, b.prompt
	if store {
		// Stored responses can be read back while they stream.
		st.storeResponse(r)
	}
	return t, nil
}

func orNull(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}
