import assert from "node:assert/strict";
import { before, test } from "node:test";
import { ArchivistClient, InvalidError } from "../src/index.js";
import { assertShape, client, DM, makePlaces, required, TEAM, teamPlace, unique } from "./live.js";

before(() => makePlaces());

test("a fact is remembered, recalled, rendered, and its injection read and replayed", async () => {
  const archivist = client({ place: DM });
  const fact = await archivist.remember({ body: "Prefers to be called Mo", tier: "profile", source_ref: "msg-1" });
  assertShape(fact, "RememberedOutput");
  assert.deepEqual([fact.scope, fact.scope_label, fact.source.ref], ["person", "mona", "msg-1"]);

  const recalled = await archivist.recall({ question: "What is Mona called?", limit: 5 });
  assertShape(recalled, "RecallOutput");
  assert.ok(recalled.results.some((row) => row.id === fact.id));

  const turn = unique("turn");
  const rendered = await archivist.render({ turn_id: turn, question: "What is she called?" });
  assertShape(rendered, "RenderOutput");
  assert.ok(rendered.text.includes("Prefers to be called Mo"));

  const injection = await archivist.injection(turn);
  assertShape(injection, "InjectionOutput");
  assert.ok(injection.fact_ids.includes(fact.id));
  const replay = await archivist.replay(turn);
  assertShape(replay, "ReplayOutput");
  assert.equal(replay.identical, true);
});

test("the default place is used when a call names none, and a call may name its own", async () => {
  const own = await teamPlace("turns");
  const archivist = client({ place: DM });
  assert.deepEqual(archivist.place, DM);
  await archivist.remember({ body: "The team ships on Fridays", place: own, subject_type: "workspace" });
  const there = await archivist.recall({ question: "ships", place: own });
  assert.equal(there.results[0]?.scope, "channel");
  const inTheDm = await archivist.recall({ question: "ships" }); // the default place: the DM
  assert.ok(!inTheDm.results.some((row) => row.body === "The team ships on Fridays"));
  assert.throws(() => client().recall({ question: "x" }), /needs a place/);
});

test("the environment gives the server and the token when they are not passed", async () => {
  const archivist = new ArchivistClient({ place: TEAM });
  assert.equal(archivist.url, required("ARCHIVIST_URL").replace(/\/+$/, ""));
  assertShape(await archivist.recall({ question: "anything" }), "RecallOutput");
});

test("no URL or token, given or in the environment, is refused naming the variable", () => {
  const saved = { url: process.env.ARCHIVIST_URL, token: process.env.ARCHIVIST_TOKEN };
  delete process.env.ARCHIVIST_URL;
  delete process.env.ARCHIVIST_TOKEN;
  try {
    assert.throws(() => new ArchivistClient({ token: "x" }), /ARCHIVIST_URL/);
    assert.throws(() => new ArchivistClient({ url: "http://127.0.0.1:1" }), /ARCHIVIST_TOKEN/);
  } finally {
    process.env.ARCHIVIST_URL = saved.url;
    process.env.ARCHIVIST_TOKEN = saved.token;
  }
});

test("outside a DM a fact without a subject is refused as InvalidError naming subject_type", async () => {
  const archivist = client({ place: TEAM });
  await assert.rejects(archivist.remember({ body: "Mona's dog is called Rex" }), (error: unknown) => {
    assert.ok(error instanceof InvalidError);
    assert.ok(error.fields.subject_type?.length, JSON.stringify(error.fields));
    return true;
  });
});
