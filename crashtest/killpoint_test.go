package crashtest

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// killPoint is a moment of a capture's run at which its replica dies:
// when the replica sends the agent service (agent) or the store (store)
// the call that says so, or when the phone has heard its outcome (heard).
type killPoint struct {
	name  string
	agent func(r *http.Request, body []byte) bool
	store func(r *http.Request, body []byte) bool
	heard bool
	// filed says the replica filed the capture before it died: the
	// phone's repeat replays it, else it runs afresh.
	filed bool
}

var (
	// The capture's first response is asked for: nothing is filed yet.
	beforeFiling = killPoint{name: "BeforeTheFiling",
		agent: func(r *http.Request, body []byte) bool {
			return r.Method == http.MethodPost && strings.HasSuffix(r.URL.Path, "/responses")
		}}
	// The capture is filed and its phone told, the agent's run goes on.
	afterFiling = killPoint{name: "AfterTheFiling", filed: true, heard: true}
	// The bucket record is written, the item not yet: Cosmos DB keeps
	// them in different containers.
	betweenRecordAndItem = killPoint{name: "BetweenRecordAndItem",
		store: func(r *http.Request, body []byte) bool {
			return r.Method == http.MethodPost && strings.HasSuffix(r.URL.Path, "/colls/Inbox/docs")
		}}
	// The item is written, the key not yet settled: Cosmos DB keeps them
	// in different containers.
	betweenFilingAndSettling = killPoint{name: "BetweenFilingAndSettling", filed: true,
		store: func(r *http.Request, body []byte) bool {
			return r.Method == http.MethodPut && strings.Contains(r.URL.Path, "/colls/IdempotencyKeys/docs/") &&
				bytes.Contains(body, []byte(`"state":"done"`))
		}}
)

// A replica killed at any point of a capture leaves a store in which the
// phone's repeat, on the other replica, files the capture once: afresh
// when the first filed nothing, else as a replay of what it filed. On
// SQLite the filing and its key are one transaction: there is no moment
// between them to die in.
func TestKillPoints(t *testing.T) {
	for _, p := range []killPoint{beforeFiling, afterFiling} {
		t.Run("SQLite/"+p.name, func(t *testing.T) {
			t.Parallel()
			killAt(t, p, sqliteStore(), nil)
		})
	}
	emulator := cosmosEmulator(t)
	for _, p := range []killPoint{beforeFiling, betweenRecordAndItem, betweenFilingAndSettling, afterFiling} {
		t.Run("Cosmos/"+p.name, func(t *testing.T) {
			t.Parallel()
			var hook atomic.Pointer[func(*http.Request, []byte) bool]
			st := cosmosStore(t, emulator, "kill-"+p.name, func(r *http.Request) bool {
				h := hook.Load()
				if h == nil {
					return false
				}
				body, _ := io.ReadAll(r.Body)
				r.Body = io.NopCloser(bytes.NewReader(body))
				return (*h)(r, body)
			})
			killAt(t, p, st, func(h func(*http.Request, []byte) bool) { hook.Store(&h) })
		})
	}
}

// killAt runs a capture on replica a, kills a at p, and repeats the
// capture on replica b until it hears an outcome.
// setStoreHook, when not nil, makes a hook see every call to the store
// (and drop those it returns true for).
func killAt(t *testing.T, p killPoint, st store, setStoreHook func(func(*http.Request, []byte) bool)) {
	agent, agentEnv := agentService(t, faultRates{}, 1)
	dataDir := t.TempDir()
	a, b := startReplicas(t, st, dataDir, agentEnv)

	var once sync.Once
	died := make(chan struct{})
	kill := func() (fired bool) {
		once.Do(func() {
			a.kill()
			close(died)
			fired = true
		})
		return fired
	}
	die := func(at func(*http.Request, []byte) bool) func(*http.Request, []byte) bool {
		return func(r *http.Request, body []byte) bool {
			// The dead replica's call goes no further.
			return at != nil && at(r, body) && kill()
		}
	}
	agent.setHook(die(p.agent))
	if p.store != nil {
		setStoreHook(die(p.store))
	}

	c := &capture{key: "kill-" + p.name, text: "Call Sarah about the offsite agenda"}
	client := &http.Client{}
	ctx := context.Background()
	first := send(ctx, client, a.base(), c, 30*time.Second)
	if p.heard && first.outcome != "" {
		kill()
	}
	select {
	case <-died:
	case <-time.After(30 * time.Second):
		t.Fatalf("replica a did not reach %s: its capture ended %s %s", p.name, first.reason(), first.outcome)
	}
	if first.outcome != "" && !p.filed {
		t.Fatalf("the phone heard %s from a replica killed before filing", first.outcome)
	}

	// The phone repeats on b until it hears an outcome: 409 while a's
	// claim stands, unless a settled the key.
	var final attempt
	var conflicts int
	deadline := time.Now().Add(60 * time.Second)
	for final.outcome == "" {
		if time.Now().After(deadline) {
			t.Fatalf("no outcome from b within a minute: last %s (%d conflicts)\n%s", final.reason(), conflicts, b.tail())
		}
		final = send(ctx, client, b.base(), c, 30*time.Second)
		if final.status == http.StatusConflict {
			conflicts++
			time.Sleep(final.retryAfter)
		}
	}
	if final.replayed != p.filed {
		t.Errorf("b's answer %s: replayed %v; want a replay only of a capture a filed", final.outcome, final.replayed)
	}
	if first.outcome != "" && final.outcome != first.outcome {
		t.Errorf("the phone heard %s from a, then %s from b", first.outcome, final.outcome)
	}
	c.heard, c.kind, c.itemID, c.from = final.outcome, final.kind, final.itemID, "b"
	checks := &checks{t: t}
	checkStore(checks, st.read(t, dataDir), []*capture{c}, time.Now())
	t.Logf("a died %s; the phone heard %q from a, then, after %d conflicts, %s from b (replayed %v); %d checks",
		p.name, first.outcome, conflicts, final.outcome, final.replayed, checks.n)
}
