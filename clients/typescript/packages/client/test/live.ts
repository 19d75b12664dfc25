/**
 * What the tests share: the live server the pytest harness started (ARCHIVIST_URL, ARCHIVIST_TOKEN), its people
 * (ARCHIVIST_TEST_PEOPLE), the places the tests make, and a check of an answer against the committed schema.
 */
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { fileURLToPath } from "node:url";
import yaml from "js-yaml";
import { ArchivistClient, type ClientOptions, type Place } from "../src/index.js";

/** An environment variable the harness sets; its absence fails the test run, naming the variable. */
export function required(name: string): string {
  const value = process.env[name];
  if (!value) throw new Error(`${name} is not set: run these tests through clients/typescript/tests (pytest).`);
  return value;
}

export const [MONA = "mona", MAX = "max"] = required("ARCHIVIST_TEST_PEOPLE").split(",");
export const DM: Place = { channel: "D-mona", kind: "dm", people: [MONA] };
export const TEAM: Place = { channel: "G-team", kind: "private", people: [MONA, MAX] };

export function client(options: ClientOptions = {}): ArchivistClient {
  return new ArchivistClient({ url: required("ARCHIVIST_URL"), token: required("ARCHIVIST_TOKEN"), ...options });
}

/** Puts a place's record (safe to repeat: a record is put, not added), and answers the place. */
export async function makePlace(place: Place, archivist: ArchivistClient = client()): Promise<Place> {
  await archivist.putPlace(place.channel, { kind: place.kind, people: place.people ?? [] });
  return place;
}

/** Makes the DM with mona and the team's private channel. */
export async function makePlaces(): Promise<void> {
  await makePlace(DM);
  await makePlace(TEAM);
}

/** A private channel of mona and max of its own, so one test's facts never meet another's. */
export function teamPlace(name: string): Promise<Place> {
  return makePlace({ channel: `G-team-${name}`, kind: "private", people: [MONA, MAX] });
}

/** A name no other test run uses, for turns, threads and keys. */
export function unique(prefix: string): string {
  return `${prefix}-${crypto.randomUUID().slice(0, 8)}`;
}

type Schema = {
  $ref?: string;
  type?: string;
  required?: string[];
  properties?: Record<string, Schema>;
  items?: Schema;
  allOf?: Schema[];
};

const schemaFile = process.env.ARCHIVIST_SCHEMA ?? fileURLToPath(new URL("../../../../../../openapi.yaml", import.meta.url));
const components = (yaml.load(readFileSync(schemaFile, "utf8")) as { components: { schemas: Record<string, Schema> } })
  .components.schemas;

function resolve(schema: Schema): Schema {
  if (schema.$ref) return resolve(components[schema.$ref.split("/").pop()!]!);
  if (schema.allOf?.length === 1) return resolve(schema.allOf[0]!);
  return schema;
}

function check(value: unknown, schema: Schema, where: string): void {
  const resolved = resolve(schema);
  if (Array.isArray(value) && resolved.items) {
    value.forEach((item, index) => check(item, resolved.items!, `${where}[${index}]`));
    return;
  }
  if (value === null || typeof value !== "object" || !resolved.properties) return;
  for (const name of resolved.required ?? []) {
    assert.ok(name in value, `${where} lacks ${name}, which the schema requires`);
  }
  for (const [name, inner] of Object.entries(resolved.properties)) {
    const field = (value as Record<string, unknown>)[name];
    if (field !== undefined) check(field, inner, `${where}.${name}`);
  }
}

/** Asserts `value` has every field the schema's component `name` requires, nested objects included. */
export function assertShape(value: unknown, name: string): void {
  assert.ok(components[name], `the schema has no component ${name}`);
  check(value, { $ref: `#/components/schemas/${name}` }, name);
}
