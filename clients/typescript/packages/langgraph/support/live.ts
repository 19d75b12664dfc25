/**
 * What the live tests share: a client on the server the harness started (ARCHIVIST_URL, ARCHIVIST_TOKEN), the
 * people it made (ARCHIVIST_TEST_PEOPLE), and places of this package's own, named for this run, so the tests
 * of other packages in the same organisation (and a second run on the same server) never share an item.
 */

import { ArchivistClient, type Place } from "@archivist/client";

import { ArchivistStore } from "../src/index.js";

const RUN = `lg-${Date.now().toString(36)}-${process.pid}`;

export function people(): [string, string] {
  const [first, second] = (process.env.ARCHIVIST_TEST_PEOPLE ?? "").split(",").filter(Boolean);
  if (first === undefined || second === undefined) {
    throw new Error("ARCHIVIST_TEST_PEOPLE must name two people of the organisation, e.g. mona,max.");
  }
  return [first, second];
}

/** A place of this run, recorded in Archivist: `D-<person>-lg-…` or `G-team-lg-…` with the test's label. */
export async function freshPlace(client: ArchivistClient, label: string, kind: Place["kind"]): Promise<Place> {
  const [mona, max] = people();
  const place: Place =
    kind === "dm"
      ? { channel: `D-${mona}-${RUN}-${label}`, kind, people: [mona] }
      : { channel: `G-team-${RUN}-${label}`, kind, people: [mona, max] };
  await client.putPlace(place.channel, { kind, people: place.people ?? [] });
  return place;
}

/** A store on the live server that knows its places from the server's directory, as an agent's would. */
export function liveStore(): ArchivistStore {
  return new ArchivistStore();
}

/** Every row of an async listing (Node 20 has no `Array.fromAsync`). */
export async function collect<Row>(rows: AsyncIterable<Row>): Promise<Row[]> {
  const all: Row[] = [];
  for await (const row of rows) all.push(row);
  return all;
}
