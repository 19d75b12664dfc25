/**
 * ArchivistStore against the live server: get, put (supersede, null to delete), delete, search, listNamespaces
 * and batch map to Archivist's memories as the Python store maps them, and refusals arrive as typed errors.
 */

import assert from "node:assert/strict";
import { before, test } from "node:test";

import {
  ArchivistClient,
  ForgottenError,
  InvalidError,
  ThrottledError,
  UnauthenticatedError,
  type Place,
} from "@archivist/client";
import {
  InvalidNamespaceError,
  type GetOperation,
  type ListNamespacesOperation,
  type PutOperation,
  type SearchOperation,
} from "@langchain/langgraph-checkpoint";

import { ArchivistStore } from "../src/index.js";
import { collect, freshPlace, liveStore, people } from "../support/live.js";

const store = liveStore();
const client = store.client;
let dm: Place;
let team: Place;

before(async () => {
  dm = await freshPlace(client, "store", "dm");
  team = await freshPlace(client, "store", "private");
});

test("put, get, put again supersedes, and put null and delete forget", async () => {
  const namespace = ["memories", dm.channel];
  await store.put(namespace, "pref", { content: "Prefers tea" });
  const first = await store.get(namespace, "pref");
  assert.deepEqual(
    { content: first?.value.content, scope: first?.value.scope, key: first?.key, namespace: first?.namespace },
    { content: "Prefers tea", scope: "person", key: "pref", namespace },
  );
  assert.ok(first?.createdAt instanceof Date && first.createdAt.getTime() <= Date.now());

  await store.put(namespace, "pref", { content: "Prefers coffee now", tier: "profile" });
  const second = await store.get(namespace, "pref");
  assert.equal(second?.value.content, "Prefers coffee now");
  assert.equal(second?.value.tier, "profile");
  const history = await client.get(second?.value.id, { place: dm });
  assert.deepEqual(
    history.chain.map((version) => version.id),
    [first?.value.id, second?.value.id],
    "the first version is kept in the chain",
  );

  await store.put(namespace, "pref", null); // LangGraph's way to delete through put
  assert.equal(await store.get(namespace, "pref"), null);
  await assert.rejects(client.get(second?.value.id, { place: dm }), ForgottenError, "forgotten, a receipt stays");

  await store.put(namespace, "other", { content: "Walks to work" });
  await store.delete(namespace, "other");
  assert.equal(await store.get(namespace, "other"), null);
  await store.delete(namespace, "never-written"); // deleting what is not there is no error
  assert.equal(await store.get(namespace, "never-written"), null);
});

test("namespaces choose the scope, the person and the subject of a write", async () => {
  await store.put(["subjects", team.channel, "workspace"], "ship", { content: "Ships on Fridays" });
  await store.put(["subjects", team.channel, "candidate", "cand-9"], "lang", { content: "Candidate speaks Dutch" });
  const read = async (namespace: string[], key: string) => {
    const item = await store.get(namespace, key);
    return client.get(item?.value.id, { place: team });
  };
  const ship = await read(["subjects", team.channel, "workspace"], "ship");
  assert.deepEqual([ship.scope, ship.scope_ref, ship.subject_type], ["channel", team.channel, "workspace"]);
  const lang = await read(["subjects", team.channel, "candidate", "cand-9"], "lang");
  assert.deepEqual([lang.scope, lang.subject_type, lang.subject_id], ["channel", "candidate", "cand-9"]);
  assert.equal(lang.source.ref, `lg/subjects/${team.channel}/candidate/cand-9#lang`);
});

test("a person's fact written in a channel is kept for that person: her DM reads it, not the channel", async () => {
  const [mona] = people();
  const namespace = ["memories", team.channel, "person", mona];
  await store.put(namespace, "call", { content: "Mona is on call" });
  assert.equal(await store.get(namespace, "call"), null, "a person's fact is not recalled in a group channel");
  const ref = `lg/memories/${team.channel}/person/${mona}#call`;
  const [kept] = await collect(client.list({ place: dm, source_ref: ref }));
  assert.deepEqual([kept?.body, kept?.scope, kept?.subject_type], ["Mona is on call", "person", "user"]);
  assert.equal(kept?.subject_id, kept?.scope_ref, "the fact is about the person it is kept for");
});

