package server

import (
	"net/http"
	"strconv"

	"github.com/gorilla/mux"

	"github.com/brainwire/brainwire"
)

// ClassifiedByUser is recorded as the classifier when the person picks
// the bucket themselves.
const ClassifiedByUser = "user"

type inboxPage struct {
	Items      []brainwire.InboxItem `json:"items"`
	NextCursor string                `json:"nextCursor,omitempty"`
}

// handleListInbox answers GET /api/inbox?status=&limit=&cursor=, newest first.
func (s *Server) handleListInbox(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	// The store checks status and cursor; a limit it would cut is an error
	// here, so a client never gets fewer items than it asked for silently.
	opts := brainwire.ListOptions{Status: q.Get("status"), Cursor: q.Get("cursor")}
	if v := q.Get("limit"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 || n > brainwire.MaxPageSize {
			writeError(w, brainwire.Errorf(brainwire.EInvalid, "limit must be 1 to %d", brainwire.MaxPageSize))
			return
		}
		opts.Limit = n
	}
	page, err := s.cfg.Store.ListInbox(r.Context(), userFrom(r.Context()), opts)
	if err != nil {
		writeError(w, err)
		return
	}
	if page.Items == nil {
		page.Items = []brainwire.InboxItem{}
	}
	writeJSON(w, http.StatusOK, inboxPage{Items: page.Items, NextCursor: page.NextCursor})
}

func (s *Server) handleGetInbox(w http.ResponseWriter, r *http.Request) {
	id, ok := pathID(w, r)
	if !ok {
		return
	}
	item, err := s.cfg.Store.GetInboxItem(r.Context(), userFrom(r.Context()), id)
	if err != nil {
		writeError(w, err)
		return
	}
	writeJSON(w, http.StatusOK, item)
}

func (s *Server) handleDeleteInbox(w http.ResponseWriter, r *http.Request) {
	id, ok := pathID(w, r)
	if !ok {
		return
	}
	if err := s.cfg.Store.DeleteInboxItem(r.Context(), userFrom(r.Context()), id); err != nil {
		writeError(w, err)
		return
	}
	w.WriteHeader(http.StatusNoContent)
}

type recategorizeRequest struct {
	Bucket string `json:"bucket"`
}

// handleRecategorize moves an item to the bucket the person chose.
func (s *Server) handleRecategorize(w http.ResponseWriter, r *http.Request) {
	id, ok := pathID(w, r)
	if !ok {
		return
	}
	var req recategorizeRequest
	if _, err := s.decodeJSON(w, r, &req, true); err != nil {
		writeError(w, err)
		return
	}
	if !brainwire.ValidBucket(req.Bucket) {
		writeError(w, brainwire.Errorf(brainwire.EInvalid, "bucket must be one of People, Projects, Ideas, Admin"))
		return
	}
	// Whether the person had judged the item before: the store answers
	// the move, not what it replaced.
	before, err := s.cfg.Store.GetInboxItem(r.Context(), userFrom(r.Context()), id)
	if err != nil {
		writeError(w, err)
		return
	}
	now := s.cfg.Now()
	item, err := s.cfg.Store.Recategorize(r.Context(), userFrom(r.Context()), id, req.Bucket, s.cfg.NewID(), ClassifiedByUser, now)
	if err != nil {
		writeError(w, err)
		return
	}
	// The person's bucket is the ground truth for the agent run that
	// filed the item, which the item still records.
	var run brainwire.AgentRun
	if item.AgentRun != nil {
		run = *item.AgentRun
	}
	s.capture.Correction(r.Context(), brainwire.Correction{Kind: brainwire.CorrectionRecategorize, UserID: item.UserID,
		ItemID: item.ID, Run: run, Bucket: req.Bucket, At: now, Repeat: judgedBy(before, ClassifiedByUser), Shadow: item.Shadow})
	writeJSON(w, http.StatusOK, item)
}

// judgedBy reports whether who classified the item last.
func judgedBy(it brainwire.InboxItem, who string) bool {
	return it.ClassificationMeta != nil && it.ClassificationMeta.ClassifiedBy == who
}

func pathID(w http.ResponseWriter, r *http.Request) (string, bool) {
	id := mux.Vars(r)["id"]
	if !validID(id) {
		writeError(w, brainwire.Errorf(brainwire.EInvalid, "invalid inbox item id"))
		return "", false
	}
	return id, true
}
