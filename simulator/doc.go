// Package simulator is an offline stand-in for Azure AI Foundry Agent
// Service, and for a Google ADK API server. It has three faces on one
// listener: the Responses API (the current Foundry API, also Azure
// OpenAI's and OpenAI's), the classic threads/runs API, and an ADK API
// server (the ADK face, below). Each speaks its REST API and server-sent
// event streams the way the real service does (event names, object
// shapes, ids such as resp_…, conv_…, thread_…, run_…, call_…, created_at
// in seconds, usage), so brainwire's clients run against it unchanged. It is NOT a language model: the
// "agent" is a small, deterministic keyword classifier, and its
// chain-of-thought is a plain account of the cues it saw.
//
// # Responses API face
//
// Served under a Foundry project's /openai/v1 (any /api/projects/<name>
// prefix), Azure OpenAI's /openai/v1 or OpenAI's /v1; any bearer token or
// api-key header is accepted (else 401):
//
//	POST /responses                  create a response, streamed (stream: true) or not
//	GET  /responses/{id}             a stored response (in_progress while it streams)
//	POST /responses/{id}/cancel      refused: only background responses can be cancelled
//	POST /conversations              create a conversation (items: up to 20 messages)
//	GET  /conversations/{id}         a conversation
//	GET  /conversations/{id}/items   its items, newest first (limit, order, after)
//	GET  /models, /models/{id}       the simulated model (Config.Model)
//	GET  {project}/agents/{name}[/versions/{v}]?api-version=v1
//	                                 the simulated Foundry agent, DefaultAgentName version 1
//	GET  {project}/deployments/{name}?api-version=v1
//	                                 the simulated model's deployment, named after it
//
// A request names an ephemeral agent (model, instructions, flat function
// tools) or the simulated Foundry agent (agent_reference; its instructions
// and tools are its own, and a request that also sends tools, tool_choice
// or parallel_tool_calls is refused: "Not allowed when agent is
// specified."). It continues a conversation or a previous response (not
// both); every function call the previous response made must be answered
// by a function_call_output, and only those ("No tool output found for
// function call ..."). A new user message starts a new run of the agent;
// outputs alone continue the run. Streams follow the published event
// sequence: response.created and response.in_progress, then per output
// item output_item.added ... output_item.done (reasoning items with
// reasoning_summary_part / reasoning_summary_text events when the request
// asks for summaries, reasoning.summary; messages with content_part and
// output_text events; function calls with function_call_arguments
// events), then response.completed with the output and usage (or
// response.failed, response.incomplete, or an error event), sequence
// numbers from 0. Reasoning summaries and message deltas are paced by
// Config.ChunkDelay. A client that leaves mid-stream abandons the
// response: it ends cancelled, and its conversation gains nothing.
// Conversations take a response's items (its input, then its output) when
// it completes, so that a client whose answer was lost can look them up;
// a conversation keeps its newest 256. State is bounded like threads
// (least recently used evicted).
//
// # Protocol
//
// Operation paths may follow any /api/projects/<name> prefix (or none).
// Every call needs an api-version query parameter (else 400) and an
// Authorization: Bearer header with any token (else 401); errors use the
// service's shape {"error":{"code","message","type","param"}}.
//
//	POST /threads                                   create a thread
//	GET  /threads                                   list threads, newest first
//	GET  /threads/{t}                               get a thread
//	DELETE /threads/{t}                             delete a thread
//	POST /threads/runs                              create a thread and run it
//	POST /threads/{t}/runs                          run an existing thread
//	GET  /threads/{t}/runs                          list its runs
//	POST /threads/{t}/messages, GET ...             add or list messages
//	GET  /threads/{t}/runs/{r}                      get a run
//	POST /threads/{t}/runs/{r}/submit_tool_outputs  continue after requires_action
//	POST /threads/{t}/runs/{r}/cancel               cancel a run
//	GET  /assistants/{id}                           the simulated agent (Config.AgentID)
//
// With "stream": true a run answers server-sent events; otherwise the queued
// run object, the run having already moved on to requires_action or its end.
// A streamed first turn is: thread.created (create-thread-and-run only),
// thread.run.created, thread.run.queued, thread.run.in_progress, a
// message_creation step whose message streams the reasoning as
// thread.message.delta events (paced by Config.ChunkDelay), a tool_calls
// step whose thread.run.step.delta events carry each call's id and name and
// then its arguments in fragments, thread.run.requires_action, and
// "event: done" / "data: [DONE]". After submit_tool_outputs the stream
// opens with the tool step's thread.run.step.completed (with outputs), then
// thread.run.queued and thread.run.in_progress, and either another tool
// round or a short closing message ("Filed to People.") and
// thread.run.completed with usage. Token counts are about one per four
// characters of what the agent read and wrote, so they are deterministic.
//
// Cancelling a streamed run makes its stream send thread.run.cancelling and
// thread.run.cancelled at once, even mid-pause, then done. A client that
// disconnects mid-stream frees its handler at once; the run is finished
// without pacing, as the service keeps a run going when nobody listens.
//
// Memory is bounded: at most Config.MaxThreads threads (least recently used
// evicted, also beyond 64 MiB of messages, instructions and tool schemas),
// 64 messages and 32 runs per thread, 32 Ki characters per message and
// 1 MiB per request body.
//
// # Classifier
//
// Text is split into lower-case words (a possessive 's dropped) and matched
// against cue lists; a cue of several words weighs 2, a single word 1, and
// each cue counts once:
//
//	People    call mom, told me, catch up, lunch with, mom, dad, sister, friend,
//	          birthday, anniversary, met, gift, …; and a capitalised name right
//	          after with/call/text/email/ask/tell/met/meet/visit/… ("lunch with Sarah")
//	Projects  work on, next step, build, launch, finish, deadline, project, ship,
//	          release, deploy, prototype, draft, deck, feature, bug, report, …
//	Ideas     what if, maybe we could, how about, could try, idea, imagine,
//	          concept, brainstorm, wonder, someday, …
//	Admin     sign up, fill out, pay, bill, renew, appointment, tax, insurance,
//	          dentist, doctor, invoice, rent, passport, mortgage, buy, pick up,
//	          schedule, cancel, prescription, …
//
// The bucket with the highest score wins, ties going to the order People,
// Projects, Ideas, Admin. Confidence is min(0.95, 0.5 + 0.15·top) ×
// top/total, rounded to two decimals: one weak cue alone gives 0.65, a
// phrase 0.8, three points or more 0.95, and competing buckets pull it
// down. At 0.6 or more the status is classified, below it pending. A
// capture is misunderstood, with a clarifying question, when no cue
// matches, when it has fewer than two words, or when most of it is not
// words (symbols, numbers, letter soup without vowels); its bucket is then
// the best guess (Ideas when nothing matched) and confidence at most 0.3.
// The title is the name or relation for People ("Mom", "Sarah"), else the
// first six words.
//
// file_capture is called with {"text","bucket","confidence","status",
// "title"} plus "question" when misunderstood. "text" is the user message
// as written (for voice, the transcript).
//
// A run on an existing thread (a follow-up) classifies all user messages
// together, the newest one's cues counting double, and files them joined by
// newlines.
//
// # Variation
//
// The classifier answers a text the same way every time; a model does
// not. Config.Variation makes the simulator vary as one does, so that
// statistics over repeated runs (brainwire eval --trials) can be tried
// offline: normal noise on each filing's confidence (ConfidenceNoise, its
// standard deviation; the status follows it across 0.6) and, with chance
// OtherBucket, a filing in another bucket (the runner-up when it has cues,
// at its own confidence; else another bucket at 0.45). Misunderstood
// captures do not vary. The reasoning ends saying what varied. Draws come
// from Seed, the text and how many times this simulator has classified it
// before, so a seed reproduces a run's answers whatever order concurrent
// captures arrive in.
//
// # Instructions
//
// A run follows the agent's instructions (Config.Instructions, reported by
// GET /assistants/{id} with Config.AgentVersion as metadata "version"), or
// the run's own "instructions" when the request brings them. Two kinds of
// line in them steer the classifier, so that trying new instructions
// against the simulator changes what it files, as it would with a model:
//
//	Admin cues: gym, haircut, car wash   these phrases are cues for Admin
//	                                     (and for no other bucket)
//	Ignore cues: buy                     this phrase is no cue at all
//
// Any bucket may head a cue line; case does not matter and a leading list
// marker ("- ") is allowed. Every other line is prose the simulator does not
// read.
//
// # Voice
//
// When the run offers transcribe_audio and the newest user message has a
// line "audio: <url>" (or "audio_url:", "blob_url:"), the first tool round calls transcribe_audio with
// {"blob_url": <url>}. Its output, {"text": ...} or a plain string, is then
// classified and filed; an error output ends the run with a short message
// and no file_capture.
//
// # Magic phrases
//
// Put these in the newest user message to drive behaviours
// deterministically (they do not count as words):
//
//	#invalid-bucket  the first file_capture names bucket "Misc"; when its
//	                 output is an error it retries once with the right bucket
//	#two-calls       one requires_action with two file_capture calls: the best
//	                 bucket and the runner-up (ignored when misunderstood); the
//	                 server runs them in this order, so the best bucket files
//	                 and the runner-up gets already_filed
//	#no-tool         reasoning text only; the run completes with no tool call
//	#fail            the run ends with thread.run.failed, last_error
//	                 {"code":"server_error",...}, after in_progress
//	#error-event     an "error" event after in_progress, then the stream ends
//	                 without done; the run is left failed
//	#long:N          the run's first message streams exactly N chunks (N ≤ 10000)
//	#incomplete      Responses face: a reasoning summary, then
//	                 response.incomplete (max_output_tokens); the
//	                 threads/runs face ignores it
//	#refuse:S[:N]    every call of the run, the one that starts it (a
//	                 response, a thread and run or a run, a run_sse with the
//	                 text) and each carrying its tool outputs, is refused N
//	                 times (1 without N, at most 10) with status S (408,
//	                 429, 500, 502, 503 or 504) before it is served: the
//	                 service's error body (429: rate_limit_exceeded, 503:
//	                 service_unavailable, ...; the ADK face's
//	                 {"detail": ...}), retry-after-ms: 5 and Retry-After: 1,
//	                 nothing changed. A call is known across its attempts
//	                 by its Idempotency-Key, else by its body. Stats counts
//	                 the refusals by status
//
// Without file_capture among the run's tools, or with tool_choice "none",
// the agent answers in text only. A file_capture output that is an error
// (a JSON object with "error") ends the run with a short message saying so,
// unless #invalid-bucket's retry applies.
//
// # ADK face
//
// Paths /list-apps, /apps/... and /run_sse answer as `adk api_server` does
// for one app, Config.ADKApp (DefaultADKApp), whose agent "classifier" has
// file_capture and transcribe_audio as long-running tools: the client runs
// them. No authentication; like the server, a non-GET request with an
// Origin header is refused (403). Errors are FastAPI's {"detail": ...}.
//
//	GET  /list-apps                             ["brainwire_classifier"] (?detailed=true: the app's info)
//	POST /apps/{app}/users/{user}/sessions      create a session (body {"sessionId"?, "state"?}); 409 if the id exists
//	GET  /apps/{app}/users/{user}/sessions/{id} the session and its events; 404 if there is none
//	POST /run_sse                               run the agent: {appName, userId, sessionId, newMessage, streaming, stateDelta?}
//
// A session records, as the server does, each message it takes from the
// user (an event of the author "user") and each of the agent's events but
// the partial ones, the newest 256 kept.
//
// A /run_sse answer is "data: <event JSON>" frames (camelCase, no null
// members) and then the end of the body. Each model call streams one
// partial event per thought chunk ({"text":…,"thought":true}, paced by
// Config.ChunkDelay) and per answer chunk, one with its function calls,
// then the aggregated event (partial false) repeating all of it, with the
// finish reason, usageMetadata and longRunningToolIds; all share one event
// id, and a run's events one invocation id ("e-<uuid>"). A call pauses the
// run and the body ends; a later /run_sse on the session whose newMessage
// holds only the functionResponse parts, one per call, resumes it under
// the same invocation id. Without "streaming": true only aggregated events
// come. Ids are uuid4-shaped, drawn from Config.NewID; a function call's
// is "adk-<uuid>".
//
// The classifier, the voice flow and the magic phrases work as on the
// Foundry face, except: #fail makes the model call fail (errorCode
// MALFORMED_FUNCTION_CALL); #error-event streams three thought chunks and
// then an error frame, {"error": "ServerError: 503 UNAVAILABLE. …",
// "error_details": {…}}, written as Python's json.dumps writes it. A
// message mixing text and function responses, a response to no pending
// call, or a resume that leaves a call unanswered is an error frame
// (ValueError). A new text message drops calls an abandoned run left
// waiting. Sessions are bounded like threads.
package simulator
