// The brainwire Classifier as an ADK (TypeScript/JavaScript) agent, served by
// the real `adk api_server` in brainwire's tests. It is the agent of
// docs/adk.md with one change: its model is a script, not Gemini. Everything
// else (sessions, the instruction and its state placeholder, long-running
// tools, events, the /run_sse stream) is ADK's own.
//
// The script answers by the text of the person's latest message (a voice
// capture's message goes to `voice`): each entry of SCRIPT lists the model
// calls of that turn in order, the n-th call after the message taking the
// n-th step. A step streams its thoughts, then its text, as partial
// responses, then gives the aggregated response, which adds its function
// calls. `error` ends the model call with that error code instead; `throw`
// makes it fail with an exception after the stream.

import {BaseLlm, LlmAgent, LongRunningFunctionTool} from '@google/adk';

const fileCapture = new LongRunningFunctionTool({
  name: 'file_capture',
  description:
    "File the person's capture into their second brain. Call exactly once.",
  parameters: {
    type: 'OBJECT',
    properties: {
      text: {type: 'STRING', description: 'the capture text, as the person said it'},
      bucket: {type: 'STRING', description: 'where it belongs: People, Projects, Ideas or Admin'},
      confidence: {type: 'NUMBER', description: 'how sure the classification is, from 0 to 1'},
      status: {
        type: 'STRING',
        description:
          '"classified" (confidence at least 0.6), "pending" (below), or "misunderstood" when the capture cannot be understood',
      },
      title: {type: 'STRING', description: "a short title; for People, the person's name"},
      question: {
        type: 'STRING',
        description:
          'for a misunderstood capture, the clarifying question to ask the person; otherwise ""',
      },
    },
    required: ['text', 'bucket', 'confidence', 'status', 'title', 'question'],
  },
  execute: () => undefined, // brainwire files it: the run pauses until its response
});

const transcribeAudio = new LongRunningFunctionTool({
  name: 'transcribe_audio',
  description:
    "Transcribe the person's voice capture. Call it first for a voice capture.",
  parameters: {
    type: 'OBJECT',
    properties: {
      blob_url: {type: 'STRING', description: "the audio's URL, as given in the message"},
    },
    required: ['blob_url'],
  },
  execute: () => undefined, // brainwire transcribes it
});

const file = (text, bucket, confidence, status, title, question = '') => ({
  name: 'file_capture',
  args: {text, bucket, confidence, status, title, question},
});

// The message that starts a turn -> the model calls of that turn.
// A step may be a function of the request and of the last function response
// of the turn (what brainwire answered).
const SCRIPT = {
  'Lunch with Sarah on Friday': [
    {
      thoughts: ['Lunch with a named person', ' is about a relationship:', ' People, title Sarah.'],
      calls: [file('Lunch with Sarah on Friday', 'People', 0.92, 'classified', 'Sarah')],
    },
    {text: ['Filed under', ' People.']},
  ],
  'Ask Sarah about the deadline': [
    {
      thoughts: ['Sarah is a person, but the deadline', ' sounds like a project.', ' Not sure: People at 0.45.'],
      calls: [file('Ask Sarah about the deadline', 'People', 0.45, 'pending', 'Sarah')],
    },
    {text: ['Filed under People', ' for you to check.']},
  ],
  'hmm zzkx': [
    {
      thoughts: ['I cannot tell', ' what this is about.'],
      calls: [file('hmm zzkx', 'Ideas', 0.1, 'misunderstood', 'Hmm zzkx', 'What did you mean by "hmm zzkx"?')],
    },
    {text: ['I asked what you', ' meant.']},
  ],
  // A follow-up of 'hmm zzkx': the round's instructions arrive through
  // {brainwire_instructions?}; without them the model does not file.
  'I meant call my sister about her birthday': [
    (req) =>
      systemInstruction(req).includes('follow-up round 1')
        ? {
            thoughts: ['The person answered my question:', ' a call to their sister.', ' People.'],
            calls: [file('hmm zzkx\nI meant call my sister about her birthday', 'People', 0.9, 'classified', 'Sister')],
          }
        : {text: ['No follow-up instructions reached me.']},
    {text: ['Filed under', ' People.']},
  ],
  'Pay the electricity bill #invalid-bucket': [
    {
      thoughts: ['A bill to pay:', ' household paperwork.'],
      calls: [file('Pay the electricity bill', 'Bills', 0.85, 'classified', 'Electricity bill')],
    },
    (req, lastResponse) => ({
      thoughts: [`file_capture answered ${lastResponse?.error ?? 'no error'}:`, ' Bills is not a bucket.', ' Admin it is.'],
      calls: [file('Pay the electricity bill', 'Admin', 0.85, 'classified', 'Electricity bill')],
    }),
    {text: ['Filed under', ' Admin.']},
  ],
  'Call mom about her birthday and the launch deadline #two-calls': [
    {
      thoughts: ['Two things in one capture:', ' a call to mom and a launch deadline.'],
      calls: [
        file('Call mom about her birthday', 'People', 0.9, 'classified', 'Mom'),
        file('the launch deadline', 'Projects', 0.7, 'classified', 'Launch deadline'),
      ],
    },
    {text: ['Filed the call', ' under People.']},
  ],
  'Call mom about her birthday #fail': [
    {
      thoughts: ['A call to mom:', ' People.'],
      error: {code: 'MALFORMED_FUNCTION_CALL', message: 'Malformed function call: file_capture'},
    },
  ],
  'Call mom about her birthday #error-event': [
    {thoughts: ['A call', ' to mom:'], throw: 'The model is overloaded. Please try again later.'},
  ],
  'Lunch with 李明 🍜 on Sunday 🎉 at the 東京 café': [
    {
      thoughts: ['Lunch with 李明 🍜', ' in 東京:', ' a person, People.'],
      calls: [file('Lunch with 李明 🍜 on Sunday 🎉 at the 東京 café', 'People', 0.9, 'classified', '李明')],
    },
    {text: ['Filed under People 🎉', ' (李明).']},
  ],
  'Call mom about her birthday #no-tool': [
    {thoughts: ['A call to mom.'], text: ['That is a call', ' to make.']},
  ],
  voice: [
    (req) => ({
      thoughts: ['A voice note:', ' transcript first.'],
      calls: [{name: 'transcribe_audio', args: {blob_url: userText(req).match(/audio: (\S+)/)[1]}}],
    }),
    (req, lastResponse) => ({
      thoughts: ['The transcript', ' is about a sister:', ' People.'],
      calls: [file(lastResponse.text, 'People', 0.88, 'classified', 'Sister')],
    }),
    {text: ['Filed under', ' People.']},
  ],
};

