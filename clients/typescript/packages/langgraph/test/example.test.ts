/** The README's example, compiled with the package, runs against the live server and prints what it says. */

import assert from "node:assert/strict";
import { execFile } from "node:child_process";
import { readFile } from "node:fs/promises";
import { test } from "node:test";
import { fileURLToPath } from "node:url";
import { promisify } from "node:util";

import { ArchivistClient } from "@archivist/client";

import { people } from "../support/live.js";

const run = promisify(execFile);
const packageDir = fileURLToPath(new URL("../../", import.meta.url));

test("the README shows examples/quickstart.ts as it is", async () => {
  const [readme, example] = await Promise.all([
    readFile(`${packageDir}README.md`, "utf8"),
    readFile(`${packageDir}examples/quickstart.ts`, "utf8"),
  ]);
  assert.ok(readme.includes("```ts\n" + example + "```"), "README.md's example differs from examples/quickstart.ts");
});

test("the quickstart example runs against the live server", async () => {
  // The main README's Quickstart recorded Mona's DM before this example runs.
  await new ArchivistClient().putPlace("D-mona", { kind: "dm", people: [people()[0]] });
  const { stdout } = await run(process.execPath, ["dist/examples/quickstart.js"], { cwd: packageDir });
  assert.deepEqual(stdout.trim().split("\n"), [
    "Prefers green tea person",
    "[ 'lang', 'standup' ]",
    '[["subjects","G-team","candidate","cand-9"],["subjects","G-team","workspace"]]',
    "refused: [ 'subject_type' ]",
    "Prefers green tea",
    "null",
  ]);
});
