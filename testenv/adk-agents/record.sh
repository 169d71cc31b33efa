#!/usr/bin/env bash
# Records fixtures/adk-server-*: captures run by `brainwire record` against
# Google ADK's own API server (`adk api_server` of @google/adk-devtools, from
# npm ci --prefix testenv) serving the scripted Classifier of this directory.
# replay's TestADKServer runs the same captures live and compares them with
# the goldens written here.
#
#   testenv/adk-agents/record.sh            # all of them
#   ADK_PORT=8002 testenv/adk-agents/record.sh
set -euo pipefail
cd "$(dirname "$0")/../.."

port="${ADK_PORT:-8001}"
base="http://127.0.0.1:$port"
tmp=$(mktemp -d)
server=
cleanup() {
  if [ -n "$server" ]; then kill "$server" 2>/dev/null || true; wait "$server" 2>/dev/null || true; fi
  rm -rf "$tmp"
}
trap cleanup EXIT

go build -o "$tmp/brainwire" ./cmd/brainwire

# As TestADKServer starts it: sessions in memory, the agent loaded as the
# plain JavaScript it is.
testenv/node_modules/.bin/adk api_server --host 127.0.0.1 --port "$port" \
  --session_service_uri memory:// --compile false --bundle false testenv/adk-agents \
  >"$tmp/adk.log" 2>&1 &
server=$!
for _ in $(seq 600); do
  if curl -sf "$base/list-apps" >/dev/null 2>&1; then break; fi
  if ! kill -0 "$server" 2>/dev/null; then cat "$tmp/adk.log"; exit 1; fi
  sleep 0.1
done
curl -sf "$base/list-apps" | grep -q brainwire_classifier || { cat "$tmp/adk.log"; exit 1; }

export ADK_API_BASE_URL="$base" ADK_APP_NAME=brainwire_classifier
unset ADK_AUTH_HEADER
version=$(node -p 'require("./testenv/node_modules/@google/adk/package.json").version')
server_is="ADK API server (@google/adk $version), scripted model"
record() { "$tmp/brainwire" record -force -dir fixtures "$@"; }

record -name adk-server-classified -description "$server_is: classified People; file_capture handed over, the run resumed with its response" -text "Lunch with Sarah on Friday"
record -name adk-server-low-confidence -description "$server_is: filed as pending below the 0.6 threshold: LOW_CONFIDENCE" -text "Ask Sarah about the deadline"
record -name adk-server-misunderstood -description "$server_is: MISUNDERSTOOD with the agent's clarifying question, the session as the conversation id" -text "hmm zzkx"
record -name adk-server-follow-up -description "$server_is: a follow-up on the misunderstood capture's session, its instructions reaching the model through {brainwire_instructions?}, filed onto the same inbox item" -text "hmm zzkx" -follow-up "I meant call my sister about her birthday"
record -name adk-server-invalid-bucket-retry -description "$server_is: file_capture with an invalid bucket gets a tool error as its response; the agent hands over a corrected call" -text "Pay the electricity bill #invalid-bucket"
record -name adk-server-two-tool-calls -description "$server_is: two file_capture calls in one model response, handed over at once: one files, the other gets already_filed" -text "Call mom about her birthday and the launch deadline #two-calls"
record -name adk-server-voice -description "$server_is: voice capture, transcribe_audio handed over, then file_capture on the transcript (step Processing)" -transcript "Call my sister about the concert tickets"
record -name adk-server-no-tool-call -description "$server_is: thoughts and a text answer, no function call: UNRESOLVED" -text "Call mom about her birthday #no-tool"
record -name adk-server-model-error -description "$server_is: the model call ends with errorCode MALFORMED_FUNCTION_CALL: ERROR" -text "Call mom about her birthday #fail"
record -name adk-server-model-exception -description "$server_is: the model fails with an exception after two thought chunks; the server streams it as an event with errorCode UNKNOWN_ERROR: ERROR" -text "Call mom about her birthday #error-event"
record -name adk-server-non-ascii -description "$server_is: emoji and CJK in the capture, the thoughts, the arguments and the answer" -text "Lunch with 李明 🍜 on Sunday 🎉 at the 東京 café"
