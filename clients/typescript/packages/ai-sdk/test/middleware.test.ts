// The memory middleware against the live server, with a stand-in chat-completions server as the model: the
// model receives the turn's fenced block as a system message, and the injection Archivist recorded under the
// turn id is exactly that block (its lines, its hash, its replay).

import assert from "node:assert/strict";
import { createHash, randomBytes } from "node:crypto";
import { after, before, test } from "node:test";

import { createAnthropic } from "@ai-sdk/anthropic";
import { createOpenAICompatible } from "@ai-sdk/openai-compatible";
import { ConflictError, type Place, type Rendered } from "@archivist/client";
import { generateText, stepCountIs, streamText, wrapLanguageModel } from "ai";

import { archivistMemory, archivistTools, questionOf } from "../src/index.js";
import { chatStandIn, client, messagesStandIn, newPlace, people, type StandIn } from "./support.js";

// Turn ids are unique in an organisation: each run of these tests has its own.
const run = randomBytes(4).toString("hex");
type Message = { role: string; content: unknown };
let dm: Place;
let model: StandIn;

before(async () => {
  const [mona] = people();
  dm = await newPlace("dm", [mona]);
  await client().remember({ body: "Prefers to be called Mo", tier: "profile", place: dm });
  model = await chatStandIn([{ text: "Hello Mo." }]);
});
after(async () => model.close());

function wrapped(place: Place, onRender?: (rendered: Rendered) => void) {
  const provider = createOpenAICompatible({ name: "stand-in", baseURL: `${model.url}/v1` });
  const middleware = archivistMemory({ client: client(), place, onRender });
  return wrapLanguageModel({ model: provider("stand-in"), middleware });
}

function systemMessages(index: number): string[] {
  const messages = model.received[index]!.body["messages"] as Message[];
  return messages.filter((message) => message.role === "system").map((message) => String(message.content));
}

test("the model receives the turn's block, and the injection record shows exactly that block", async () => {
  const result = await generateText({
    model: wrapped(dm),
    system: "You are a helpful assistant.",
    prompt: "What should I call her?",
    providerOptions: { archivist: { turnId: `ai-test-turn-1-${run}` } },
  });
  assert.equal(result.text, "Hello Mo.");
  const [own, block] = systemMessages(model.received.length - 1);
  assert.equal(own, "You are a helpful assistant.");
  assert.ok(block!.startsWith("<memory>\n") && block!.includes("] Prefers to be called Mo"), block);

  const archivist = client();
  const injection = await archivist.injection(`ai-test-turn-1-${run}`);
  assert.equal(injection.question, "What should I call her?");
  assert.equal(injection.sha256, createHash("sha256").update(block!, "utf8").digest("hex"));
  assert.ok(injection.lines.length > 0);
  for (const line of injection.lines) assert.ok(block!.includes(line.line), line.line);
  const replay = await archivist.replay(`ai-test-turn-1-${run}`);
  assert.equal(replay.text, block);
  assert.equal(replay.identical, true);
  assert.deepEqual(result.providerMetadata?.["archivist"], {
    turnId: `ai-test-turn-1-${run}`,
    sha256: injection.sha256,
  });
});

