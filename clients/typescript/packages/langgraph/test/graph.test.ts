/** The store inside a LangGraph graph: nodes write and read memories through `config.store`. */

import assert from "node:assert/strict";
import { test } from "node:test";

import { Annotation, END, type LangGraphRunnableConfig, START, StateGraph } from "@langchain/langgraph";

import { freshPlace, liveStore } from "../support/live.js";

const State = Annotation.Root({
  said: Annotation<string>,
  recalled: Annotation<string[]>,
});

function namespaceOf(config: LangGraphRunnableConfig): string[] {
  return ["memories", String(config.configurable?.channel)];
}

const graph = new StateGraph(State)
  .addNode("learn", async (state, config: LangGraphRunnableConfig) => {
    await config.store?.put(namespaceOf(config), "said", { content: state.said });
    return {};
  })
  .addNode("recall", async (_state, config: LangGraphRunnableConfig) => {
    const found = (await config.store?.search(namespaceOf(config), { query: "tea" })) ?? [];
    return { recalled: found.map((item) => String(item.value.content)) };
  })
  .addEdge(START, "learn")
  .addEdge("learn", "recall")
  .addEdge("recall", END);

test("a graph's nodes remember and recall through the store the graph was compiled with", async () => {
  const store = liveStore();
  const dm = await freshPlace(store.client, "graph", "dm");
  const app = graph.compile({ store });
  const configurable = { channel: dm.channel };
  const first = await app.invoke({ said: "Prefers green tea", recalled: [] }, { configurable });
  assert.deepEqual(first.recalled, ["Prefers green tea"]);
  // The same key again supersedes: the place holds one live fact, the newest.
  const second = await app.invoke({ said: "Prefers black tea now", recalled: [] }, { configurable });
  assert.deepEqual(second.recalled, ["Prefers black tea now"]);
});
