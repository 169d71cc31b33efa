package replay

// The fixture corpus under fixtures/ is recorded against the offline
// simulator (-sim) through the real server path; `go generate ./replay`
// records it again. Simulator ids are seeded by fixture name, so a new
// recording differs from the old one only in its timings and date. Faults
// the simulator does not produce are injected while recording (-cut,
// -http-error) or at replay (-split-utf8).

//go:generate go run ../cmd/brainwire record -sim -force -dir ../fixtures -sim-chunk-delay 5ms -name classified-people -description "classified: People, high confidence" -text "Call mom about her birthday on Sunday"
//go:generate go run ../cmd/brainwire record -sim -force -dir ../fixtures -sim-chunk-delay 5ms -name classified-projects -description "classified: Projects, high confidence" -text "Finish the launch deck before the Friday deadline"
//go:generate go run ../cmd/brainwire record -sim -force -dir ../fixtures -sim-chunk-delay 5ms -name classified-ideas -description "classified: Ideas, high confidence" -text "What if we could brainstorm a podcast idea about gardening"
//go:generate go run ../cmd/brainwire record -sim -force -dir ../fixtures -sim-chunk-delay 5ms -name classified-admin -description "classified: Admin, high confidence" -text "Renew my passport and pay the electricity bill"
//go:generate go run ../cmd/brainwire record -sim -force -dir ../fixtures -sim-chunk-delay 5ms -name low-confidence -description "filed as pending below the 0.6 threshold: LOW_CONFIDENCE" -text "Ask Sarah about the deadline"
//go:generate go run ../cmd/brainwire record -sim -force -dir ../fixtures -sim-chunk-delay 5ms -name misunderstood -description "no cue matched: MISUNDERSTOOD with the agent's clarifying question" -text "hmm zzkx"
//go:generate go run ../cmd/brainwire record -sim -force -dir ../fixtures -sim-chunk-delay 5ms -name no-tool-call -description "the run completes without calling file_capture: UNRESOLVED" -text "Call mom about her birthday #no-tool"
//go:generate go run ../cmd/brainwire record -sim -force -dir ../fixtures -sim-chunk-delay 5ms -name invalid-bucket-retry -description "file_capture with an invalid bucket gets a tool error; the agent retries with a valid one" -text "Pay the electricity bill #invalid-bucket"
//go:generate go run ../cmd/brainwire record -sim -force -dir ../fixtures -sim-chunk-delay 5ms -name two-tool-calls -description "one requires_action with two file_capture calls: the first in the agent's order files the capture, the second gets already_filed" -text "Call mom about her birthday and the launch deadline #two-calls"
//go:generate go run ../cmd/brainwire record -sim -force -dir ../fixtures -sim-chunk-delay 5ms -name voice -description "voice capture: transcribe_audio, then file_capture on the transcript (step Processing)" -transcript "Call my sister about the concert tickets"
//go:generate go run ../cmd/brainwire record -sim -force -dir ../fixtures -sim-chunk-delay 5ms -name follow-up -description "follow-up on the agent thread of a misunderstood capture, filed onto the same inbox item" -text "hmm zzkx" -follow-up "I meant call my sister about her birthday"
//go:generate go run ../cmd/brainwire record -sim -force -dir ../fixtures -sim-chunk-delay 5ms -name run-failed -description "thread.run.failed with last_error: ERROR" -text "Call mom about her birthday #fail"
//go:generate go run ../cmd/brainwire record -sim -force -dir ../fixtures -sim-chunk-delay 5ms -name error-event -description "an in-stream error event, then the stream ends without done: ERROR, run cancelled" -text "Call mom about her birthday #error-event"
//go:generate go run ../cmd/brainwire record -sim -force -dir ../fixtures -sim-chunk-delay 5ms -name stream-cut-mid-event -description "the connection resets in the middle of the 20th event of the first stream: ERROR, run cancelled" -cut 1:20 -text "Finish the launch deck before the Friday deadline"
//go:generate go run ../cmd/brainwire record -sim -force -dir ../fixtures -sim-chunk-delay 5ms -name stream-cut-after-outcome -description "the connection resets mid-event in the stream after submit_tool_outputs: the outcome was already sent, so just COMPLETE" -cut 2:5 -text "Finish the launch deck before the Friday deadline"
//go:generate go run ../cmd/brainwire record -sim -force -dir ../fixtures -sim-chunk-delay 0 -name reasoning-1000-chunks -description "a first message of 1,000 reasoning chunks (1,003 in the run): none reaches the phone, all are numbered with none lost" -text "Plan the product launch #long:1000"
//go:generate go run ../cmd/brainwire record -sim -force -dir ../fixtures -sim-chunk-delay 5ms -name non-ascii-split -description "emoji and CJK in the stream, replayed with writes split inside the first 8 multibyte characters" -split-utf8 8 -text "Lunch with 李明 🍜 on Sunday 🎉 at the 東京 café"
//go:generate go run ../cmd/brainwire record -sim -force -dir ../fixtures -sim-chunk-delay 5ms -name upstream-429 -description "the agent service answers 429 to the first request: ERROR with its message" -http-error 1:429 -text "Call mom about her birthday"
