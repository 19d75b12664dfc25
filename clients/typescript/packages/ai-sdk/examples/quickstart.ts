// The README's example: the main README's Quickstart (organisation acme, agent helper, people mona and max, the
// places D-mona and G-team) from the Vercel AI SDK. ARCHIVIST_URL and ARCHIVIST_TOKEN as the Quickstart exported
// them; the model is any OpenAI-compatible chat server (MODEL_BASE_URL, MODEL, MODEL_API_KEY).

import { createOpenAICompatible } from "@ai-sdk/openai-compatible";
import { archivistMemory, archivistTools, ArchivistMemoryBackend, MemoryToolError } from "@archivist/ai-sdk";
import { ArchivistClient, type Place } from "@archivist/client";
import { generateText, stepCountIs, wrapLanguageModel } from "ai";

const dm: Place = { channel: "D-mona", kind: "dm", people: ["mona"] };
const team: Place = { channel: "G-team", kind: "private", people: ["mona", "max"] };
const archivist = new ArchivistClient({ place: dm }); // ARCHIVIST_URL and ARCHIVIST_TOKEN from the environment
await archivist.putPlace(dm.channel, { kind: "dm", people: ["mona"] }); // as the Quickstart's curl did
await archivist.putPlace(team.channel, { kind: "private", people: ["mona", "max"] });
await archivist.remember({ body: "Prefers to be called Mo", tier: "profile" });

// The middleware renders the turn's block into the prompt and Archivist records the injection; the tools let
// the model remember, recall, correct and forget in the same place.
const provider = createOpenAICompatible({
  name: "chat",
  baseURL: process.env["MODEL_BASE_URL"] ?? "http://127.0.0.1:11434/v1",
  apiKey: process.env["MODEL_API_KEY"],
});
const model = wrapLanguageModel({
  model: provider(process.env["MODEL"] ?? "llama3.2"),
  middleware: archivistMemory({ client: archivist, place: dm }),
});
const turnId = `readme-ai-${Date.now()}`;
const answer = await generateText({
  model,
  tools: archivistTools({ client: archivist, place: dm }),
  stopWhen: stepCountIs(3),
  prompt: "What should I call her?",
  providerOptions: { archivist: { turnId } },
});
console.log(answer.text);
const injection = await archivist.injection(turnId); // what the model was shown, line by line
console.log(injection.lines.map((line) => line.line)); // [ '- [person mona · … ] Prefers to be called Mo' ]
console.log((await archivist.replay(turnId)).identical); // true: the block composes again from its record

// Anthropic's memory tool kept as memories of the team's channel: a file's path says whom it is about.
// With @ai-sdk/anthropic: tools: { memory: archivistMemoryTool({ client, place: team }) } from "@archivist/ai-sdk/anthropic".
const memory = new ArchivistMemoryBackend({ client: archivist, place: team });
const standup = {
  command: "create",
  path: "/memories/channel/workspace/standup.md",
  file_text: "Standup at 9",
} as const;
console.log(await memory.execute(standup)); // File created successfully at … (memory …)
try {
  await memory.execute({ command: "create", path: "/memories/channel/dog.md", file_text: "Mona's dog is called Rex" });
} catch (refused) {
  if (!(refused instanceof MemoryToolError)) throw refused;
  console.log(refused.message); // subject_type: say whom this file is about with its folder: …
}
