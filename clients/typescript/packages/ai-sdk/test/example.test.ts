// The README's example runs as written against the live server, with a stand-in chat server as its model.

import assert from "node:assert/strict";
import { execFile } from "node:child_process";
import { readFileSync } from "node:fs";
import { test } from "node:test";
import { fileURLToPath } from "node:url";
import { promisify } from "node:util";

import { chatStandIn } from "./support.js";

const example = fileURLToPath(new URL("../examples/quickstart.js", import.meta.url));

test("the README's example remembers, injects, records, replays and uses the memory tool", async () => {
  const model = await chatStandIn([{ text: "Call her Mo." }]);
  try {
    const env = { ...process.env, MODEL_BASE_URL: `${model.url}/v1`, MODEL: "stand-in", MODEL_API_KEY: "stand-in" };
    const { stdout } = await promisify(execFile)(process.execPath, [example], { env, timeout: 60_000 });
    const lines = stdout.trim().split("\n");
    assert.equal(lines[0], "Call her Mo.");
    assert.match(stdout, /'- \[person mona · .*\] Prefers to be called Mo'/);
    assert.ok(lines.includes("true"), stdout);
    assert.match(stdout, /\nFile (created successfully at|\/memories\/channel\/workspace\/standup\.md replaced)/);
    assert.match(stdout, /\nsubject_type: say whom this file is about with its folder: /);
    const system = (model.received[0]!.body["messages"] as Array<{ role: string; content: string }>)[0]!;
    assert.equal(system.role, "system");
    assert.ok(system.content.includes("Prefers to be called Mo"));
  } finally {
    await model.close();
  }
});

test("the README shows the example as it is run", () => {
  const source = readFileSync(fileURLToPath(new URL("../../examples/quickstart.ts", import.meta.url)), "utf8");
  const body = source.replace(/^(\/\/.*\n)+\n?/, "");
  const readme = readFileSync(fileURLToPath(new URL("../../README.md", import.meta.url)), "utf8");
  assert.ok(body.startsWith("import { createOpenAICompatible }"));
  assert.ok(readme.includes("```ts\n" + body + "```\n"), "README.md's example differs from examples/quickstart.ts");
});
