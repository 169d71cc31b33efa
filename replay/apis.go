package replay

import (
	"fmt"
	"net/http"
	"regexp"
	"strings"

	"github.com/brainwire/brainwire"
	"github.com/brainwire/brainwire/adk"
	"github.com/brainwire/brainwire/foundry"
	"github.com/brainwire/brainwire/recorder"
	"github.com/brainwire/brainwire/telemetry"
	"github.com/brainwire/brainwire/wiring"
)

// agentAPI is one agent service API replay can serve: it recognizes a
// recording made against it, and configures a provider to make the
// recorded requests again against the fake upstream at base.
type agentAPI struct {
	name string
	// recorded reports whether the first request of a recording is one
	// of this API's.
	recorded func(first recorder.Request) bool
	// agent is wiring.Config.Agent for the replay of fx.
	agent func(base string, fx *recorder.Fixture) func(http.RoundTripper) (brainwire.Provider, error)
	// telemetryAgent is how telemetry names the agent of fx.
	telemetryAgent func(fx *recorder.Fixture) telemetry.Agent
	// user is the user the recorded requests name, when the API's
	// requests name one: the replay's capture must be that user's.
	user func(fx *recorder.Fixture) string
}

// agentAPIs are the APIs replay knows, tried in order.
var agentAPIs = []agentAPI{threadsRunsAPI, responsesAPI, adkAPI}

// apiOf finds the API a fixture was recorded against.
func apiOf(fx *recorder.Fixture) (agentAPI, error) {
	if len(fx.Exchanges) == 0 {
		// A capture refused before any upstream call replays on any API.
		return threadsRunsAPI, nil
	}
	first := fx.Exchanges[0].Request
	for _, api := range agentAPIs {
		if api.recorded(first) {
			return api, nil
		}
	}
	return agentAPI{}, fmt.Errorf("replay: %s: no known agent API makes the request %s %s", fx.Name, first.Method, first.Path)
}

// threadsRunsAPI is the Foundry Agent Service threads/runs API (and the
// simulator's face of it).
var threadsRunsAPI = agentAPI{
	name: "threads/runs",
	recorded: func(first recorder.Request) bool {
		op := operationPath(first.Path)
		return strings.HasPrefix(op, "/threads") || strings.HasPrefix(op, "/assistants")
	},
	agent: func(base string, fx *recorder.Fixture) func(http.RoundTripper) (brainwire.Provider, error) {
		prefix, apiVersion, agentID := threadsRunsParams(fx)
		return wiring.Foundry(base+prefix, agentID, apiVersion, nil)
	},
	telemetryAgent: func(fx *recorder.Fixture) telemetry.Agent {
		_, _, agentID := threadsRunsParams(fx)
		return telemetry.Agent{Name: AgentName, ID: agentID, Provider: foundry.ProviderName}
	},
}

var assistantID = regexp.MustCompile(`"assistant_id":\s*"([^"]+)"`)

// threadsRunsParams reads from the first recorded request what the client
// must be configured with to make the same requests.
func threadsRunsParams(fx *recorder.Fixture) (prefix, apiVersion, agentID string) {
	prefix, apiVersion, agentID = "/api/projects/replay", "v1", "asst_replay"
	if len(fx.Exchanges) == 0 {
		return
	}
	rq := fx.Exchanges[0].Request
	if p := projectPrefix(rq.Path); p != "" {
		prefix = p
	}
	if v := rq.Query["api-version"]; v != "" {
		apiVersion = v
	}
	if m := assistantID.FindSubmatch(rq.BodyBytes()); m != nil {
		agentID = string(m[1])
	}
	return
}

// adkAPI is a Google ADK API server's (and the simulator's face of one).
var adkAPI = agentAPI{
	name: "adk",
	recorded: func(first recorder.Request) bool {
		_, _, ok := adkRoute(first.Path)
		return ok
	},
	agent: func(base string, fx *recorder.Fixture) func(http.RoundTripper) (brainwire.Provider, error) {
		prefix, appName := adkParams(fx)
		return wiring.ADK(base+prefix, appName, nil)
	},
	telemetryAgent: func(fx *recorder.Fixture) telemetry.Agent {
		_, appName := adkParams(fx)
		return telemetry.Agent{Name: AgentName, ID: appName, Provider: adk.ProviderName}
	},
	user: func(fx *recorder.Fixture) string {
		for _, ex := range fx.Exchanges {
			if m := adkUserID.FindSubmatch(ex.Request.BodyBytes()); m != nil {
				return string(m[1])
			}
		}
		return ""
	},
}

var adkUserID = regexp.MustCompile(`"userId":\s*"([^"\\]+)"`)

// adkRoute splits a path of the API server's routes into what comes
// before them (a proxy's prefix) and, for a session route, the app.
func adkRoute(p string) (prefix, appName string, ok bool) {
	for _, route := range []string{"/run_sse", "/list-apps"} {
		if before, found := strings.CutSuffix(p, route); found {
			return before, "", true
		}
	}
	i := strings.Index(p, "/apps/")
	if i < 0 {
		return "", "", false
	}
	seg := strings.Split(p[i+len("/apps/"):], "/")
	if len(seg) < 4 || seg[1] != "users" || seg[3] != "sessions" {
		return "", "", false
	}
	return p[:i], seg[0], true
}

var adkAppName = regexp.MustCompile(`"appName":\s*"([^"]+)"`)

// adkParams reads from the first recorded request the base URL's prefix
// and the app: a new capture's first request creates its session, a
// follow-up's runs the app on the session it continues.
func adkParams(fx *recorder.Fixture) (prefix, appName string) {
	appName = "replay_app"
	if len(fx.Exchanges) == 0 {
		return "", appName
	}
	rq := fx.Exchanges[0].Request
	prefix, fromPath, _ := adkRoute(rq.Path)
	switch {
	case fromPath != "":
		appName = fromPath
	default:
		if m := adkAppName.FindSubmatch(rq.BodyBytes()); m != nil {
			appName = string(m[1])
		}
	}
	return prefix, appName
}
