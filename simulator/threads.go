package simulator

import (
	"cmp"
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strings"

	"github.com/brainwire/brainwire"
	"github.com/brainwire/brainwire/foundry/foundrywire"
)

// routeThreads answers a call of the classic threads/runs API: it needs a
// bearer token (any) and an api-version.
func (s *Simulator) routeThreads(w http.ResponseWriter, req *http.Request) error {
	if !authorized(req) {
		return &httpError{status: http.StatusUnauthorized, code: "unauthorized",
			message: "Access token is missing or invalid: send Authorization: Bearer <token>."}
	}
	if err := needAPIVersion(req); err != nil {
		return err
	}
	return s.dispatch(w, req, operationPath(req.URL.Path), threadsRoutes)
}

// threadsRoutes are the classic threads/runs API's operations.
var threadsRoutes = []route{
	{http.MethodGet, "threads", (*Simulator).listThreads},
	{http.MethodPost, "threads", (*Simulator).createThread},
	{http.MethodPost, "threads/runs", (*Simulator).createRun},
	{http.MethodDelete, "threads/*", (*Simulator).deleteThread},
	{http.MethodGet, "threads/*", (*Simulator).getThread},
	{http.MethodGet, "threads/*/messages", (*Simulator).listMessages},
	{http.MethodPost, "threads/*/messages", (*Simulator).createMessage},
	{http.MethodGet, "threads/*/runs", (*Simulator).listRuns},
	{http.MethodPost, "threads/*/runs", (*Simulator).createRun},
	{http.MethodGet, "threads/*/runs/*", (*Simulator).getRun},
	{http.MethodPost, "threads/*/runs/*/submit_tool_outputs", (*Simulator).submitToolOutputs},
	{http.MethodPost, "threads/*/runs/*/cancel", (*Simulator).cancel},
	{http.MethodGet, "assistants/*", (*Simulator).getAssistant},
}

type messageInput struct {
	Role     string          `json:"role"`
	Content  json.RawMessage `json:"content"`
	Metadata json.RawMessage `json:"metadata"`
}

type runRequest struct {
	AssistantID            string          `json:"assistant_id"`
	Thread                 *threadRequest  `json:"thread"`
	Model                  string          `json:"model"`
	Instructions           *string         `json:"instructions"`
	AdditionalInstructions string          `json:"additional_instructions"`
	AdditionalMessages     []messageInput  `json:"additional_messages"`
	Tools                  json.RawMessage `json:"tools"`
	ToolChoice             json.RawMessage `json:"tool_choice"`
	ToolResources          json.RawMessage `json:"tool_resources"`
	Stream                 bool            `json:"stream"`
	Temperature            *float64        `json:"temperature"`
	TopP                   *float64        `json:"top_p"`
	MaxPromptTokens        *int64          `json:"max_prompt_tokens"`
	MaxCompletionTokens    *int64          `json:"max_completion_tokens"`
	TruncationStrategy     json.RawMessage `json:"truncation_strategy"`
	ResponseFormat         json.RawMessage `json:"response_format"`
	ParallelToolCalls      *bool           `json:"parallel_tool_calls"`
	Metadata               json.RawMessage `json:"metadata"`
}

type threadRequest struct {
	Messages []messageInput  `json:"messages"`
	Metadata json.RawMessage `json:"metadata"`
}

// parseMessages validates input messages; ids are given when they are added.
func parseMessages(in []messageInput, param string) ([]*message, error) {
	out := make([]*message, 0, len(in))
	for i, m := range in {
		p := fmt.Sprintf("%s[%d]", param, i)
		if m.Role != "user" && m.Role != "assistant" {
			return nil, badRequest(p+".role", "Invalid role %q: use 'user' or 'assistant'.", m.Role)
		}
		text, err := contentText(m.Content, p+".content")
		if err != nil {
			return nil, err
		}
		msg := newMessage(m.Role, text)
		msg.obj = foundrywire.Message{Object: "thread.message", Status: "completed", Role: m.Role, Content: foundrywire.TextContent(text),
			Attachments: []json.RawMessage{}, Metadata: orDefault(m.Metadata, `{}`)}
		out = append(out, msg)
	}
	return out, nil
}

