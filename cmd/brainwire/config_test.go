package main

import (
	"fmt"
	"strings"
	"testing"
)

// TestLoadConfig: what serve reads from the environment, its defaults
// and the settings given.
func TestLoadConfig(t *testing.T) {
	for _, c := range []struct {
		env  map[string]string
		want string
	}{
		{nil, "addr=127.0.0.1:8000 data=./data run=1m0s refresh=5m0s uploads=8 upload=2m0s h2c=false sim=responses api=responses " +
			"upstream={H2C:true IdleConns:1024 MaxConns:0} retries=2"},
		{map[string]string{"BRAINWIRE_ADDR": ":9000", "BRAINWIRE_DATA_DIR": "/d", "BRAINWIRE_RUN_TIMEOUT": "90", "BRAINWIRE_AGENT_REFRESH": "30s",
			"BRAINWIRE_MAX_UPLOADS": "3", "BRAINWIRE_UPLOAD_TIMEOUT": "1m30s", "BRAINWIRE_H2C": "true", "BRAINWIRE_UPSTREAM_RETRIES": "0",
			"BRAINWIRE_UPSTREAM_H2C": "false", "BRAINWIRE_UPSTREAM_IDLE_CONNS": "64", "BRAINWIRE_UPSTREAM_MAX_CONNS": "32"},
			"addr=:9000 data=/d run=1m30s refresh=30s uploads=3 upload=1m30s h2c=true sim=responses api=responses " +
				"upstream={H2C:false IdleConns:64 MaxConns:32} retries=0"},
	} {
		cfg, err := loadConfig(envFunc(c.env))
		if err != nil {
			t.Errorf("%v: %v", c.env, err)
			continue
		}
		s := cfg.Server
		got := fmt.Sprintf("addr=%s data=%s run=%v refresh=%v uploads=%d upload=%v h2c=%v sim=%s api=%s upstream=%+v retries=%d",
			cfg.Addr, cfg.DataDir, s.RunTimeout, s.AgentRefresh, s.MaxUploads, s.UploadTimeout, s.H2C, cfg.Agent.Sim, cfg.Agent.API, cfg.Upstream, cfg.Retries)
		if got != c.want {
			t.Errorf("%v:\n got %s\nwant %s", c.env, got, c.want)
		}
	}
	// Keys: a generated one, new each start, for the default user; or the configured ones.
	a, _ := loadConfig(envFunc(nil))
	b, _ := loadConfig(envFunc(nil))
	if !strings.HasPrefix(a.GeneratedKey, "bw_") || len(a.GeneratedKey) < 30 || a.Server.Keys[a.GeneratedKey] != "default" || len(a.Server.Keys) != 1 || a.GeneratedKey == b.GeneratedKey {
		t.Errorf("generated keys %q, %q: %v", a.GeneratedKey, b.GeneratedKey, a.Server.Keys)
	}
	c, err := loadConfig(envFunc(map[string]string{"BRAINWIRE_API_KEYS": "k-0123456789abcdef:alice"}))
	if err != nil || c.GeneratedKey != "" || c.Server.Keys["k-0123456789abcdef"] != "alice" {
		t.Errorf("configured keys %v, %v", c.Server.Keys, err)
	}
	for _, bad := range []map[string]string{{"BRAINWIRE_API_KEYS": "short"}, {"ADK_API_BASE_URL": "http://127.0.0.1:8001", "ADK_APP_NAME": "a", "ADK_AUTH_HEADER": "X-Api-Key"}} {
		if _, err := loadConfig(envFunc(bad)); err == nil {
			t.Errorf("%v: accepted", bad)
		}
	}
}
