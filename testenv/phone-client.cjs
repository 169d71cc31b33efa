// Drives the phone app's SSE client (react-native-sse) under Node against a
// running server, the way the app does: POST with a JSON body, no polling.
// Usage: node phone-client.cjs <url> <api-key> <json-body>
// Prints {"events":[...parsed message payloads...],"errors":[...]} as JSON.
'use strict';

const { XMLHttpRequest } = require('xmlhttprequest');
// react-native-sse compares readyState against these statics, which the
// Node implementation only defines on instances.
Object.assign(XMLHttpRequest, { UNSENT: 0, OPENED: 1, HEADERS_RECEIVED: 2, LOADING: 3, DONE: 4 });
globalThis.XMLHttpRequest = XMLHttpRequest;
const mod = require('react-native-sse');
const EventSource = mod.default || mod;

const [url, key, body] = process.argv.slice(2);
const events = [];
const errors = [];
let finished = false;

function finish(code) {
  if (finished) return;
  finished = true;
  process.stdout.write(JSON.stringify({ events, errors }) + '\n');
  process.exit(code);
}

const es = new EventSource(url, {
  method: 'POST',
  headers: { 'Content-Type': 'application/json', Authorization: `Bearer ${key}` },
  body,
  pollingInterval: 0,
});

es.addEventListener('message', (e) => {
  const ev = JSON.parse(e.data);
  events.push(ev);
  if (ev.type === 'COMPLETE') {
    // Give anything wrongly sent after COMPLETE a moment to show up.
    setTimeout(() => { es.close(); finish(0); }, 300);
  }
});
es.addEventListener('error', (e) => {
  errors.push({ type: e.type, message: e.message, status: e.xhrStatus });
  finish(1);
});
setTimeout(() => { errors.push({ type: 'timeout' }); finish(2); }, 30000);
