// Drives one request of an earlier phone app build against a running
// server, with the SSE client those builds use (react-native-sse) and the
// way they read the v1 stream: every event on the "message" listener,
// parsed by its `type`, the result text accumulated from
// TEXT_MESSAGE_CONTENT and shown at RUN_FINISHED unless a CUSTOM
// HITL_REQUIRED (with value.threadId) or MISUNDERSTOOD (with
// value.inboxItemId) asked the person something first; the stream closed
// at RUN_FINISHED or RUN_ERROR.
//
// Usage: node legacy-client.cjs <url> <api-key> <body> [content-type]
// Prints {"events":[...], "callbacks":[[name, ...args], ...], "errors":[...]}
// as JSON: callbacks are what the app would have done.
'use strict';

const { XMLHttpRequest } = require('xmlhttprequest');
// react-native-sse compares readyState against these statics, which the
// Node implementation only defines on instances.
Object.assign(XMLHttpRequest, { UNSENT: 0, OPENED: 1, HEADERS_RECEIVED: 2, LOADING: 3, DONE: 4 });
globalThis.XMLHttpRequest = XMLHttpRequest;
const mod = require('react-native-sse');
const EventSource = mod.default || mod;

const [url, key, body, contentType = 'application/json'] = process.argv.slice(2);
const events = [];
const callbacks = [];
const errors = [];
let finished = false;

function finish(code) {
  if (finished) return;
  finished = true;
  process.stdout.write(JSON.stringify({ events, callbacks, errors }) + '\n');
  process.exit(code);
}

const es = new EventSource(url, {
  method: 'POST',
  headers: { 'Content-Type': contentType, Authorization: `Bearer ${key}` },
  body,
  pollingInterval: 0, // those builds turn reconnection off: a retry would file twice
});

// Give anything wrongly sent after the end a moment to show up.
function close(code) {
  setTimeout(() => { es.close(); finish(code); }, 300);
}

let result = '';
let asked = false;
let closed = false;
es.addEventListener('message', (e) => {
  let ev;
  try {
    ev = JSON.parse(e.data);
  } catch {
    errors.push({ type: 'unparsable', data: e.data });
    return;
  }
  events.push(ev);
  if (closed) {
    errors.push({ type: 'after-close', event: ev });
    return;
  }
  const v = ev.value || {};
  switch (ev.type) {
    case 'STEP_STARTED': callbacks.push(['onStepStart', ev.stepName]); break;
    case 'STEP_FINISHED': callbacks.push(['onStepFinish', ev.stepName]); break;
    case 'TEXT_MESSAGE_CONTENT':
      if (ev.delta) { result += ev.delta; callbacks.push(['onTextDelta', ev.delta]); }
      break;
    case 'CUSTOM':
      if (ev.name === 'HITL_REQUIRED' && v.threadId) {
        asked = true;
        callbacks.push(['onHITLRequired', v.threadId, v.questionText || result, v.inboxItemId]);
      }
      if (ev.name === 'MISUNDERSTOOD' && v.inboxItemId) {
        asked = true;
        callbacks.push(['onMisunderstood', v.threadId || '', v.questionText || '', v.inboxItemId]);
      }
      if (ev.name === 'UNRESOLVED' && v.inboxItemId) callbacks.push(['onUnresolved', v.inboxItemId]);
      if (ev.name === 'CLASSIFIED') callbacks.push(['onClassified', v.inboxItemId, v.bucket]);
      break;
    case 'RUN_FINISHED':
      if (!asked) callbacks.push(['onComplete', result]);
      closed = true;
      close(0);
      break;
    case 'RUN_ERROR':
      callbacks.push(['onError', 'Run failed']);
      closed = true;
      close(0);
      break;
  }
});
es.addEventListener('error', (e) => {
  errors.push({ type: e.type, message: e.message, status: e.xhrStatus });
  finish(1);
});
setTimeout(() => { errors.push({ type: 'timeout' }); finish(2); }, 30000);
