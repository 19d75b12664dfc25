import assert from "node:assert/strict";
import { before, test } from "node:test";
import { assertShape, client, DM, makePlaces, MONA, unique } from "./live.js";

before(() => makePlaces());

test("thread events are ingested and the thread read", async () => {
  const archivist = client({ place: DM });
  const thread = unique("T");
  const ingested = await archivist.ingestEvents(thread, {
    events: [{ id: "e-1", role: "user", author: MONA, text: "Call me Mo.", time: "2026-11-30T09:00:00Z" }],
  });
  assertShape(ingested, "IngestOutput");
  assert.equal(ingested.accepted, 1);
  const read = await archivist.thread(thread);
  assertShape(read, "ThreadOutput");
  assert.equal(read.thread, thread);
});

test("a subject's memories are exported and erased", async () => {
  const archivist = client({ place: DM });
  const candidate = unique("cand");
  await archivist.remember({ body: "Candidate prefers mornings", subject_type: "candidate", subject_id: candidate });
  const exported = await archivist.subjectExport("candidate", candidate);
  assertShape(exported, "SubjectExportOutput");
  assert.equal(exported.count, 1);
  assert.equal(exported.memories[0]?.body, "Candidate prefers mornings");
  const erased = await archivist.subjectErase("candidate", candidate, { reason: "asked to" });
  assertShape(erased, "SubjectEraseOutput");
  assert.equal(erased.erased, 1);
});

test("a system claim is submitted and read", async () => {
  const archivist = client();
  const claim = await archivist.submitClaim({
    body: "The base rate is 4.75%",
    slug: `sys:${unique("base-rate")}`,
    entity: "central-bank",
    transparency: "ledger",
    as_of: "2026-11-30",
    evidence_refs: [{ kind: "url", ref: "https://bank.example/rates" }],
  });
  assertShape(claim, "ClaimOutput");
  assert.equal(claim.status, "candidate");
  const read = await archivist.claim(claim.id);
  assertShape(read, "ClaimOutput");
  assert.equal(read.slug, claim.slug);
});
