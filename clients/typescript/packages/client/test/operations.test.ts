import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { test } from "node:test";
import { fileURLToPath } from "node:url";
import yaml from "js-yaml";
import { ArchivistClient, type operations } from "../src/index.js";

// Every operation of the schema, by operationId, and the method that calls it: a new operation fails the type
// check here until the client has a method for it.
const METHODS = {
  injections_read: "injection",
  injections_replay: "replay",
  memories_list: "list",
  memories_remember: "remember",
  memories_read: "get",
  memories_forget: "forget",
  memories_pin: "pin",
  memories_correct: "correct",
  memories_unpin: "unpin",
  memories_remember_batch: "rememberMany",
  people_list: "people",
  people_put: "putPerson",
  places_list: "places",
  places_put: "putPlace",
  turns_recall: "recall",
  turns_render: "render",
  subjects_erase: "subjectErase",
  subjects_export: "subjectExport",
  system_claims_submit: "submitClaim",
  system_claims_read: "claim",
  threads_read: "thread",
  threads_ingest_events: "ingestEvents",
} as const satisfies Record<keyof operations, keyof ArchivistClient>;

test("every operation of the committed schema has its method", () => {
  const schemaFile = process.env.ARCHIVIST_SCHEMA ?? fileURLToPath(new URL("../../../../../../openapi.yaml", import.meta.url));
  const schema = yaml.load(readFileSync(schemaFile, "utf8")) as { paths: Record<string, Record<string, unknown>> };
  const operationIds = Object.values(schema.paths)
    .flatMap((item) => Object.values(item))
    .map((operation) => (operation as { operationId?: string }).operationId)
    .filter((id): id is string => Boolean(id));
  assert.deepEqual(operationIds.sort(), Object.keys(METHODS).sort());
  for (const method of Object.values(METHODS)) {
    assert.equal(typeof ArchivistClient.prototype[method], "function", method);
  }
});