// addMessages gives parsed messages their ids and adds them; the caller
// holds s.mu.
func (s *Simulator) addMessages(th *thread, msgs []*message) {
	for _, m := range msgs {
		m.obj.ID = s.cfg.NewID("msg")
		m.obj.CreatedAt = s.now()
		m.obj.CompletedAt = ptr(m.obj.CreatedAt)
		m.obj.ThreadID = th.obj.ID
		s.addMessage(th, m)
	}
}

// runSpec is a validated run request.
type runSpec struct {
	req       *runRequest
	tools     []json.RawMessage
	toolNames map[string]bool
	noTools   bool
}

func parseRunSpec(req *runRequest) (*runSpec, error) {
	if req.AssistantID == "" {
		return nil, badRequest("assistant_id", "assistant_id is required.")
	}
	raw := req.Tools
	if len(raw) == 0 || string(raw) == "null" {
		raw = defaultTools()
	}
	tools, names, err := readTools(raw, true)
	if err != nil {
		return nil, err
	}
	spec := &runSpec{req: req, tools: tools, toolNames: names}
	var choice string
	if json.Unmarshal(req.ToolChoice, &choice) == nil && choice == "none" {
		spec.noTools = true
	}
	return spec, nil
}

// defaultTools are the agent's own tools, used when a run names none.
func defaultTools() json.RawMessage {
	return json.RawMessage(`[` +
		`{"type":"function","function":{"name":"` + brainwire.ToolFileCapture + `","description":"File the capture into a bucket.",` +
		`"parameters":{"type":"object","properties":{"text":{"type":"string"},"bucket":{"type":"string","enum":["People","Projects","Ideas","Admin"]},` +
		`"confidence":{"type":"number"},"status":{"type":"string","enum":["classified","pending","misunderstood"]},"title":{"type":"string"},` +
		`"question":{"type":"string"}},"required":["text","bucket","confidence","status"]},"strict":false}},` +
		`{"type":"function","function":{"name":"` + brainwire.ToolTranscribeAudio + `","description":"Transcribe a voice capture.",` +
		`"parameters":{"type":"object","properties":{"blob_url":{"type":"string"}},"required":["blob_url"]},"strict":false}}]`)
}

// startRun creates a queued run on th; the caller holds s.mu.
func (s *Simulator) startRun(th *thread, spec *runSpec) *run {
	req := spec.req
	now := s.now()
	instructions := deref(req.Instructions, s.cfg.Instructions)
	if req.AdditionalInstructions != "" {
		instructions = strings.TrimSpace(instructions + "\n\n" + req.AdditionalInstructions)
	}
	cls := s.classifierFor(instructions)
	r := &run{
		obj: foundrywire.Run{
			ID:                  s.cfg.NewID("run"),
			Object:              "thread.run",
			CreatedAt:           now,
			AssistantID:         req.AssistantID,
			ThreadID:            th.obj.ID,
			Status:              "queued",
			ExpiresAt:           ptr(now + runLifetime),
			Model:               cmp.Or(req.Model, DefaultModel),
			Instructions:        instructions,
			Tools:               spec.tools,
			ToolResources:       orDefault(req.ToolResources, `{}`),
			Metadata:            orDefault(req.Metadata, `{}`),
			Temperature:         foundrywire.Float(deref(req.Temperature, 1)),
			TopP:                foundrywire.Float(deref(req.TopP, 1)),
			MaxCompletionTokens: req.MaxCompletionTokens,
			MaxPromptTokens:     req.MaxPromptTokens,
			TruncationStrategy:  orDefault(req.TruncationStrategy, `{"type":"auto","last_messages":null}`),
			ResponseFormat:      orDefault(req.ResponseFormat, `"auto"`),
			ToolChoice:          orDefault(req.ToolChoice, `"auto"`),
			ParallelToolCalls:   deref(req.ParallelToolCalls, true),
		},
		mem:      runMemory{tools: spec.toolNames, noTools: spec.noTools},
		classify: cls,
	}
	if r.obj.Tools == nil {
		r.obj.Tools = []json.RawMessage{}
	}
	// The prompt the agent reads: instructions, tool schemas and the thread.
	r.context = 32 + tokens(instructions)
	for _, t := range spec.tools {
		r.context += tokens(string(t))
	}
	for _, m := range th.messages {
		r.context += tokens(m.text)
	}
	if m := newestUser(th.messages); m != nil {
		r.mem.magic = parseMagic(m.text)
	}
	s.addRun(th, r)
	return r
}

