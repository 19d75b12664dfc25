// The store's cases for the shared overhead bench (clients/typescript/bench/overhead.mjs): store.get and
// store.search against bare fetch sending the same requests (the listing by source reference; recall).
import { ArchivistStore, sourceRef } from "@archivist/langgraph";

const KEY = "bench";
let ready;

/** One store per run, told the bench's place (no directory read), and the item its gets read, written once. */
function prepared(context) {
  ready ??= (async () => {
    const { channel, kind, people } = context.place;
    const store = new ArchivistStore({ client: context.archivist, places: { [channel]: { kind, people } } });
    const namespace = ["subjects", channel, "workspace"];
    await store.put(namespace, KEY, { content: "The bench's store fact" });
    return { store, namespace };
  })();
  return ready;
}

async function bareJson(context, method, path, body) {
  const response = await fetch(context.api + path, { method, headers: context.headers, body: JSON.stringify(body) });
  const text = await response.text();
  if (!response.ok) throw new Error(`${method} ${path}: ${response.status} ${text}`);
  return JSON.parse(text);
}

export const cases = [
  {
    name: "langgraph store.get",
    run: async (context) => {
      const { store, namespace } = await prepared(context);
      return store.get(namespace, KEY);
    },
    bare: async (context) => {
      const { namespace } = await prepared(context);
      const ref = sourceRef(namespace, KEY);
      const query = { place: context.place.channel, source_ref: ref, state: "live", page_size: "10" };
      const page = await bareJson(context, "GET", `memories?${new URLSearchParams(query)}`);
      return page.results.find((memory) => memory.source.ref === ref) ?? null;
    },
  },
  {
    name: "langgraph store.search (query)",
    run: async (context) => {
      const { store, namespace } = await prepared(context);
      return store.search(namespace, { query: "fact", limit: 10 });
    },
    bare: async (context) => {
      await prepared(context);
      return (await bareJson(context, "POST", "recall", { question: "fact", place: context.place, limit: 10 })).results;
    },
  },
];
