package main

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/data/azcosmos"

	"github.com/brainwire/brainwire"
	"github.com/brainwire/brainwire/cosmos"
	"github.com/brainwire/brainwire/internal/npmtest"
	"github.com/brainwire/brainwire/internal/syncbuf"
	"github.com/brainwire/brainwire/simulator"
)

// cosmosKey is the Cosmos DB emulator's published well-known key.
const cosmosKey = "C2y6yDjf5/R+ob0N8A7Cgv30VRDJIWEHLM+4QDU5DE2nQ9nDuVTqobD4b8mGGyPMbIZnqyMsEcaGQy67XIw/Jw=="

// startCosmos runs the Cosmos DB emulator for the test and returns its
// endpoint (through npmtest.CosmosProxy).
func startCosmos(t *testing.T) string {
	t.Helper()
	// The bundled TLS certificate expired in 2021: plain HTTP only.
	srv := npmtest.Start(t, "cosmosdb-server", "--port", "{port}", "--host", "127.0.0.1", "--no-ssl")
	// A read of a document another replica has just deleted must be the
	// service's 404, not the emulator's 500.
	return npmtest.CosmosProxy(t, srv.Addr)
}

// replica is one `brainwire serve` process, in-process: what serve
// returned is on done once it exits.
type replica struct {
	base string
	logs *syncbuf.Buffer
	stop func() error
}

// startReplica runs serve with env and -init-db as asked, until the test
// ends (tryServe).
func startReplica(t *testing.T, env map[string]string, initDB bool) (*replica, error) {
	t.Helper()
	base, logs, stop, err := tryServe(t, env, "-init-db="+strconv.FormatBool(initDB))
	if err != nil {
		return nil, err
	}
	return &replica{base: base, logs: logs, stop: stop}, nil
}

func cosmosEnv(endpoint, database string) map[string]string {
	return map[string]string{"COSMOS_ENDPOINT": endpoint, "COSMOS_KEY": cosmosKey, "COSMOS_DATABASE": database}
}

func cosmosClient(t *testing.T, endpoint string) *azcosmos.Client {
	t.Helper()
	cred, err := azcosmos.NewKeyCredential(cosmosKey)
	if err != nil {
		t.Fatal(err)
	}
	c, err := azcosmos.NewClientWithKey(endpoint, cred, nil)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// A database made the way the Python backend made it (five containers on
// /userId, default indexing) lacks the Inbox's composite index: serve
// refuses it at start-up and says what to run; -init-db adds the index
// and the inbox lists.
func TestServeRefusesAnInboxWithoutItsIndex(t *testing.T) {
	endpoint := startCosmos(t)
	const database = "from-python"
	ctx := context.Background()
	client := cosmosClient(t, endpoint)
	if _, err := client.CreateDatabase(ctx, azcosmos.DatabaseProperties{ID: database}, nil); err != nil {
		t.Fatal(err)
	}
	db, _ := client.NewDatabase(database)
	for _, name := range append([]string{cosmos.InboxContainer}, brainwire.Buckets...) {
		if _, err := db.CreateContainer(ctx, azcosmos.ContainerProperties{ID: name,
			PartitionKeyDefinition: azcosmos.PartitionKeyDefinition{Paths: []string{cosmos.PartitionKeyPath}}}, nil); err != nil {
			t.Fatal(err)
		}
	}

	_, err := startReplica(t, cosmosEnv(endpoint, database), false)
	if err == nil {
		t.Fatal("serve started on an Inbox without its composite index")
	}
	for _, want := range []string{"composite index", "brainwire serve -init-db", "az cosmosdb sql container update", "--database-name " + database} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("serve's error does not say %q: %v", want, err)
		}
	}

	r, err := startReplica(t, cosmosEnv(endpoint, database), true)
	if err != nil {
		t.Fatalf("serve -init-db: %v", err)
	}
	resp := call(t, r, http.MethodGet, "/api/inbox", "")
	if resp.status != http.StatusOK {
		t.Fatalf("GET /api/inbox after -init-db: %d %s", resp.status, resp.body)
	}
	// A replica started after it finds the database set up.
	if _, err := startReplica(t, cosmosEnv(endpoint, database), false); err != nil {
		t.Fatalf("serve on the set-up database: %v", err)
	}
}