func (s *Simulator) createThread(w http.ResponseWriter, req *http.Request, _ []string) error {
	var body threadRequest
	if err := decode(w, req, &body, true); err != nil {
		return err
	}
	msgs, err := parseMessages(body.Messages, "messages")
	if err != nil {
		return err
	}
	s.mu.Lock()
	th := s.newThread(body.Metadata)
	s.addMessages(th, msgs)
	obj := th.obj
	s.mu.Unlock()
	return writeJSON(w, http.StatusOK, obj)
}

func (s *Simulator) getThread(w http.ResponseWriter, _ *http.Request, ids []string) error {
	return held(w, &s.mu, func() (foundrywire.Thread, error) {
		th, ok := s.threads.get(ids[0])
		if !ok {
			return foundrywire.Thread{}, notFound("thread", ids[0])
		}
		return th.obj, nil
	})
}

// createRun starts a run on a thread (ids[0]), or on a new thread made
// of the request's (POST threads/runs, no ids).
func (s *Simulator) createRun(w http.ResponseWriter, req *http.Request, ids []string) error {
	var body runRequest
	if err := decode(w, req, &body, false); err != nil {
		return err
	}
	spec, err := parseRunSpec(&body)
	if err != nil {
		return err
	}
	in, param := body.AdditionalMessages, "additional_messages"
	if len(ids) == 0 {
		if body.Thread == nil {
			body.Thread = &threadRequest{}
		}
		in, param = body.Thread.Messages, "thread.messages"
	}
	msgs, err := parseMessages(in, param)
	if err != nil {
		return err
	}
	s.mu.Lock()
	var th *thread
	var before *message // the newest message from the person before this run's
	if len(ids) > 0 {
		var ok bool
		if th, ok = s.threads.get(ids[0]); !ok {
			s.mu.Unlock()
			return notFound("thread", ids[0])
		}
		if active := th.activeRun(); active != nil {
			s.mu.Unlock()
			return badRequest("", "Thread %s already has an active run %s.", ids[0], active.obj.ID)
		}
		before = newestUser(th.messages)
	}
	if err := s.refuse(newRefusal(msgs, before), func() [sha256.Size]byte { return callKey(req, &body) }); err != nil {
		s.mu.Unlock()
		return err
	}
	if th == nil {
		th = s.newThread(body.Thread.Metadata)
	}
	s.addMessages(th, msgs)
	r := s.startRun(th, spec)
	return s.deliver(w, req, s.planStart(th, r, len(ids) == 0), body.Stream)
}

// deliver sends a planned turn; the caller holds s.mu, which it releases.
// A streamed turn becomes the run's active one, for cancel to find; any
// other runs to its end at once and is answered as it stood before.
func (s *Simulator) deliver(w http.ResponseWriter, req *http.Request, t *turn, stream bool) error {
	if !stream {
		snapshot := t.run.obj
		s.runDetached(t, t.frames)
		s.mu.Unlock()
		return writeJSON(w, http.StatusOK, snapshot)
	}
	t.run.active = t
	s.mu.Unlock()
	s.stream(req.Context(), w, t)
	return nil
}

