package server

import (
	"context"
	"log/slog"
	"sync"
	"time"

	"github.com/brainwire/brainwire"
)

// Defaults of the agent description's refresh.
const (
	DefaultAgentRefresh  = 5 * time.Minute
	agentDescribeTimeout = 10 * time.Second
)

// agentCache holds what the provider last said about its agent, so that
// every capture can carry it without asking the agent service. A failed
// refresh keeps the last description.
type agentCache struct {
	d   brainwire.AgentDescriber // nil: the provider cannot describe itself
	log *slog.Logger

	mu   sync.Mutex
	info brainwire.AgentInfo
	ok   bool // info came from the provider
}

func newAgentCache(p brainwire.Provider, log *slog.Logger) *agentCache {
	d, _ := p.(brainwire.AgentDescriber)
	return &agentCache{d: d, log: log}
}

// current is the last description; zero until one succeeded.
func (c *agentCache) current() brainwire.AgentInfo {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.info
}

// refresh asks the provider now. On failure the last description stays
// and the error is returned (and logged, when there was one to keep).
func (c *agentCache) refresh(ctx context.Context) (brainwire.AgentInfo, error) {
	if c.d == nil {
		return brainwire.AgentInfo{}, nil
	}
	ctx, cancel := context.WithTimeout(ctx, agentDescribeTimeout)
	defer cancel()
	info, err := c.d.DescribeAgent(ctx)
	c.mu.Lock()
	defer c.mu.Unlock()
	if err != nil {
		c.log.Warn("agent: describing the agent failed; keeping the last description", "error", err, "version", c.info.Version)
		return c.info, err
	}
	if !c.ok || info.Version != c.info.Version || info.Model != c.info.Model {
		c.log.Info("agent", "id", info.ID, "name", info.Name, "version", info.Version, "model", info.Model,
			"instructions_hash", info.InstructionsHash)
	}
	c.info, c.ok = info, true
	return info, nil
}

// run refreshes every interval until ctx ends.
func (c *agentCache) run(ctx context.Context, every time.Duration) {
	if c.d == nil || every <= 0 {
		return
	}
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			_, _ = c.refresh(ctx)
		}
	}
}

// Agent is the agent captures run now: the provider's last description,
// with Config.Instructions in place of its own when set.
func (s *Server) Agent() brainwire.AgentInfo {
	return s.agent.current().WithInstructions(s.cfg.Instructions)
}

// RefreshAgent asks the provider to describe its agent now, and returns
// the agent captures run from then on (Agent). A failure keeps the last
// description and returns it with the error. Providers that cannot
// describe themselves give a zero agent (with the override's hash, if
// any) and no error.
func (s *Server) RefreshAgent(ctx context.Context) (brainwire.AgentInfo, error) {
	_, err := s.agent.refresh(ctx)
	return s.Agent(), err
}

// agentProbe is the agent as the health check reads it: a provider that
// describes its agent is checked by describing it, which refreshes the
// description with the same call; any other by its own Ping, if it has one.
// An agent brainwire defines is described without asking the service, so
// its provider's Ping reaches the service as well.
func (s *Server) agentProbe() any {
	if s.agent.d != nil {
		return describeProbe{c: s.agent, p: s.cfg.Provider}
	}
	return s.cfg.Provider
}

type describeProbe struct {
	c *agentCache
	p brainwire.Provider
}

func (p describeProbe) Ping(ctx context.Context) error {
	info, err := p.c.refresh(ctx)
	if err != nil {
		return err
	}
	if pg, ok := p.p.(pinger); ok && info.Defined {
		return pg.Ping(ctx)
	}
	return nil
}
