// Drives a running server with the real AG-UI client, @ag-ui/client's
// HttpAgent, the way an AG-UI front end does: one agent (one thread), one
// runAgent() per user message, the state the server leaves sent back on
// the next run. runAgent() rejects when an event fails the client's
// schemas or its verification, so every run that resolves was accepted.
//
// Usage: node agui-client.mjs <url> <api-key> <spec-json>
//   spec: {"runs": [{"content": <string or content parts>, "forwardedProps"?: {...}}, ...]}
//   or {"streams": [<url>, ...]}: one run on a fresh agent per URL, each
//   serving a recorded stream (the url argument is then unused).
// Prints {"runs": [{events, result, pendingToolCallIds, runError, error,
// state, messages}], "warnings": [...]} as JSON. warnings holds whatever the
// client logged: it logs when it strips, drops or cannot apply something.
import { HttpAgent } from '@ag-ui/client';

const [url, key, specJSON] = process.argv.slice(2);
const spec = JSON.parse(specJSON);

const warnings = [];
for (const level of ['warn', 'error']) {
  console[level] = (...args) => warnings.push(args.map((a) => (a instanceof Error ? a.message : String(a))).join(' '));
}

const headers = key ? { Authorization: `Bearer ${key}` } : {};
const shared = new HttpAgent({ url, headers });
const plan = spec.streams
  ? spec.streams.map((u) => ({ agent: new HttpAgent({ url: u, headers }), content: 'replayed' }))
  : spec.runs.map((r) => ({ ...r, agent: shared }));
const runs = [];
let n = 0;
for (const run of plan) {
  const agent = run.agent;
  agent.addMessage({ id: `user-${++n}`, role: 'user', content: run.content });
  const out = { events: [] };
  try {
    const res = await agent.runAgent(
      { forwardedProps: run.forwardedProps ?? {} },
      {
        onEvent: ({ event }) => { out.events.push(event); },
        onRunFinishedEvent: (p) => { out.pendingToolCallIds = p.pendingToolCallIds ?? null; },
        onRunErrorEvent: ({ event }) => { out.runError = event; },
      },
    );
    out.result = res.result ?? null;
  } catch (err) {
    out.error = { name: err?.constructor?.name ?? 'Error', message: String(err?.message ?? err), status: err?.status ?? null };
  }
  out.state = agent.state;
  out.messages = agent.messages;
  runs.push(out);
}
process.stdout.write(JSON.stringify({ runs, warnings }) + '\n');