func (s *Simulator) createMessage(w http.ResponseWriter, req *http.Request, ids []string) error {
	threadID := ids[0]
	var body messageInput
	if err := decode(w, req, &body, false); err != nil {
		return err
	}
	msgs, err := parseMessages([]messageInput{body}, "message")
	if err != nil {
		return err
	}
	s.mu.Lock()
	th, ok := s.threads.get(threadID)
	if !ok {
		s.mu.Unlock()
		return notFound("thread", threadID)
	}
	if active := th.activeRun(); active != nil {
		s.mu.Unlock()
		return badRequest("", "Can't add messages to %s while a run %s is active.", threadID, active.obj.ID)
	}
	s.addMessages(th, msgs)
	obj := msgs[0].obj
	s.mu.Unlock()
	return writeJSON(w, http.StatusOK, obj)
}

// listThreads lists the threads kept, newest first unless order=asc.
func (s *Simulator) listThreads(w http.ResponseWriter, req *http.Request, _ []string) error {
	s.mu.Lock()
	all := s.threads.all()
	s.mu.Unlock()
	slices.SortFunc(all, func(a, b *thread) int { return cmp.Compare(a.seq, b.seq) })
	objs := make([]foundrywire.Thread, len(all))
	for i, th := range all {
		objs[i] = th.obj
	}
	return writeList(w, req, objs, func(th foundrywire.Thread) string { return th.ID })
}

// deleteThread forgets a thread, its messages and its runs.
func (s *Simulator) deleteThread(w http.ResponseWriter, _ *http.Request, ids []string) error {
	id := ids[0]
	s.mu.Lock()
	ok := s.threads.remove(id)
	s.mu.Unlock()
	if !ok {
		return notFound("thread", id)
	}
	return writeJSON(w, http.StatusOK, map[string]any{"id": id, "object": "thread.deleted", "deleted": true})
}

func (s *Simulator) listMessages(w http.ResponseWriter, req *http.Request, ids []string) error {
	threadID, runID := ids[0], req.URL.Query().Get("run_id")
	s.mu.Lock()
	th, ok := s.threads.get(threadID)
	if !ok {
		s.mu.Unlock()
		return notFound("thread", threadID)
	}
	all := make([]foundrywire.Message, 0, len(th.messages))
	for _, m := range th.messages {
		if runID == "" || (m.obj.RunID != nil && *m.obj.RunID == runID) {
			all = append(all, m.obj)
		}
	}
	s.mu.Unlock()
	return writeList(w, req, all, func(m foundrywire.Message) string { return m.ID })
}

func (s *Simulator) listRuns(w http.ResponseWriter, req *http.Request, ids []string) error {
	threadID := ids[0]
	s.mu.Lock()
	th, ok := s.threads.get(threadID)
	if !ok {
		s.mu.Unlock()
		return notFound("thread", threadID)
	}
	runs := make([]foundrywire.Run, 0, len(th.runOrder))
	for _, id := range th.runOrder {
		if r := th.runs[id]; r != nil {
			runs = append(runs, r.obj)
		}
	}
	s.mu.Unlock()
	return writeList(w, req, runs, func(r foundrywire.Run) string { return r.ID })
}

// writeList answers a page of a list call, naming its first and last ids.
func writeList[T any](w http.ResponseWriter, req *http.Request, all []T, id func(T) string) error {
	page, hasMore, err := paginate(req.URL.Query(), all, id)
	if err != nil {
		return err
	}
	list := foundrywire.List{Object: "list", Data: page, HasMore: hasMore}
	if len(page) > 0 {
		list.FirstID, list.LastID = id(page[0]), id(page[len(page)-1])
	}
	return writeJSON(w, http.StatusOK, list)
}

// lookupRun finds a run; the caller holds s.mu.
func (s *Simulator) lookupRun(threadID, runID string) (*thread, *run, error) {
	th, ok := s.threads.get(threadID)
	if !ok {
		return nil, nil, notFound("thread", threadID)
	}
	r, ok := th.runs[runID]
	if !ok {
		return nil, nil, notFound("run", runID)
	}
	return th, r, nil
}

