// Cases for the workspace's overhead benchmark (clients/typescript/bench/overhead.mjs): what this package adds
// over bare fetch doing the same work. `run(context, index)` goes through the package; `bare(context, index)`
// sends the same request with fetch alone and lays out the same result, so the ratio is the package's cost.
// `context` is the benchmark's: url, api, token, headers, place and archivist (a client on that place).

import { randomUUID } from "node:crypto";

import { archivistMemory, archivistTools, fenced } from "@archivist/ai-sdk";

const QUESTION = "fact";
const made = new WeakMap();

/** The package's tools and middleware for this context, made once. */
function parts(context) {
  if (!made.has(context)) {
    const given = { client: context.archivist, place: context.place };
    made.set(context, { tools: archivistTools(given), middleware: archivistMemory(given) });
  }
  return made.get(context);
}

async function post(context, path, body) {
  const response = await fetch(context.api + path, {
    method: "POST",
    headers: { ...context.headers, "Idempotency-Key": randomUUID() },
    body: JSON.stringify(body),
  });
  const text = await response.text();
  if (!response.ok) throw new Error(`POST ${path}: ${response.status} ${text}`);
  return JSON.parse(text);
}

const prompt = () => [{ role: "user", content: [{ type: "text", text: QUESTION }] }];

export const cases = [
  {
    name: "ai-sdk recall tool",
    run: (context) =>
      parts(context).tools.recall.execute(
        { question: QUESTION, limit: 10, mode: "auto" },
        { toolCallId: "bench", messages: [] },
      ),
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
    name: "ai-sdk memory middleware",
    run: (context) =>
      parts(context).middleware.transformParams({ type: "generate", params: { prompt: prompt() }, model: undefined }),
    async bare(context) {
      const turn = { turn_id: `ai-bench-${randomUUID()}`, question: QUESTION, place: context.place };
      const rendered = await post(context, "render", turn);
      return { prompt: rendered.text ? [{ role: "system", content: rendered.text }, ...prompt()] : prompt() };
    },
  },
];