test("the server's refusals arrive as the client's typed errors, naming the field", async () => {
  // Outside a DM a namespace that does not say whom a fact is about is refused by the server.
  const unsaid = await store.put(["memories", team.channel], "k0", { content: "Mona's dog is Rex" }).catch((e) => e);
  assert.ok(unsaid instanceof InvalidError, String(unsaid));
  assert.ok("subject_type" in unsaid.fields, JSON.stringify(unsaid.fields));
  const tier = await store.put(["memories", dm.channel], "k1", { content: "x", tier: "forever" }).catch((e) => e);
  assert.ok(tier instanceof InvalidError && "tier" in tier.fields, String(tier));
  assert.equal(await store.get(["memories", dm.channel], "k1"), null, "nothing was written");
  const stranger = new ArchivistStore({ url: client.url, token: "not-a-token", places: { [dm.channel]: dm } });
  await assert.rejects(stranger.get(["memories", dm.channel], "k"), UnauthenticatedError);
});

test("namespaces, keys and values that map to nothing are refused, naming the rule", async () => {
  const refusedNamespace = (pattern: RegExp) => (error: unknown) =>
    error instanceof InvalidNamespaceError && pattern.test(error.message);
  const put = (namespace: string[], value: Record<string, unknown> = { content: "x" }) =>
    store.put(namespace, "k", value);
  await assert.rejects(put(["notes"]), refusedNamespace(/maps to nothing/));
  await assert.rejects(put(["memories", "C-nowhere-lg"]), refusedNamespace(/does not know/));
  await assert.rejects(put(["memories", team.channel, "galaxy"]), refusedNamespace(/maps to nothing/));
  await assert.rejects(store.search(["memories"]), refusedNamespace(/maps to nothing/));
  await assert.rejects(put(["memories", "D.mona"]), refusedNamespace(/periods/)); // LangGraph's own rule
  await assert.rejects(put(["memories", dm.channel], { content: "x", colour: "blue" }), /does not keep colour/);
  await assert.rejects(store.put(["memories", dm.channel], "k".repeat(200), { content: "x" }), RangeError);
  const written = await store.search(["memories", dm.channel], { limit: 100 });
  assert.deepEqual(written.filter((item) => item.key.startsWith("k")), [], "nothing was written");
});

test("a place recorded after the store read the directory is found by reading it again", async () => {
  const fresh = liveStore();
  assert.deepEqual(await fresh.listNamespaces({ prefix: ["memories", dm.channel] }), [["memories", dm.channel]]);
  const later = await freshPlace(client, "later", "private");
  const namespace = ["subjects", later.channel, "workspace"];
  await fresh.put(namespace, "k", { content: "Recorded after the first read" });
  assert.equal((await fresh.get(namespace, "k"))?.value.content, "Recorded after the first read");
});

test("structured content is kept as its JSON text, and ttl becomes the expiry", async () => {
  const namespace = ["subjects", team.channel, "workspace"];
  await store.put(namespace, "structured", { content: { food: "tea", days: [1, 2] } });
  const item = await store.get(namespace, "structured");
  assert.deepEqual(JSON.parse(item?.value.content), { food: "tea", days: [1, 2] });
  await store.put(namespace, "soon", { content: "Expires soon" }, undefined, { ttl: 60 });
  const soon = await client.get((await store.get(namespace, "soon"))?.value.id, { place: team });
  const lag = Math.abs(Date.parse(soon.expires_at ?? "") - (Date.now() + 60 * 60_000));
  assert.ok(lag < 120_000, `expires ${soon.expires_at}`);
});

test("search recalls with a query, lists without one, filters and pages", async () => {
  const channel = (await freshPlace(client, "search", "private")).channel;
  const namespace = ["subjects", channel, "workspace"];
  await store.put(namespace, "a", { content: "The release train leaves on Fridays", tier: "note" });
  await store.put(namespace, "b", { content: "Lunch is at noon", tier: "profile" });
  await store.put(["subjects", channel, "candidate", "cand-1"], "c", { content: "Candidate one speaks Dutch" });

  const recalled = await store.search(["subjects", channel, "workspace"], { query: "release train" });
  // The test server has no embedder: recall answers the place's most recent facts (and says so). What this
  // checks is that a query goes through recall, scored, kept to the namespace searched.
  assert.deepEqual(recalled.map((item) => item.key).sort(), ["a", "b"]);
  assert.ok(recalled.every((item) => typeof item.score === "number"));

  const listed = await store.search(["subjects", channel]);
  assert.deepEqual(listed.map((item) => item.key), ["c", "b", "a"], "newest first");
  assert.deepEqual(listed[0]?.namespace, ["subjects", channel, "candidate", "cand-1"]);
  assert.equal(listed[0]?.score, undefined, "a listing is not ranked");
  const paged = await store.search(["subjects", channel], { limit: 1, offset: 1 });
  assert.deepEqual(paged.map((item) => item.key), ["b"]);
  const profiles = await store.search(["subjects", channel], { filter: { tier: "profile" } });
  assert.deepEqual(profiles.map((item) => item.key), ["b"]);
  const notProfiles = await store.search(["subjects", channel], { filter: { tier: { $ne: "profile" } }, limit: 1 });
  assert.deepEqual(notProfiles.map((item) => item.key), ["c"]);
  const candidates = await store.search(["subjects", channel, "candidate"]);
  assert.deepEqual(candidates.map((item) => item.key), ["c"]);
});

