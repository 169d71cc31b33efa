package crashtest

import (
	"context"
	"flag"
	"fmt"
	"maps"
	"math/rand/v2"
	"net/http"
	"sync/atomic"
	"testing"
	"time"

	"github.com/brainwire/brainwire/internal/npmtest"
	"github.com/brainwire/brainwire/internal/testaudio"
)

var (
	flagCaptures = flag.Int("crash.captures", 240, "captures the phones send in a crash run")
	flagPhones   = flag.Int("crash.phones", 12, "phones sending at once")
	flagKills    = flag.Int("crash.kills", 12, "replicas killed (SIGKILL) during a crash run")
	flagStops    = flag.Int("crash.stops", 6, "replicas stopped (SIGSTOP, then SIGCONT) during a crash run")
	flagVoice    = flag.Float64("crash.voice", 0.2, "the share of voice captures")
	flagSeed     = flag.Int64("crash.seed", 0, "the run's seed; 0 takes one from the clock")
)

// runTimeout is the replicas' BRAINWIRE_RUN_TIMEOUT: short, so that a
// killed replica's claims lapse within the run (a claim is a lease of the
// run timeout plus 10 s).
const runTimeout = 3 * time.Second

// uploadTimeout is BRAINWIRE_UPLOAD_TIMEOUT; with the run timeout and a
// minute, it is how old audio must be before a sweep removes it.
const uploadTimeout = 10 * time.Second

// cosmosKey is the Cosmos DB emulator's published well-known key.
const cosmosKey = "C2y6yDjf5/R+ob0N8A7Cgv30VRDJIWEHLM+4QDU5DE2nQ9nDuVTqobD4b8mGGyPMbIZnqyMsEcaGQy67XIw/Jw=="

// store is the store the replicas share: their settings, what the first
// start needs, and how the checks read it.
type store struct {
	env   map[string]string
	first []string // serve's arguments at the first start
	read  func(t *testing.T, dataDir string) stored
}

func sqliteStore() store {
	return store{read: readSQLite}
}

// cosmosEmulator runs the Cosmos DB emulator for the test and returns its
// address.
func cosmosEmulator(t *testing.T) string {
	t.Helper()
	// The bundled TLS certificate expired in 2021: plain HTTP only.
	return npmtest.Start(t, "cosmosdb-server", "--port", "{port}", "--host", "127.0.0.1", "--no-ssl").Addr
}

// cosmosStore is database on the Cosmos DB emulator at addr; hook, when
// set, sees every request a replica sends it, and may drop it.
func cosmosStore(t *testing.T, addr, database string, hook func(*http.Request) (drop bool)) store {
	t.Helper()
	endpoint := npmtest.CosmosProxyHook(t, addr, hook)
	return store{
		env:   map[string]string{"COSMOS_ENDPOINT": endpoint, "COSMOS_KEY": cosmosKey, "COSMOS_DATABASE": database},
		first: []string{"-init-db"},
		read:  func(t *testing.T, _ string) stored { return readCosmos(t, endpoint, database) },
	}
}

// startReplicas starts replicas a and b of serve on st, with their data in
// dataDir (SQLite, the audio) and the settings in envs over the phones'
// key and the run timeout.
func startReplicas(t *testing.T, st store, dataDir string, envs ...map[string]string) (a, b *replica) {
	t.Helper()
	env := map[string]string{
		"BRAINWIRE_DATA_DIR":    dataDir,
		"BRAINWIRE_API_KEYS":    phoneKey + ":" + phoneUser,
		"BRAINWIRE_RUN_TIMEOUT": runTimeout.String(),
	}
	for _, e := range append(envs, st.env) {
		maps.Copy(env, e)
	}
	a = newReplica(t, "a", env, st.first...)
	if err := a.start(); err != nil {
		t.Fatal(err)
	}
	b = newReplica(t, "b", env)
	if err := b.start(); err != nil {
		t.Fatal(err)
	}
	return a, b
}

func TestCrashSQLite(t *testing.T) {
	t.Parallel()
	crash(t, sqliteStore())
}

