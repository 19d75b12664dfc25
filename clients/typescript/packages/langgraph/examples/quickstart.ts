// The README's example: the main README's organisation (ARCHIVIST_URL, ARCHIVIST_TOKEN of its agent), people
// mona and max, Mona's DM `D-mona` and the team's private channel `G-team`.
import { InvalidError } from "@archivist/client";
import { Annotation, type LangGraphRunnableConfig, START, StateGraph } from "@langchain/langgraph";

import { ArchivistStore } from "@archivist/langgraph";

const store = new ArchivistStore(); // places come from the server's directory
await store.client.putPlace("G-team", { kind: "private", people: ["mona", "max"] });

// A DM's fact is about its person.
await store.put(["memories", "D-mona"], "drink", { content: "Prefers green tea", tier: "profile" });
const drink = await store.get(["memories", "D-mona"], "drink");
console.log(drink?.value.content, drink?.value.scope); // Prefers green tea person

// In a channel, the namespace says whom a fact is about.
await store.put(["subjects", "G-team", "workspace"], "standup", { content: "Standup is at 9" });
await store.put(["subjects", "G-team", "candidate", "cand-9"], "lang", { content: "Speaks Dutch" });
console.log((await store.search(["subjects", "G-team"])).map((item) => item.key)); // [ 'lang', 'standup' ]
const namespaces = await store.listNamespaces({ prefix: ["subjects", "G-team"] });
console.log(JSON.stringify(namespaces)); // [["subjects","G-team","candidate","cand-9"],["subjects",…]]
try {
  await store.put(["memories", "G-team"], "dog", { content: "Mona's dog is Rex" });
} catch (error) {
  if (!(error instanceof InvalidError)) throw error;
  console.log("refused:", Object.keys(error.fields)); // refused: [ 'subject_type' ]
}

// In a graph, a node reaches the store the graph was compiled with through its config.
const State = Annotation.Root({ channel: Annotation<string>, answer: Annotation<string> });
const graph = new StateGraph(State)
  .addNode("reply", async (state, config: LangGraphRunnableConfig) => {
    const [newest] = (await config.store?.search(["memories", state.channel], { limit: 1 })) ?? [];
    return { answer: String(newest?.value.content ?? "nothing yet") };
  })
  .addEdge(START, "reply")
  .compile({ store });
console.log((await graph.invoke({ channel: "D-mona" })).answer); // Prefers green tea

await store.delete(["memories", "D-mona"], "drink"); // forgotten; a receipt stays
console.log(await store.get(["memories", "D-mona"], "drink")); // null