func (s *Simulator) getRun(w http.ResponseWriter, _ *http.Request, ids []string) error {
	return held(w, &s.mu, func() (foundrywire.Run, error) {
		_, r, err := s.lookupRun(ids[0], ids[1])
		if err != nil {
			return foundrywire.Run{}, err
		}
		return r.obj, nil
	})
}

func (s *Simulator) submitToolOutputs(w http.ResponseWriter, req *http.Request, ids []string) error {
	threadID, runID := ids[0], ids[1]
	var body struct {
		ToolOutputs []struct {
			ToolCallID string          `json:"tool_call_id"`
			Output     json.RawMessage `json:"output"`
		} `json:"tool_outputs"`
		Stream bool `json:"stream"`
	}
	if err := decode(w, req, &body, false); err != nil {
		return err
	}
	outputs := make(map[string]string, len(body.ToolOutputs))
	for i, o := range body.ToolOutputs {
		var text string
		if json.Unmarshal(o.Output, &text) != nil {
			return badRequest(fmt.Sprintf("tool_outputs[%d].output", i), "output must be a string.")
		}
		outputs[o.ToolCallID] = text
	}
	s.mu.Lock()
	th, r, err := s.lookupRun(threadID, runID)
	if err == nil {
		err = checkOutputs(r, outputs)
	}
	if err == nil {
		if he := s.refuse(r.mem.magic.refuse, func() [sha256.Size]byte { return callKey(req, &body) }); he != nil {
			err = he
		}
	}
	if err != nil {
		s.mu.Unlock()
		return err
	}
	// The service takes the run out of requires_action as it accepts the
	// outputs, so a second submit is refused.
	r.obj.Status = "queued"
	r.obj.RequiredAction = nil
	return s.deliver(w, req, s.planContinue(th, r, outputs), body.Stream)
}

// checkOutputs requires one output for each pending call and no other.
func checkOutputs(r *run, outputs map[string]string) error {
	if r.obj.Status != "requires_action" {
		return badRequest("", "Runs in status %q do not accept tool outputs.", r.obj.Status)
	}
	switch unknown, missing := unanswered(r.pending, outputs); {
	case len(unknown) > 0:
		return badRequest("tool_outputs", "Tool call %q is not awaiting an output.", unknown[0])
	case len(missing) > 0:
		return badRequest("tool_outputs", "Expected tool outputs for every pending call: missing %s.", missing[0])
	}
	return nil
}

func (s *Simulator) cancel(w http.ResponseWriter, _ *http.Request, ids []string) error {
	threadID, runID := ids[0], ids[1]
	s.mu.Lock()
	_, r, err := s.lookupRun(threadID, runID)
	if err != nil {
		s.mu.Unlock()
		return err
	}
	if !r.activeStatus() {
		s.mu.Unlock()
		return badRequest("", "Cannot cancel run with status '%s'.", r.obj.Status)
	}
	var snapshot foundrywire.Run
	switch t := r.active; {
	case r.obj.Status == "cancelling":
		snapshot = r.obj
	case t != nil:
		// The open stream reports the cancellation and finishes it.
		t.cancelled = true
		close(t.cancelCh)
		r.obj.Status = "cancelling"
		snapshot = r.obj
	default:
		snapshot = r.obj
		snapshot.Status = "cancelling"
		cancelRun(&r.obj, s.now())
	}
	s.mu.Unlock()
	return writeJSON(w, http.StatusOK, snapshot)
}

func (s *Simulator) getAssistant(w http.ResponseWriter, _ *http.Request, ids []string) error {
	id := ids[0]
	if id != DefaultAgentID {
		return notFound("assistant", id)
	}
	var tools []json.RawMessage
	_ = json.Unmarshal(defaultTools(), &tools) // a constant that parses
	return writeJSON(w, http.StatusOK, foundrywire.Assistant{
		ID: DefaultAgentID, Object: "assistant", CreatedAt: 0, Name: "brainwire-classifier-sim",
		Description: agentDescription,
		Model:       DefaultModel, Instructions: s.cfg.Instructions, Tools: tools, Metadata: json.RawMessage(`{}`),
	})
}