test("without a turn id one is made (ai-<uuid>) and handed back with the answer and to onRender", async () => {
  const seen: Rendered[] = [];
  const result = await generateText({ model: wrapped(dm, (rendered) => seen.push(rendered)), prompt: "Her name?" });
  const turnId = String(result.providerMetadata?.["archivist"]?.["turnId"]);
  assert.deepEqual(
    seen.map((rendered) => rendered.turn_id),
    [turnId],
  );
  assert.match(turnId, /^ai-[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
  const injection = await client().injection(turnId);
  assert.equal(injection.question, "Her name?");
  assert.deepEqual(systemMessages(model.received.length - 1), [(await client().replay(turnId)).text]);
});

test("streaming gets the same block and records the turn", async () => {
  const result = streamText({
    model: wrapped(dm),
    prompt: "What does she like to be called?",
    providerOptions: { archivist: { turnId: `ai-test-stream-1-${run}` } },
  });
  assert.equal(await result.text, "Hello Mo.");
  assert.equal((await result.providerMetadata)?.["archivist"]?.["turnId"], `ai-test-stream-1-${run}`);
  const [block] = systemMessages(model.received.length - 1);
  assert.equal((await client().replay(`ai-test-stream-1-${run}`)).text, block);
  assert.ok(block!.includes("Prefers to be called Mo"));
});

test("the steps of a tool loop under one turn id share one injection", async () => {
  const looping = await chatStandIn([
    { tool: "recall", arguments: { question: "name", limit: 3, mode: "lexical" } },
    { text: "Mo." },
  ]);
  try {
    const provider = createOpenAICompatible({ name: "stand-in", baseURL: `${looping.url}/v1` });
    const archivist = client();
    const result = await generateText({
      model: wrapLanguageModel({
        model: provider("stand-in"),
        middleware: archivistMemory({ client: archivist, place: dm }),
      }),
      tools: archivistTools({ client: archivist, place: dm }),
      stopWhen: stepCountIs(3),
      prompt: "What is her name?",
      providerOptions: { archivist: { turnId: `ai-test-loop-${run}` } },
    });
    assert.equal(result.steps.length, 2);
    const blocks = looping.received.map((request) =>
      (request.body["messages"] as Message[])
        .filter((message) => message.role === "system")
        .map((message) => message.content),
    );
    const recorded = (await archivist.replay(`ai-test-loop-${run}`)).text;
    assert.deepEqual(blocks, [[recorded], [recorded]]);
  } finally {
    await looping.close();
  }
});

test("a turn id rendered with another question is refused as the API's typed error, and the model is not called", async () => {
  const calls = model.received.length;
  await generateText({
    model: wrapped(dm),
    prompt: "First question",
    providerOptions: { archivist: { turnId: `ai-test-twice-${run}` } },
  });
  await assert.rejects(
    generateText({
      model: wrapped(dm),
      prompt: "Another question",
      providerOptions: { archivist: { turnId: `ai-test-twice-${run}` } },
      maxRetries: 0,
    }),
    (error: unknown) => error instanceof ConflictError && error.status === 409,
  );
  assert.equal(model.received.length, calls + 1);
});

test("where nothing is remembered no block is added, and the turn is still recorded", async () => {
  const empty = await newPlace("private", people());
  await generateText({
    model: wrapped(empty),
    prompt: "Anything?",
    providerOptions: { archivist: { turnId: `ai-test-empty-${run}` } },
  });
  assert.deepEqual(systemMessages(model.received.length - 1), []);
  assert.deepEqual((await client().injection(`ai-test-empty-${run}`)).lines, []);
});

test("through @ai-sdk/anthropic the block reaches Claude's system prompt after the call's own", async () => {
  const claude = await messagesStandIn([{ text: "Mo." }]);
  try {
    const anthropic = createAnthropic({ baseURL: `${claude.url}/v1`, apiKey: "stand-in" });
    const middleware = archivistMemory({ client: client(), place: dm });
    await generateText({
      model: wrapLanguageModel({ model: anthropic("claude-sonnet-4-5"), middleware }),
      system: "Be brief.",
      prompt: "What is her name?",
      providerOptions: { archivist: { turnId: `ai-test-claude-${run}` } },
    });
    const system = claude.received[0]!.body["system"] as Array<{ type: string; text: string }>;
    const recorded = (await client().replay(`ai-test-claude-${run}`)).text;
    assert.deepEqual(
      system.map((part) => part.text),
      ["Be brief.", recorded],
    );
  } finally {
    await claude.close();
  }
});

test("the question is the last user message's text, without control characters, at most 2,000 characters", () => {
  const prompt = [
    { role: "user" as const, content: [{ type: "text" as const, text: "old" }] },
    { role: "assistant" as const, content: [{ type: "text" as const, text: "reply" }] },
    { role: "user" as const, content: [{ type: "text" as const, text: "new\u0007 one " + "x".repeat(3000) }] },
  ];
  const question = questionOf(prompt);
  assert.ok(question.startsWith("new  one x"));
  assert.equal(Array.from(question).length, 2000);
});
