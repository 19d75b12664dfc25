import assert from "node:assert/strict";
import { before, describe, test } from "node:test";
import { ArchivistClient, InvalidError } from "../src/index.js";
import { assertShape, client, DM, makePlaces, required, TEAM } from "./live.js";

before(() => makePlaces());

describe("memories", () => {
  test("remember in a DM keeps the fact as that person's, and recall finds it", async () => {
    const archivist = client({ place: DM });
    const fact = await archivist.remember({ body: "Prefers to be called Mo", tier: "profile" });
    assertShape(fact, "RememberedOutput");
    assert.equal(fact.scope, "person");
    const found = await archivist.recall({ question: "What does she like to be called?" });
    assertShape(found, "RecallOutput");
    assert.ok(found.results.some((result) => result.id === fact.id));
  });

  test("the environment gives the server and the token when they are not passed", async () => {
    const archivist = new ArchivistClient({ place: TEAM });
    assert.equal(archivist.url, required("ARCHIVIST_URL").replace(/\/+$/, ""));
    const found = await archivist.recall({ question: "anything" });
    assertShape(found, "RecallOutput");
  });

  test("an empty body is refused as InvalidError naming body", async () => {
    const archivist = client({ place: DM });
    await assert.rejects(archivist.remember({ body: "" }), (error: unknown) => {
      assert.ok(error instanceof InvalidError);
      assert.equal(error.status, 400);
      assert.equal(error.code, "invalid");
      assert.ok(error.fields.body?.length, `fields name body: ${JSON.stringify(error.fields)}`);
      return true;
    });
  });
});