func TestCrashCosmos(t *testing.T) {
	t.Parallel()
	crash(t, cosmosStore(t, cosmosEmulator(t), "crash", nil))
}

// texts are what the phones' captures say, each made unique by its
// number.
var texts = []string{
	"Call Sarah about the offsite agenda",
	"Renew the car insurance before Friday",
	"Idea: a podcast about urban gardens",
	"Finish the quarterly report for the Atlas project",
	"Ask Tom whether he wants to join the climbing trip",
	"Pay the electricity bill",
	"Maybe a newsletter for the neighbourhood",
	"something about the thing from yesterday",
}

func crash(t *testing.T, st store) {
	seed := *flagSeed
	if seed == 0 {
		seed = time.Now().UnixNano()
	}
	t.Logf("seed %d (-crash.seed %d reproduces the run's choices)", seed, seed)
	rng := rand.New(rand.NewPCG(uint64(seed), 1))

	agent, agentEnv := agentService(t, faultRates{refuse: 0.04, reset: 0.02, lose: 0.02, stall: 0.03, maxStall: runTimeout + time.Second}, rng.Uint64())
	speech, tr, trEnv := transcriptionService(t, faultRates{refuse: 0.1, reset: 0.03, lose: 0.02, stall: 0.02, maxStall: 2 * time.Second}, rng.Uint64())
	dataDir := t.TempDir()
	a, b := startReplicas(t, st, dataDir, agentEnv, trEnv, map[string]string{"BRAINWIRE_UPLOAD_TIMEOUT": uploadTimeout.String()})
	replicas := []*replica{a, b}

	caps := make([]*capture, *flagCaptures)
	for i := range caps {
		c := &capture{n: i, key: fmt.Sprintf("crash-%d-%d", seed, i),
			text: fmt.Sprintf("%s (%d-%d)", texts[rng.IntN(len(texts))], seed%1000, i)}
		if rng.Float64() < *flagVoice {
			c.audio = testaudio.WAV(t, c.text)
			speech.say(c.audio, c.text)
		}
		caps[i] = c
	}

	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	n := newNemesis(replicas, rng.Uint64(), *flagKills, *flagStops, []*faulty{agent, tr})
	var done atomic.Int64
	nemesisDone := make(chan error, 1)
	go func() { nemesisDone <- n.run(ctx, func() float64 { return float64(done.Load()) / float64(len(caps)) }) }()
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 64}}
	started := time.Now()
	errs := phones(ctx, *flagPhones, caps, func(i int) *phone {
		return &phone{client: client, replicas: replicas, rng: rand.New(rand.NewPCG(uint64(seed), uint64(i)+2)),
			hangUp: 0.05, giveUp: runTimeout + 3*time.Second,
			heard: func(r *replica, replayed bool) {
				done.Add(1)
				if !replayed {
					n.heard(r)
				}
			}}
	})
	took := time.Since(started)
	n.finish()
	if err := <-nemesisDone; err != nil {
		t.Fatal(err)
	}
	for _, r := range replicas {
		r.cont()
		if !r.up() {
			if err := r.start(); err != nil {
				t.Fatal(err)
			}
		}
	}
	for _, err := range errs {
		t.Error(err)
	}
	if t.Failed() {
		t.FailNow()
	}

	c := &checks{t: t}
	checkStore(c, st.read(t, dataDir), caps, time.Now())
	checkReplays(context.Background(), c, client, a, caps)
	orphans := checkAudio(c, dataDir, b, uploadTimeout+runTimeout)
	c.check(n.killed >= *flagKills && n.stopped >= *flagStops, "the nemesis killed %d and stopped %d times, asked %d and %d",
		n.killed, n.stopped, *flagKills, *flagStops)
	t.Logf("%s", summary(caps, fmt.Sprintf("in %v; %d kills (%d right after a filing), %d stops, %d outages; "+
		"agent service: %s; transcription: %s; %d audio files left by kills and swept; %d invariant checks, %d broken",
		took.Round(time.Second), n.killed, n.afterFiling, n.stopped, n.outages, agent, tr, orphans, c.n, c.broken)))
	if t.Failed() {
		for _, r := range replicas {
			t.Logf("the end of %s's log:\n%s", r.name, r.tail())
		}
	}
}

