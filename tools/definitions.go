package tools

import "github.com/brainwire/brainwire"

// The tool schemas sent with every run. The agent's instructions live in
// the agent; these say what each argument means.
var (
	fileCaptureDef = brainwire.ToolDefinition{
		Name: brainwire.ToolFileCapture,
		Description: "File the person's capture into their second brain. Call exactly once per capture. " +
			"Use status 'classified' when confident (>= 0.6), 'pending' when unsure, and 'misunderstood' " +
			"when the capture cannot be understood; then also give the clarifying question to ask. " +
			"A capture is filed once: if you call this tool more than once, the first call in your order " +
			"that succeeds files the capture and every later call returns the error 'already_filed' " +
			"with the filed item's id.",
		Parameters: []byte(`{"type":"object","properties":{` +
			`"text":{"type":"string","description":"The capture text, as the person said it."},` +
			`"bucket":{"type":"string","enum":["People","Projects","Ideas","Admin"],"description":"Where the capture belongs."},` +
			`"confidence":{"type":"number","minimum":0,"maximum":1,"description":"How sure the classification is, 0 to 1."},` +
			`"status":{"type":"string","enum":["classified","pending","misunderstood"],"description":"classified (confidence >= 0.6), pending (below), or misunderstood."},` +
			`"title":{"type":"string","description":"A short title; for People, the person's name."},` +
			`"question":{"type":"string","description":"For misunderstood captures: the clarifying question to ask the person."}` +
			`},"required":["text","bucket","confidence","status"]}`),
	}
	transcribeAudioDef = brainwire.ToolDefinition{
		Name:        brainwire.ToolTranscribeAudio,
		Description: "Transcribe the person's voice capture. Call it first for voice captures, then classify the transcript.",
		Parameters: []byte(`{"type":"object","properties":{` +
			`"blob_url":{"type":"string","description":"The audio's URL, as given in the message."}` +
			`},"required":["blob_url"]}`),
	}
)

// Definitions are every tool's definition, as the agent may be offered
// them: what an agent brainwire defines is described with.
func Definitions() []brainwire.ToolDefinition {
	return []brainwire.ToolDefinition{fileCaptureDef, transcribeAudioDef}
}
