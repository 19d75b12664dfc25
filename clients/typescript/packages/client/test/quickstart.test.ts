import assert from "node:assert/strict";
import { execFile } from "node:child_process";
import { fileURLToPath } from "node:url";
import { promisify } from "node:util";
import { before, test } from "node:test";
import { makePlaces } from "./live.js";

before(() => makePlaces());

test("the README's quickstart example runs against the live server", async () => {
  const example = fileURLToPath(new URL("../examples/quickstart.js", import.meta.url));
  const { stdout } = await promisify(execFile)(process.execPath, [example], { env: process.env });
  assert.match(stdout, /^person mona$/m);
  assert.match(stdout, /Her birthday is on 12 March/);
  assert.match(stdout, /limit is at most 40\./);
});