// answer is one HTTP answer, read to its end.
type answer struct {
	status   int
	body     string
	stream   bool
	replayed bool // Idempotent-Replayed: true
}

func call(t *testing.T, r *replica, method, path, body string) answer {
	t.Helper()
	return callKeyed(t, r, method, path, body, "")
}

// callKeyed is call with an Idempotency-Key, unless key is "".
func callKeyed(t *testing.T, r *replica, method, path, body, key string) answer {
	t.Helper()
	req, _ := http.NewRequest(method, r.base+path, strings.NewReader(body))
	if key != "" {
		req.Header.Set("Idempotency-Key", key)
	}
	req.Header.Set("Authorization", "Bearer "+phoneKey)
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Errorf("%s %s: %v", method, path, err)
		return answer{}
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return answer{status: resp.StatusCode, body: string(b), stream: resp.Header.Get("Content-Type") == "text/event-stream",
		replayed: resp.Header.Get("Idempotent-Replayed") == "true"}
}

// outcome is the capture-v2 outcome event of a stream, and its value.
func outcome(t *testing.T, sse string) (string, map[string]any) {
	t.Helper()
	sc := bufio.NewScanner(strings.NewReader(sse))
	for sc.Scan() {
		line, ok := strings.CutPrefix(sc.Text(), "data: ")
		if !ok {
			continue
		}
		var ev struct {
			Type  string
			Value map[string]any
		}
		if err := json.Unmarshal([]byte(line), &ev); err != nil {
			t.Fatalf("frame %q: %v", line, err)
		}
		switch ev.Type {
		case "CLASSIFIED", "LOW_CONFIDENCE", "MISUNDERSTOOD", "UNRESOLVED", "ERROR":
			return ev.Type, ev.Value
		}
	}
	return "", nil
}

// race sends the calls at once, each to its replica, and returns the
// answers in order.
func race(t *testing.T, calls []func() answer) []answer {
	out := make([]answer, len(calls))
	var wg sync.WaitGroup
	start := make(chan struct{})
	for i, c := range calls {
		wg.Go(func() {
			<-start
			out[i] = c()
		})
	}
	close(start)
	wg.Wait()
	return out
}

// records lists the bucket records of the user that link to itemID, in
// every bucket container, straight from the database.
func records(t *testing.T, db *azcosmos.DatabaseClient, itemID string) []string {
	t.Helper()
	var found []string
	for _, b := range brainwire.Buckets {
		c, _ := db.NewContainer(b)
		pager := c.NewQueryItemsPager("SELECT c.id FROM c WHERE c.userId = @u AND c.inboxRecordId = @i",
			azcosmos.NewPartitionKeyString("phone-user"), &azcosmos.QueryOptions{QueryParameters: []azcosmos.QueryParameter{
				{Name: "@u", Value: "phone-user"}, {Name: "@i", Value: itemID}}})
		for pager.More() {
			page, err := pager.NextPage(context.Background())
			if err != nil {
				t.Fatalf("querying %s: %v", b, err)
			}
			for _, raw := range page.Items {
				var d struct{ ID string }
				_ = json.Unmarshal(raw, &d)
				found = append(found, b+"/"+d.ID)
			}
		}
	}
	return found
}

