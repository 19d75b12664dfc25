import assert from "node:assert/strict";
import { before, test } from "node:test";
import { ForgottenError } from "../src/index.js";
import { assertShape, client, makePlaces, teamPlace } from "./live.js";

before(() => makePlaces());

test("correct, get, pin, unpin and forget answer the schema's memories, and a forgotten one is ForgottenError", async () => {
  const archivist = client({ place: await teamPlace("memories") });
  const first = await archivist.remember({ body: "Standup is at 9", subject_type: "workspace" });
  const corrected = await archivist.correct(first.id, { body: "Standup is at 10" });
  assertShape(corrected, "MemoryOutput");
  assert.equal(corrected.body, "Standup is at 10");
  const detail = await archivist.get(corrected.id);
  assertShape(detail, "MemoryDetailOutput");
  assert.deepEqual(
    detail.chain.map((version) => version.body),
    ["Standup is at 9", "Standup is at 10"],
  );
  const pinned = await archivist.pin(corrected.id);
  assertShape(pinned, "MemoryOutput");
  assert.equal(pinned.pinned, true);
  assert.equal((await archivist.unpin(corrected.id)).pinned, false);
  const receipt = await archivist.forget(corrected.id, { reason: "asked to" });
  assertShape(receipt, "MemoryOutput");
  assert.equal(receipt.state, "erased");
  assert.equal(receipt.body, "");
  await assert.rejects(archivist.get(corrected.id), (error: unknown) => {
    assert.ok(error instanceof ForgottenError);
    assert.equal(error.status, 410);
    assert.equal(error.receipt.reason, "asked to");
    return true;
  });
});

test("list follows the cursors past one page, newest first, with the API's filters", async () => {
  const archivist = client({ place: await teamPlace("list") });
  for (let index = 0; index < 5; index++) {
    await archivist.remember({ body: `Fact number ${index}`, source_ref: `ref-${index}`, subject_type: "workspace" });
  }
  const rows = [];
  for await (const row of archivist.list({ page_size: 2 })) rows.push(row);
  rows.forEach((row) => assertShape(row, "MemoryOutput"));
  assert.deepEqual(
    rows.map((row) => row.body),
    [4, 3, 2, 1, 0].map((index) => `Fact number ${index}`),
  );
  const filtered = [];
  for await (const row of archivist.list({ page_size: 2, q: "number", source_ref: "ref-3" })) filtered.push(row.body);
  assert.deepEqual(filtered, ["Fact number 3"]);
});

test("rememberMany answers each item, a refused one naming its field, in batches of 100", async () => {
  const archivist = client({ place: await teamPlace("batch") });
  const items = Array.from({ length: 120 }, (_, n) => ({ body: `Bulk fact ${n}`, subject_type: "workspace" as const }));
  items[110] = { body: "", subject_type: "workspace" };
  const batch = await archivist.rememberMany(items);
  assertShape(batch, "BatchOutput");
  assert.deepEqual([batch.created, batch.refused, batch.items.length], [119, 1, 120]);
  const refused = batch.items[110]!;
  assert.equal(refused.index, 110);
  assert.equal(refused.status, "refused");
  assert.ok(JSON.stringify(refused).includes("body"));
  assert.equal(batch.items[119]?.memory?.body, "Bulk fact 119");
});
