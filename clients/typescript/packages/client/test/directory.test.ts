import assert from "node:assert/strict";
import { test } from "node:test";
import { assertShape, client, MAX, MONA, unique } from "./live.js";

test("putPerson makes a directory person, and people lists them across pages", async () => {
  const archivist = client();
  const handle = unique("U");
  const person = await archivist.putPerson(handle, { display_name: "Ursula" });
  assertShape(person, "PersonOutput");
  assert.equal(person.display_name, "Ursula");
  const people = [];
  for await (const row of archivist.people({ page_size: 1 })) people.push(row);
  people.forEach((row) => assertShape(row, "PersonOutput"));
  const names = people.map((row) => row.handle ?? row.username);
  for (const name of [handle, MONA, MAX]) assert.ok(names.includes(name), `${name} in ${names.join(", ")}`);
});

test("putPlace records a place, and places lists the ones the agent may use", async () => {
  const archivist = client();
  const channel = unique("G-team-directory");
  const record = await archivist.putPlace(channel, { kind: "private", people: [MONA, MAX] });
  assertShape(record, "PlaceOutput");
  assert.equal(record.channel, channel);
  const places = [];
  for await (const row of archivist.places()) places.push(row);
  places.forEach((row) => assertShape(row, "PlaceOutput"));
  assert.ok(places.some((row) => row.channel === channel));
});
