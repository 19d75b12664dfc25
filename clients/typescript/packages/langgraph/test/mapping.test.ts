/** The namespace mapping, source references and values, with no server: what a namespace, key or value means. */

import assert from "node:assert/strict";
import { test } from "node:test";

import { InvalidNamespaceError } from "@langchain/langgraph-checkpoint";

import { compareNamespaces, matchesCondition, meaningOf } from "../src/namespaces.js";
import { parseSourceRef, sourceRef } from "../src/sourceRef.js";
import { bodyOf, matchesFilter } from "../src/values.js";

test("each namespace row maps to its channel, scope, person or subject", () => {
  assert.deepEqual(meaningOf(["memories", "D-mona"]), { channel: "D-mona", fields: {} });
  assert.deepEqual(meaningOf(["memories", "G-team", "channel"]).fields, { scope: "channel" });
  assert.deepEqual(meaningOf(["memories", "G-team", "person", "mona"]).fields, { scope: "person", only_for: "mona" });
  assert.deepEqual(meaningOf(["subjects", "G-team", "candidate", "cand-9"]).fields, {
    subject_type: "candidate",
    subject_id: "cand-9",
  });
  assert.deepEqual(meaningOf(["subjects", "G-team", "user", "max"]).fields, {
    subject_type: "user",
    subject_id: "max",
  });
  assert.deepEqual(meaningOf(["subjects", "G-team", "workspace"]), {
    channel: "G-team",
    fields: { subject_type: "workspace" },
  });
});

test("a namespace that maps to nothing is refused with the usage", () => {
  for (const namespace of [
    ["notes"],
    ["memories"],
    ["notes", "G-team"],
    ["memories", "G-team", "galaxy"],
    ["memories", "G-team", "channel", "mona"],
    ["memories", "G-team", "person", "mona", "extra"],
    ["subjects", "G-team"],
    ["subjects", "G-team", "user"],
    ["subjects", "G-team", "workspace", "x"],
  ]) {
    assert.throws(() => meaningOf(namespace), (error: Error) => {
      assert.ok(error instanceof InvalidNamespaceError, `${namespace.join("/")}: ${error}`);
      assert.match(error.message, /maps to nothing in Archivist\. Namespaces are/);
      return true;
    });
  }
  assert.throws(
    () => meaningOf(["subjects", "G-team", "robot", "r2"]),
    /A subject is a candidate, a user or the workspace, not "robot"/,
  );
});

test("a search may name a prefix of a subject's namespace, a write may not", () => {
  assert.deepEqual(meaningOf(["subjects", "G-team"], { prefix: true }).fields, {});
  assert.deepEqual(meaningOf(["subjects", "G-team", "candidate"], { prefix: true }).fields, {});
  assert.throws(() => meaningOf(["subjects", "G-team", "robot"], { prefix: true }), InvalidNamespaceError);
  assert.throws(() => meaningOf(["subjects", "G-team", "user", "max", "x"], { prefix: true }), InvalidNamespaceError);
  assert.throws(() => meaningOf(["memories"], { prefix: true }), InvalidNamespaceError); // a search is in one place
});

test("a key's source reference encodes as Python's quote does and parses back", () => {
  const ref = sourceRef(["memories", "G-team", "person", "mona"], "it's (a) key!*/#");
  assert.equal(ref, "lg/memories/G-team/person/mona#it%27s%20%28a%29%20key%21%2A%2F%23");
  assert.deepEqual(parseSourceRef(ref), {
    namespace: ["memories", "G-team", "person", "mona"],
    key: "it's (a) key!*/#",
  });
  assert.equal(sourceRef(["subjects", "Ü-kanal", "workspace"], "k~_.-"), "lg/subjects/%C3%9C-kanal/workspace#k~_.-");
  assert.equal(parseSourceRef("anthropic/memories/x"), null);
  assert.equal(parseSourceRef(null), null);
  assert.deepEqual(parseSourceRef("lg/a/%E0%A4#k"), { namespace: ["a", "%E0%A4"], key: "k" }); // malformed: kept
});

test("a source reference longer than Archivist keeps is refused naming the limit", () => {
  assert.equal(sourceRef(["memories", "D-mona"], "k".repeat(181)).length, 200);
  assert.throws(
    () => sourceRef(["memories", "D-mona"], "k".repeat(182)),
    /201 characters; Archivist keeps at most 200/,
  );
});

test("a value keeps its text in content and only the fields a memory keeps", () => {
  assert.deepEqual(bodyOf({ content: "Prefers tea", tier: "profile", pinned: true }), {
    body: "Prefers tea",
    extra: { tier: "profile", pinned: true },
  });
  assert.equal(bodyOf({ content: { food: "tea", drink: [1, "x"] } }).body, '{"drink": [1, "x"], "food": "tea"}');
  assert.throws(() => bodyOf({ content: "x", colour: "blue", age: 3 }), /it does not keep age, colour\./);
  assert.throws(() => bodyOf({ text: "x" }), /does not keep text/);
  assert.throws(() => bodyOf({}), /A value needs its text in 'content'\./);
});

test("a filter matches equal values and LangGraph's comparison operators", () => {
  const value = { content: "x", tier: "note", rank: 3 };
  assert.ok(matchesFilter(value, { tier: "note" }));
  assert.ok(!matchesFilter(value, { tier: "log" }));
  assert.ok(matchesFilter(value, { rank: { $gt: 2, $lte: 3 }, tier: { $in: ["note", "log"] } }));
  assert.ok(!matchesFilter(value, { rank: { $lt: 3 } }));
  assert.ok(matchesFilter(value, { tier: { $ne: "log" }, missing: { $nin: ["a"] } }));
  assert.ok(!matchesFilter(value, { tier: { $nin: ["note"] } }));
});

test("namespaces match prefix and suffix conditions with wildcards, and sort in tuple order", () => {
  const namespace = ["subjects", "G-team", "candidate", "cand-9"];
  assert.ok(matchesCondition(namespace, { matchType: "prefix", path: ["subjects", "*", "candidate"] }));
  assert.ok(matchesCondition(namespace, { matchType: "suffix", path: ["candidate", "cand-9"] }));
  assert.ok(!matchesCondition(namespace, { matchType: "suffix", path: ["user", "*"] }));
  assert.ok(!matchesCondition(["memories"], { matchType: "prefix", path: ["memories", "D-mona"] }));
  const sorted = [
    ["subjects", "G-team", "workspace"],
    ["memories", "G-team-2"],
    ["memories", "G-team", "person", "mona"],
    ["memories", "G-team"],
  ].sort(compareNamespaces);
  assert.deepEqual(sorted, [
    ["memories", "G-team"],
    ["memories", "G-team", "person", "mona"],
    ["memories", "G-team-2"],
    ["subjects", "G-team", "workspace"],
  ]);
});
