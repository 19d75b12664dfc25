// Cases for the workspace's overhead benchmark (clients/typescript/bench/overhead.mjs): what this package adds
// over a bare fetch of the same API call. `run(archivist, context)` goes through the package; `bare(context)`
// sends the same request with fetch alone and does the same formatting, so the ratio is the package's cost.
// `context` is the benchmark's: the server's `url`, the agent's `token` and a `place` it set up.

import { randomUUID } from "node:crypto";

import { archivistMemory, archivistTools, fenced } from "@archivist/ai-sdk";

const QUESTION = "What does she like to be called?";
const toolsFor = new WeakMap();
const middlewareFor = new WeakMap();

async function post(context, path, body) {
  const response = await fetch(`${context.url.replace(/\/+$/, "")}/api/v1/${path}`, {
    method: "POST",
    headers: {
      Authorization: `Bearer ${context.token}`,
      "Content-Type": "application/json",
      "Idempotency-Key": randomUUID(),
    },
    body: JSON.stringify(body),
  });
  if (!response.ok) throw new Error(`${path}: HTTP ${response.status} ${await response.text()}`);
  return response.json();
}

function once(cache, archivist, make) {
  if (!cache.has(archivist)) cache.set(archivist, make());
  return cache.get(archivist);
}

const prompt = () => [{ role: "user", content: [{ type: "text", text: QUESTION }] }];

export const cases = [
  {
    name: "ai-sdk recall tool (recall + fenced block)",
    async run(archivist, context) {
      const tools = once(toolsFor, archivist, () => archivistTools({ client: archivist, place: context.place }));
      return tools.recall.execute(
        { question: QUESTION, limit: 10, mode: "auto" },
        { toolCallId: "bench", messages: [] },
      );
    },
    async bare(context) {
      const found = await post(context, "recall", {
        question: QUESTION,
        limit: 10,
        mode: "auto",
        place: context.place,
      });
      return fenced(found.results, { empty: "Nothing recallable here matches." });
    },
  },
  {
    name: "ai-sdk memory middleware (render + system message)",
    async run(archivist, context) {
      const middleware = once(middlewareFor, archivist, () =>
        archivistMemory({ client: archivist, place: context.place }),
      );
      return middleware.transformParams({ type: "generate", params: { prompt: prompt() }, model: undefined });
    },
    async bare(context) {
      const turn_id = `ai-bench-${randomUUID()}`;
      const rendered = await post(context, "render", { turn_id, question: QUESTION, place: context.place });
      return { prompt: rendered.text ? [{ role: "system", content: rendered.text }, ...prompt()] : prompt() };
    },
  },
];