test("listNamespaces lists the places and the namespaces written to, by prefix, suffix and depth", async () => {
  const channel = (await freshPlace(client, "names", "private")).channel;
  const [mona] = people();
  await store.put(["subjects", channel, "workspace"], "w", { content: "Standup is at nine" });
  await store.put(["subjects", channel, "candidate", "cand-2"], "c", { content: "Candidate two is in Ghent" });
  await store.put(["memories", channel, "person", mona], "p", { content: "Mona takes the early shift" });
  const mine = (namespaces: string[][]) => namespaces.filter((namespace) => namespace[1] === channel);

  assert.deepEqual(mine(await store.listNamespaces()), [
    ["memories", channel],
    ["memories", channel, "person", mona],
    ["subjects", channel, "candidate", "cand-2"],
    ["subjects", channel, "workspace"],
  ]);
  assert.deepEqual(await store.listNamespaces({ prefix: ["subjects", channel] }), [
    ["subjects", channel, "candidate", "cand-2"],
    ["subjects", channel, "workspace"],
  ]);
  assert.deepEqual(mine(await store.listNamespaces({ suffix: ["workspace"] })), [["subjects", channel, "workspace"]]);
  assert.deepEqual(mine(await store.listNamespaces({ prefix: ["*", channel], maxDepth: 2 })), [
    ["memories", channel],
    ["subjects", channel],
  ]);
  assert.deepEqual(await store.listNamespaces({ prefix: ["subjects", channel], limit: 1, offset: 1 }), [
    ["subjects", channel, "workspace"],
  ]);
  const everything = await store.listNamespaces({ limit: 1000 });
  assert.deepEqual(everything, [...everything].sort(compareTuples), "in tuple order");
});

function compareTuples(a: string[], b: string[]): number {
  const joined = (namespace: string[]) => namespace.map((label) => `${label}\u0000`).join("");
  return joined(a) < joined(b) ? -1 : joined(a) > joined(b) ? 1 : 0;
}

test("batch runs mixed operations in order, each answering as its method would", async () => {
  const namespace = ["memories", dm.channel];
  type Mixed = [PutOperation, GetOperation, SearchOperation, ListNamespacesOperation, PutOperation, GetOperation];
  const [put, got, found, namespaces, removed, gone] = await store.batch<Mixed>([
    { namespace, key: "batch", value: { content: "Batched fact" } },
    { namespace, key: "batch" },
    { namespacePrefix: namespace, limit: 10, offset: 0 },
    { matchConditions: [{ matchType: "prefix", path: namespace }], limit: 10, offset: 0 },
    { namespace, key: "batch", value: null },
    { namespace, key: "batch" },
  ]);
  assert.equal(put, undefined);
  assert.equal(got?.value.content, "Batched fact");
  assert.ok(found.some((item) => item.key === "batch" && item.value.id === got?.value.id));
  assert.deepEqual(namespaces, [namespace]);
  assert.equal(removed, undefined);
  assert.equal(gone, null);
});

test("a throttled call arrives as ThrottledError with the server's Retry-After", async () => {
  const url = process.env.ARCHIVIST_TEST_THROTTLE_URL;
  assert.ok(url, "ARCHIVIST_TEST_THROTTLE_URL names the harness's throttle");
  const once = new ArchivistStore({ client: new ArchivistClient({ retries: 0 }) });
  assert.equal(await once.get(["memories", dm.channel], "throttled"), null, "answered before the throttle");
  assert.equal((await fetch(url, { method: "POST", body: JSON.stringify({ seconds: 2 }) })).status, 204);
  const throttled = await once.get(["memories", dm.channel], "throttled").catch((error) => error);
  assert.ok(throttled instanceof ThrottledError, String(throttled));
  assert.ok(throttled.retryAfter !== undefined && throttled.retryAfter > 0);
  // The default client waits the Retry-After and tries again, so the store's call goes through.
  assert.equal(await store.get(["memories", dm.channel], "throttled"), null);
});
