// The four tools against the live server: each answers with render's fenced, labelled block, and a refusal
// comes back as the tool's text in the API's words; and through a model loop (a stand-in chat server), the
// model is handed that text as the tool's result.

import assert from "node:assert/strict";
import { after, before, test } from "node:test";

import { createOpenAICompatible } from "@ai-sdk/openai-compatible";
import type { Place } from "@archivist/client";
import { generateText, stepCountIs, type Tool, type ToolExecutionOptions } from "ai";

import { archivistTools } from "../src/index.js";
import { fenced } from "../src/text.js";
import { chatStandIn, client, newPlace, people, type StandIn } from "./support.js";

const call: ToolExecutionOptions = { toolCallId: "call-1", messages: [] };

/** A tool's answer to one call, as the model would be handed it. */
async function answer<Input>(one: Tool<Input, string>, input: Input): Promise<string> {
  const given = await one.execute!(input, call);
  assert.equal(typeof given, "string");
  return given as string;
}
let team: Place;

before(async () => {
  team = await newPlace("private", people());
});

test("remember answers with the new memory's labelled line inside render's fence", async () => {
  const tools = archivistTools({ client: client(), place: team });
  const text = await answer(tools.remember, { body: "Standup is at 9 <b>sharp</b>", subject_type: "workspace" });
  assert.match(text, /^Remembered as channel memory [0-9a-f-]{36}\.\n<memory>\n/);
  assert.ok(text.includes(`- [channel ${team.channel} · about the workspace · inferred by an agent · from message`));
  assert.ok(text.includes("] Standup is at 9 &lt;b&gt;sharp&lt;/b&gt;\n</memory>"), text);
});

test("recall answers with the found facts as the Python client lays them out, and says when nothing matches", async () => {
  const archivist = client();
  const tools = archivistTools({ client: archivist, place: team });
  await answer(tools.remember, { body: "The coffee machine is on floor 3", subject_type: "workspace" });
  const text = await answer(tools.recall, {
    question: "Where is the coffee machine?",
    limit: 5,
    mode: "lexical" as const,
  });
  const found = await archivist.recall({
    question: "Where is the coffee machine?",
    limit: 5,
    mode: "lexical",
    place: team,
  });
  assert.ok(found.results.length > 0);
  assert.equal(text, fenced(found.results));
  assert.ok(text.includes("The coffee machine is on floor 3"));

  const elsewhere = archivistTools({ client: archivist, place: await newPlace("private", people()) });
  const none = await answer(elsewhere.recall, { question: "coffee machine", limit: 5, mode: "lexical" as const });
  assert.equal(none, "Nothing recallable here matches.");
});

test("correct and forget answer with the new version and the receipt's label", async () => {
  const archivist = client();
  const tools = archivistTools({ client: archivist, place: team });
  const row = await archivist.remember({ body: "Retro on Fridays", subject_type: "workspace", place: team });
  const corrected = await answer(tools.correct, { memory_id: row.id, body: "Retro on Thursdays" });
  const version = /^Corrected: new version ([0-9a-f-]{36})\.\n<memory>/.exec(corrected);
  assert.ok(version, corrected);
  assert.ok(corrected.includes("] Retro on Thursdays\n</memory>"));
  const forgotten = await answer(tools.forget, { memory_id: version[1]!, reason: "moved" });
  assert.match(
    forgotten,
    new RegExp(`^Forgotten: channel ${team.channel} · about the workspace · .* · memory ${version[1]}`),
  );
});

test("a refusal is the tool's text in the API's words, naming the field", async () => {
  const tools = archivistTools({ client: client(), place: team });
  // Outside a DM no tool chooses whom a fact is about: the API refuses a fact that does not say.
  const refused = await answer(tools.remember, { body: "Mona's dog is called Rex" });
  assert.match(refused, /^Archivist refused this call \(400 invalid\): /);
  assert.match(refused, /\n- subject_type: /);
  const missing = await answer(tools.forget, { memory_id: "00000000-0000-0000-0000-000000000000", reason: "" });
  assert.match(missing, /^Archivist refused this call \(404 not_found\): /);
});

let model: StandIn;
after(async () => model?.close());

test("in a model's tool loop the model is handed the tool's block as its result", async () => {
  model = await chatStandIn([
    { tool: "recall", arguments: { question: "coffee machine", limit: 3, mode: "lexical" } },
    { text: "On floor 3." },
  ]);
  const provider = createOpenAICompatible({ name: "stand-in", baseURL: `${model.url}/v1` });
  const result = await generateText({
    model: provider("stand-in"),
    tools: archivistTools({ client: client(), place: team }),
    stopWhen: stepCountIs(3),
    prompt: "Where is the coffee machine?",
  });
  assert.equal(result.text, "On floor 3.");
  const messages = model.received[1]!.body["messages"] as Array<{ role: string; content: string }>;
  const handed = messages.find((message) => message.role === "tool")!.content;
  assert.ok(handed.includes("<memory>") && handed.includes("The coffee machine is on floor 3"), handed);
});