// TestTwoReplicasOnOneCosmosDatabase runs two `serve` processes on one
// Cosmos DB database and one agent service (a shared simulator: the
// built-in one lives in one process), and races follow-ups and
// recategorizes across them. Every follow-up round runs once, whichever
// replica gets it; every item ends with exactly one bucket record, linked
// both ways, and both replicas read the same item.
func TestTwoReplicasOnOneCosmosDatabase(t *testing.T) {
	endpoint := startCosmos(t)
	// runs counts the agent runs the replicas start (POST .../runs).
	var runs atomic.Int64
	simulated := simulator.New(simulator.Config{ChunkDelay: time.Millisecond})
	sim := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodPost && strings.HasSuffix(r.URL.Path, "/runs") {
			runs.Add(1)
		}
		simulated.ServeHTTP(w, r)
	}))
	t.Cleanup(sim.Close)
	env := cosmosEnv(endpoint, "replicas")
	env["AZURE_AI_PROJECT_ENDPOINT"] = sim.URL + simulator.ProjectPath
	env["AZURE_AI_AGENT_ID"] = simulator.DefaultAgentID
	env["AZURE_AI_PROJECT_TOKEN"] = "simulator"
	a, err := startReplica(t, env, true)
	if err != nil {
		t.Fatalf("replica a: %v", err)
	}
	b, err := startReplica(t, env, false)
	if err != nil {
		t.Fatalf("replica b: %v", err)
	}
	replicas := []*replica{a, b}
	db, _ := cosmosClient(t, endpoint).NewDatabase("replicas")

	misunderstood := func() string {
		t.Helper()
		ans := call(t, a, http.MethodPost, "/api/capture", `{"text":"hmm zzkx"}`)
		typ, v := outcome(t, ans.body)
		if typ != "MISUNDERSTOOD" {
			t.Fatalf("capture: %d %s", ans.status, ans.body)
		}
		return v["inboxItemId"].(string)
	}
	followUp := func(r *replica, id, text string, round int) func() answer {
		body, _ := json.Marshal(map[string]any{"inbox_item_id": id, "follow_up_text": text, "follow_up_round": round})
		return func() answer { return call(t, r, http.MethodPost, "/api/capture/follow-up", string(body)) }
	}
	recategorize := func(r *replica, id, bucket string) func() answer {
		return func() answer {
			return call(t, r, http.MethodPatch, "/api/inbox/"+id+"/recategorize", `{"bucket":"`+bucket+`"}`)
		}
	}
	item := func(r *replica, id string) brainwire.InboxItem {
		t.Helper()
		ans := call(t, r, http.MethodGet, "/api/inbox/"+id, "")
		var it brainwire.InboxItem
		if ans.status != http.StatusOK || json.Unmarshal([]byte(ans.body), &it) != nil {
			t.Fatalf("GET item %s: %d %s", id, ans.status, ans.body)
		}
		return it
	}
	// consistent checks what both replicas and the database say of id.
	consistent := func(id string) brainwire.InboxItem {
		t.Helper()
		it := item(a, id)
		if other := item(b, id); other.Status != it.Status || other.FiledRecordID != it.FiledRecordID || other.UpdatedAt != it.UpdatedAt {
			t.Errorf("replicas disagree on %s: %+v vs %+v", id, it, other)
		}
		recs := records(t, db, id)
		switch {
		case it.Status == brainwire.StatusMisunderstood && len(recs) != 0:
			t.Errorf("misunderstood item %s has records %v", id, recs)
		case it.Status != brainwire.StatusMisunderstood &&
			(len(recs) != 1 || recs[0] != it.ClassificationMeta.Bucket+"/"+it.FiledRecordID):
			t.Errorf("item %s (%s in %s, record %s) has records %v, want exactly its own", id, it.Status,
				it.ClassificationMeta.Bucket, it.FiledRecordID, recs)
		}
		return it
	}

	t.Run("follow-ups", func(t *testing.T) {
		for range 3 {
			id := misunderstood()
			var calls []func() answer
			for i := range 6 {
				calls = append(calls, followUp(replicas[i%2], id, "I meant: call my friend Sam about his birthday party", 1))
			}
			ran := 0
			for i, ans := range race(t, calls) {
				switch {
				case ans.status == http.StatusOK && ans.stream:
					ran++
					if typ, _ := outcome(t, ans.body); typ != "CLASSIFIED" {
						t.Errorf("the follow-up that ran: %s", ans.body)
					}
				case ans.status == http.StatusConflict && !ans.stream:
				default:
					t.Errorf("follow-up %d (replica %d): %d %s", i, i%2, ans.status, ans.body)
				}
			}
			if ran != 1 {
				t.Fatalf("%d of 6 follow-ups across two replicas ran, want 1", ran)
			}
			if it := consistent(id); it.FollowUpRounds != 1 || it.Status != brainwire.StatusClassified {
				t.Errorf("item after the race: %+v", it)
			}
		}
	})

	t.Run("recategorizes", func(t *testing.T) {
		id := misunderstood()
		buckets := []string{"People", "Projects", "Ideas", "Admin", "People", "Ideas"}
		for round := range 3 {
			var calls []func() answer
			for i, bk := range buckets {
				calls = append(calls, recategorize(replicas[(i+round)%2], id, bk))
			}
			won := map[string]bool{}
			for i, ans := range race(t, calls) {
				switch ans.status {
				case http.StatusOK:
					won[buckets[i]] = true
				case http.StatusConflict:
				default:
					t.Errorf("recategorize %d: %d %s", i, ans.status, ans.body)
				}
			}
			if len(won) == 0 {
				t.Fatal("no recategorize went through")
			}
			it := consistent(id)
			if it.Status != brainwire.StatusClassified || !won[it.ClassificationMeta.Bucket] || it.ClassificationMeta.ClassifiedBy != "user" {
				t.Errorf("item after round %d: %s in %s by %s; buckets that answered 200: %v", round, it.Status,
					it.ClassificationMeta.Bucket, it.ClassificationMeta.ClassifiedBy, won)
			}
		}
	})

	t.Run("follow-ups against recategorizes", func(t *testing.T) {
		for range 3 {
			id := misunderstood()
			answers := race(t, []func() answer{
				followUp(a, id, "I meant: call my friend Sam about his birthday party", 1),
				recategorize(b, id, "Ideas"),
				followUp(b, id, "I meant: call my friend Sam about his birthday party", 1),
				recategorize(a, id, "Admin"),
			})
			for i, ans := range answers {
				if ans.status != http.StatusOK && ans.status != http.StatusConflict {
					t.Errorf("call %d: %d %s", i, ans.status, ans.body)
				}
			}
			if answers[0].stream && answers[2].stream {
				t.Errorf("both follow-ups ran:\n%s\n%s", answers[0].body, answers[2].body)
			}
			it := consistent(id)
			if it.Status != brainwire.StatusClassified || it.FollowUpRounds > 1 {
				t.Errorf("item after the race: %+v", it)
			}
		}
	})
	// A phone retrying one capture again and again, its requests landing
	// on either replica, files it once and runs the agent once: every
	// other request is told to wait (409) or replays the same item.
	t.Run("repeats of one capture", func(t *testing.T) {
		for round := range 3 {
			const n = 10
			key := `"retry-` + strconv.Itoa(round) + `"`
			text := "Call Sarah about the offsite, take " + strconv.Itoa(round)
			body, _ := json.Marshal(map[string]string{"text": text})
			var calls []func() answer
			for i := range n {
				calls = append(calls, func() answer { return callKeyed(t, replicas[i%2], http.MethodPost, "/api/capture", string(body), key) })
			}
			before := runs.Load()
			ids, ran := map[string]bool{}, 0
			for i, ans := range race(t, calls) {
				switch {
				case ans.status == http.StatusOK && ans.stream:
					typ, v := outcome(t, ans.body)
					if typ != "CLASSIFIED" {
						t.Errorf("request %d: %s", i, ans.body)
						continue
					}
					ids[v["inboxItemId"].(string)] = true
					if !ans.replayed {
						ran++
					}
				case ans.status == http.StatusConflict && !ans.stream:
				default:
					t.Errorf("request %d (replica %d): %d %s", i, i%2, ans.status, ans.body)
				}
			}
			if ran != 1 || len(ids) > 1 {
				t.Fatalf("%d of %d repeats ran, naming items %v; want 1 run and one item", ran, n, ids)
			}
			if got := runs.Load() - before; got != 1 {
				t.Errorf("%d agent runs for one capture", got)
			}
			var id string
			for id = range ids {
			}
			// Later repeats, on either replica, replay it.
			for _, r := range replicas {
				ans := callKeyed(t, r, http.MethodPost, "/api/capture", string(body), key)
				if _, v := outcome(t, ans.body); !ans.replayed || v["inboxItemId"] != id {
					t.Errorf("a later repeat: %d (replayed %v) %s, want a replay of %s", ans.status, ans.replayed, ans.body, id)
				}
			}
			if got := runs.Load() - before; got != 1 {
				t.Errorf("%d agent runs after the later repeats", got)
			}
			// One item in the inbox holds the text.
			ans := call(t, a, http.MethodGet, "/api/inbox?limit=100", "")
			if n := strings.Count(ans.body, text); n != 1 {
				t.Errorf("%d inbox items hold %q", n, text)
			}
			consistent(id)
		}
	})

	for _, r := range replicas {
		if l := r.logs.String(); strings.Contains(l, "request failed") {
			t.Errorf("a replica answered 5xx:\n%s", l)
		}
	}
}