const VOICE_MESSAGE = /^This is a voice capture\b/;

function systemInstruction(req) {
  const si = req.config?.systemInstruction;
  if (typeof si === 'string') return si;
  return (si?.parts ?? []).map((p) => p.text ?? '').join('');
}

// The index in req.contents of the person's latest message (text, not a
// function response).
function userTurn(req) {
  for (let i = req.contents.length - 1; i >= 0; i--) {
    const c = req.contents[i];
    if (c.role === 'user' && c.parts?.some((p) => typeof p.text === 'string')) return i;
  }
  return -1;
}

function userText(req) {
  const c = req.contents[userTurn(req)];
  return (c?.parts ?? []).map((p) => p.text ?? '').join('');
}

const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

class ScriptedModel extends BaseLlm {
  async *generateContentAsync(req, stream = false) {
    const text = userText(req);
    const steps = SCRIPT[VOICE_MESSAGE.test(text) ? 'voice' : text];
    const later = req.contents.slice(userTurn(req) + 1);
    const n = later.filter((c) => c.role === 'model' && c.parts?.some((p) => p.functionCall)).length;
    const responses = later.flatMap((c) => (c.parts ?? []).filter((p) => p.functionResponse));
    const lastResponse = responses.at(-1)?.functionResponse.response;
    let step = steps?.[n] ?? {text: [`No script for ${JSON.stringify(text)}, step ${n}.`]};
    if (typeof step === 'function') step = step(req, lastResponse);

    const withThoughts = req.config?.thinkingConfig?.includeThoughts === true;
    const thoughts = withThoughts ? (step.thoughts ?? []) : [];
    const texts = step.text ?? [];
    if (stream) {
      for (const t of thoughts) {
        yield {content: {role: 'model', parts: [{text: t, thought: true}]}, partial: true};
        await sleep(2);
      }
      for (const t of texts) {
        yield {content: {role: 'model', parts: [{text: t}]}, partial: true};
        await sleep(2);
      }
    }
    if (step.throw) throw new Error(step.throw);

    const parts = [];
    if (thoughts.length) parts.push({text: thoughts.join(''), thought: true});
    if (texts.length) parts.push({text: texts.join('')});
    // A copy: ADK gives the call its id in place, and the script is shared.
    for (const call of step.calls ?? []) parts.push({functionCall: structuredClone(call)});
    const tokens = (s) => Math.ceil(s.length / 4);
    const prompt = tokens(JSON.stringify(req.contents)) + tokens(systemInstruction(req));
    const candidates = tokens(texts.join('') + JSON.stringify(step.calls ?? []));
    const thinking = tokens(thoughts.join(''));
    yield {
      content: {role: 'model', parts},
      partial: false,
      modelVersion: this.model,
      finishReason: step.error ? step.error.code : 'STOP',
      ...(step.error && {errorCode: step.error.code, errorMessage: step.error.message}),
      usageMetadata: {
        promptTokenCount: prompt,
        candidatesTokenCount: candidates,
        ...(thinking > 0 && {thoughtsTokenCount: thinking}),
        totalTokenCount: prompt + candidates + thinking,
      },
    };
  }

  async connect() {
    throw new Error('the scripted model has no live connection');
  }
}

export const rootAgent = new LlmAgent({
  name: 'classifier',
  model: new ScriptedModel({model: 'brainwire-scripted'}),
  description: 'Classifies a raw capture and files it.',
  instruction:
    "Classify the person's capture into People, Projects, Ideas or Admin" +
    ' and call file_capture exactly once. If the capture is a voice note,' +
    ' call transcribe_audio first and classify the transcript. When' +
    ' file_capture answers with an error, fix the arguments and call it' +
    ' again. After it has filed the capture, answer with one short' +
    ' sentence.\n\n{brainwire_instructions?}',
  tools: [fileCapture, transcribeAudio],
  // Thoughts stream as reasoning chunks to brainwire's telemetry.
  generateContentConfig: {thinkingConfig: {includeThoughts: true}},
});
