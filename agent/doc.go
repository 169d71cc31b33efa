// Package agent runs an agent: the one loop that reads a provider's
// run, executes the tools the agent asks for, and hands their results
// back to the provider, round after round, until the run ends.
package agent
