// Package simulator is an offline stand-in for Azure AI Foundry Agent
// Service and for a Google ADK API server, which brainwire runs against
// when no model is configured and most tests use as their upstream. It is
// NOT a language model: the "agent" is a deterministic keyword classifier
// whose reasoning is a plain account of the cues it saw. Its three faces
// share one listener and speak the real services' REST APIs and event
// streams (event names, object shapes, ids like resp_…, thread_…, call_…),
// so brainwire's clients run against it unchanged.
//
//	Face         Paths (after any /api/projects/<name>)        Auth            Errors
//	Responses    /openai/v1/… or /v1/…: responses,             bearer/api-key  {"error":{code,message,type,param}}
//	             conversations[/{id}/items], models;
//	             agents/{name}[/versions/{v}], deployments/{name}
//	Threads      threads[/{t}[/messages|/runs[/{r}[/submit_tool_outputs|/cancel]]]],
//	             threads/runs, assistants/{id}; ?api-version=   bearer          as Responses
//	ADK          /list-apps, /apps/{app}/users/{u}/sessions[/{id}],
//	             /run_sse (app brainwire_classifier)           none            {"detail": …}
//	Stats        GET /simulator/stats (Stats)                  none
//
// The ADK face, like `adk api_server`, refuses a non-GET request with an
// Origin header (403); its agent "classifier" declares the tools as
// long-running, and a later /run_sse with the function responses resumes
// the run.
//
// A run on any face reads the user's messages, transcribes a voice note
// first when the newest message has a line "audio: <url>" (or audio_url:,
// blob_url:) and transcribe_audio is offered, then calls file_capture with
// {"text","bucket","confidence","status","title"} (and "question" when
// misunderstood) and closes with a short message ("Filed to People.").
// The client runs the tools: requires_action on threads, function_call
// items on Responses, long-running tool calls on ADK. A follow-up in the
// same thread, conversation or session classifies all user messages
// together, the newest one's cues counting double. Without file_capture
// offered, or with tool_choice "none", the agent answers in text only; an
// error output of file_capture ends the run saying so. Token counts are
// about one per four characters. Reasoning and text chunks are paced by
// Config.ChunkDelay on a fixed schedule (Stats.PacedLate counts the
// frames written late). A client that leaves mid-stream frees its handler:
// a thread's run is finished unpaced, a response ends cancelled and its
// conversation gains nothing, an ADK run stays recorded. State is bounded:
// Config.MaxThreads threads, conversations and sessions (four times as many
// stored responses), least recently used evicted, also beyond 64 MiB; 64
// messages per thread, 32 Ki characters per message, 1 MiB per body.
//
// # Classifier
//
// Text is split into lower-case words and matched against cue lists (a
// phrase weighs 2, a word 1, each cue counts once): People (mom, friend,
// birthday, lunch with, a capitalised name after with/call/met/…),
// Projects (build, launch, deadline, draft, bug, …), Ideas (what if,
// maybe we could, idea, someday, …), Admin (pay, renew, dentist, tax, buy,
// schedule, …). The highest score wins, ties in that order. Confidence is
// min(0.95, 0.5+0.15·top)·top/total, two decimals; at 0.6 or more the
// status is classified, else pending. A capture with no cue, fewer than
// two words or mostly non-words is misunderstood (confidence at most 0.3,
// Ideas when nothing matched) with a clarifying question. The title is the
// person for People, else the first six words. Instruction lines steer it
// ("Admin cues: gym, haircut" adds cues to a bucket, "Ignore cues: buy"
// removes them): the agent's (Config.Instructions) or a run's own.
//
// # Knobs
//
// Put a magic phrase in the newest user message (it does not count as a
// word); Config fields apply to every run.
//
//	#invalid-bucket  the first file_capture names bucket "Misc"; after an error output it retries once
//	#two-calls       two file_capture calls at once: the best bucket, then the runner-up
//	#no-tool         reasoning and a text answer only, no tool call
//	#fail            the run fails: thread.run.failed or response.failed with code server_error,
//	                 on ADK a model call with errorCode MALFORMED_FUNCTION_CALL
//	#error-event     an in-stream error: threads and Responses an "error" event and no done,
//	                 ADK three thought chunks and an error frame (ServerError: 503 UNAVAILABLE)
//	#incomplete      Responses only: response.incomplete (max_output_tokens)
//	#long:N          the reasoning before the run's first tool call streams exactly N chunks
//	                 (N ≤ 10000); what it reasons after the tool's answer adds its own, so a
//	                 classified capture's run has N+3 chunks in all, on every face
//	#refuse:S[:N]    each call of the run (the one starting it, each with tool outputs) is refused
//	                 N times (1, at most 10) with status S (408, 429, 500, 502, 503, 504), the
//	                 service's error body, retry-after-ms: 5 and Retry-After: 1; a call is known by
//	                 its Idempotency-Key, else its body; Stats.Refused counts them
//	Config.ChunkDelay  pause per paced chunk (default 25ms; negative: none)
//	Config.Variation   seeded noise on confidence and a chance of another bucket, as a model
//	                   varies (the reasoning says what varied); misunderstood captures do not vary
//	Config.NewID, Now  ids and clock, for reproducible runs
package simulator