// nemesis kills and stops the replicas, and brings outages on the
// services, spread over the phones' run, never taking both replicas down
// at once.
type nemesis struct {
	replicas []*replica
	services []*faulty
	rng      *rand.Rand
	plan     []string // the actions, in order
	heardc   chan *replica
	end      chan struct{}

	killed, stopped, afterFiling, outages int
}

func newNemesis(replicas []*replica, seed uint64, kills, stops int, services []*faulty) *nemesis {
	n := &nemesis{replicas: replicas, services: services, rng: rand.New(rand.NewPCG(seed, 3)),
		heardc: make(chan *replica, 1), end: make(chan struct{})}
	for i := range kills {
		// Half of the kills come right after a filing: the phone has
		// just heard its outcome, the run is still going.
		if i%2 == 0 {
			n.plan = append(n.plan, "kill after filing")
		} else {
			n.plan = append(n.plan, "kill")
		}
	}
	for range stops {
		n.plan = append(n.plan, "stop")
	}
	n.rng.Shuffle(len(n.plan), func(i, j int) { n.plan[i], n.plan[j] = n.plan[j], n.plan[i] })
	return n
}

// heard is told that a phone heard an outcome from r's run.
func (n *nemesis) heard(r *replica) {
	select {
	case n.heardc <- r:
	default:
	}
}

// finish ends the nemesis: the phones are done.
func (n *nemesis) finish() { close(n.end) }

// run acts on the plan, the i-th action once progress() reaches i+1 parts
// of len(plan)+1.
func (n *nemesis) run(ctx context.Context, progress func() float64) error {
	for i, action := range n.plan {
		for progress() < float64(i+1)/float64(len(n.plan)+1) {
			select {
			case <-time.After(20 * time.Millisecond):
			case <-n.end:
				return nil
			case <-ctx.Done():
				return nil
			}
		}
		if n.rng.Float64() < 0.3 {
			n.outages++
			n.services[n.rng.IntN(len(n.services))].outage(time.Duration(500+n.rng.IntN(1500)) * time.Millisecond)
		}
		var err error
		switch action {
		case "kill":
			err = n.kill(n.pick())
		case "kill after filing":
			err = n.killAfterFiling()
		case "stop":
			n.stop(n.pick())
		}
		if err != nil {
			return err
		}
	}
	return nil
}

// pick is a replica at random.
func (n *nemesis) pick() *replica { return n.replicas[n.rng.IntN(len(n.replicas))] }

// other is the replica that is not r.
func (n *nemesis) other(r *replica) *replica {
	if n.replicas[0] == r {
		return n.replicas[1]
	}
	return n.replicas[0]
}

// kill kills r, unless the other replica is down, and starts it again a
// moment later.
func (n *nemesis) kill(r *replica) error {
	if !n.other(r).up() {
		return nil
	}
	r.kill()
	n.killed++
	time.Sleep(time.Duration(100+n.rng.IntN(700)) * time.Millisecond)
	return r.start()
}

// killAfterFiling kills the next replica a phone hears an outcome from,
// or, should none come for a while (the last captures being done), one
// at random.
func (n *nemesis) killAfterFiling() error {
	select {
	case <-n.heardc: // heard before the plan came to this
	default:
	}
	timeout := time.After(3 * time.Second)
	for {
		select {
		case r := <-n.heardc:
			if !n.other(r).up() {
				continue
			}
			n.afterFiling++
			return n.kill(r)
		case <-timeout:
			return n.kill(n.pick())
		case <-n.end:
			return n.kill(n.pick())
		}
	}
}

// stop stops r for a while, unless the other replica is down.
func (n *nemesis) stop(r *replica) {
	if !n.other(r).up() || !r.stop() {
		return
	}
	n.stopped++
	time.Sleep(time.Duration(300+n.rng.IntN(2700)) * time.Millisecond)
	r.cont()
}
