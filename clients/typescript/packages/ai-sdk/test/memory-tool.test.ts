// The memory tool's backend against the live server: each of the six commands as the model sends it, the
// memories they leave (read back through the API), what cannot map refused with words the model can act on,
// and the tool in a Claude loop through @ai-sdk/anthropic (a stand-in Messages server as the model).

import assert from "node:assert/strict";
import { test } from "node:test";

import { createAnthropic } from "@ai-sdk/anthropic";
import { InvalidError, type Memory, type Place } from "@archivist/client";
import { generateText, stepCountIs } from "ai";

import { ArchivistMemoryBackend, MemoryToolError, type MemoryCommand } from "../src/index.js";
import { archivistMemoryTool } from "../src/anthropic.js";
import { client, messagesStandIn, newPlace, people } from "./support.js";

async function backend(kind: "dm" | "private" = "private") {
  const [mona] = people();
  const place = kind === "dm" ? await newPlace("dm", [mona]) : await newPlace("private", people());
  return { tool: new ArchivistMemoryBackend({ client: client(), place }), place };
}

async function live(place: Place, ref: string): Promise<Memory[]> {
  const rows: Memory[] = [];
  for await (const row of client().list({ place, source_ref: ref, state: "live" })) rows.push(row);
  return rows;
}

async function refused(tool: ArchivistMemoryBackend, command: MemoryCommand, words: RegExp): Promise<void> {
  await assert.rejects(tool.execute(command), (error: unknown) => {
    assert.ok(error instanceof MemoryToolError);
    assert.match(error.message, words);
    return true;
  });
}

test("create, view, str_replace, insert, rename and delete map to memories of the place", async () => {
  const { tool, place } = await backend();
  const ref = `memtool/${place.channel}/channel/workspace/standup.md`;
  const path = "/memories/channel/workspace/standup.md";
  assert.match(
    await tool.execute({ command: "create", path, file_text: "Standup at 9\nIn room 2" }),
    /^File created successfully at/,
  );
  const [row] = await live(place, ref);
  assert.deepEqual(
    [row!.scope, row!.scope_ref, row!.subject_type, row!.body],
    ["channel", place.channel, "workspace", "Standup at 9\nIn room 2"],
  );

  const listing = await tool.execute({ command: "view", path: "/memories/channel" });
  assert.ok(listing.includes(path) && listing.includes("about the workspace"), listing);
  const shown = await tool.execute({ command: "view", path });
  assert.ok(shown.startsWith(`File ${path}:\n<memory>\nFacts remembered`) && shown.endsWith("\n</memory>"), shown);
  assert.ok(shown.includes("     1\tStandup at 9\n     2\tIn room 2") && shown.includes(`memory ${row!.id}`));
  const second = await tool.execute({ command: "view", path, view_range: [2, -1] });
  assert.ok(second.includes("     2\tIn room 2") && !second.includes("     1\t"));
  const root = await tool.execute({ command: "view", path: "/memories" });
  assert.equal(root.split("\n").filter((line) => line.startsWith("- /memories/")).length, 3);
  assert.ok(
    root.includes("/memories/channel/ (1 files)") && root.includes("/memories/workspace/ (0 files, read-only here)"),
  );

  await tool.execute({ command: "str_replace", path, old_str: "at 9", new_str: "at 10" });
  await tool.execute({ command: "insert", path, insert_line: 1, insert_text: "Bring coffee\n" });
  const [edited] = await live(place, ref);
  assert.equal(edited!.body, "Standup at 10\nBring coffee\nIn room 2");
  const history = [];
  for await (const version of client().list({ place, source_ref: ref })) history.push(version);
  assert.equal(history.length, 3); // every version kept

  await tool.execute({ command: "rename", old_path: path, new_path: "/memories/channel/workspace/daily.md" });
  assert.ok((await tool.execute({ command: "view", path: "/memories/channel/workspace" })).includes("daily.md"));
  assert.match(await tool.execute({ command: "delete", path: "/memories/channel/workspace/daily.md" }), /^Deleted /);
  assert.equal(
    await tool.execute({ command: "view", path: "/memories/channel" }),
    "Directory /memories/channel is empty.",
  );
});

test("a write it cannot attribute is refused, naming subject_type, and nothing is written", async () => {
  const { tool, place } = await backend();
  await refused(
    tool,
    { command: "create", path: "/memories/channel/dog.md", file_text: "Mona's dog is called Rex" },
    /^subject_type: say whom this file is about with its folder: \/memories\/channel\/workspace\/dog\.md for an operational note, /,
  );
  await refused(
    tool,
    { command: "create", path: "/memories/person/dog.md", file_text: "Rex" },
    /person file names its person/,
  );
  const written = [];
  for await (const row of client().list({ place })) written.push(row);
  assert.deepEqual(written, []);
  // The positive control: the same facts with their subject in the path are kept, about whom the path says.
  const [mona] = people();
  await tool.execute({
    command: "create",
    path: `/memories/person/${mona}/dog.md`,
    file_text: "Mona's dog is called Rex",
  });
  await tool.execute({
    command: "create",
    path: "/memories/channel/candidate:cand-3/lang.md",
    file_text: "Speaks Dutch",
  });
  // A person's memory is recallable only in a DM with that person: read it from one.
  const [dog] = await live(await newPlace("dm", [mona!]), `memtool/${place.channel}/person/${mona}/dog.md`);
  const [dutch] = await live(place, `memtool/${place.channel}/channel/candidate:cand-3/lang.md`);
  assert.deepEqual([dog!.scope, dog!.subject_type, dog!.scope_label], ["person", "user", mona]);
  assert.deepEqual([dutch!.scope, dutch!.subject_type, dutch!.subject_id], ["channel", "candidate", "cand-3"]);
});

test("what cannot map is refused with a message the model can act on", async () => {
  const { tool } = await backend();
  await refused(
    tool,
    { command: "create", path: "/memories/channel/workspace/long.md", file_text: "x".repeat(2001) },
    /Split it into several files/,
  );
  await refused(
    tool,
    { command: "create", path: "/memories/workspace/all.md", file_text: "Everyone" },
    /kept in \/memories\/channel/,
  );
  await tool.execute({ command: "create", path: "/memories/channel/workspace/a.md", file_text: "A fact" });
  await refused(
    tool,
    { command: "rename", old_path: "/memories/channel/workspace/a.md", new_path: "/memories/person/a.md" },
    /scope cannot change/,
  );
  await refused(
    tool,
    { command: "rename", old_path: "/memories/channel/workspace/a.md", new_path: "/memories/channel/user:mona/a.md" },
    /subject cannot change/,
  );
  await refused(
    tool,
    { command: "view", path: "/etc/passwd" },
    /^Paths start with \/memories, e\.g\. \/memories\/channel\/notes\.md; got '\/etc\/passwd'\.$/,
  );
  await refused(
    tool,
    { command: "str_replace", path: "/memories/channel/workspace/a.md", old_str: "nothing", new_str: "x" },
    /not found/,
  );
  await refused(tool, { command: "delete", path: "/memories/channel/missing.md" }, /no file/);
});

test("an API refusal reaches the model in the API's words, its typed error kept as the cause", async () => {
  const { tool } = await backend();
  // A subject the organisation does not know: the path attributes the file, and the API refuses the person.
  await assert.rejects(
    tool.execute({ command: "create", path: "/memories/person/nobody-ai/x.md", file_text: "A fact" }),
    (error: unknown) => {
      assert.ok(error instanceof MemoryToolError && error.message.startsWith("Archivist refused: "), String(error));
      assert.ok(error.cause instanceof InvalidError && error.message.includes(error.cause.message));
      return true;
    },
  );
});

test("in a DM a person file is about the DM's person, and other scopes are refused", async () => {
  const { tool, place } = await backend("dm");
  await tool.execute({ command: "create", path: "/memories/person/name.md", file_text: "Prefers to be called Mo" });
  const [row] = await live(place, `memtool/${place.channel}/person/name.md`);
  assert.deepEqual([row!.scope, row!.subject_type, row!.scope_label], ["person", "user", people()[0]]);
  await refused(
    tool,
    { command: "create", path: "/memories/channel/workspace/x.md", file_text: "x" },
    /In this dm place memories are kept in \/memories\/person/,
  );
});

test("through @ai-sdk/anthropic a Claude model's memory commands run on Archivist and it reads the answers", async () => {
  const { place } = await backend();
  const model = await messagesStandIn([
    {
      tool: "memory",
      input: { command: "create", path: "/memories/channel/workspace/lunch.md", file_text: "Lunch at noon" },
    },
    { tool: "memory", input: { command: "create", path: "/memories/channel/lunch.md", file_text: "Lunch at noon" } },
    { text: "Saved." },
  ]);
  try {
    const anthropic = createAnthropic({ baseURL: `${model.url}/v1`, apiKey: "stand-in" });
    const result = await generateText({
      model: anthropic("claude-sonnet-4-5"),
      tools: { memory: archivistMemoryTool({ client: client(), place }) },
      stopWhen: stepCountIs(4),
      prompt: "Remember that lunch is at noon.",
    });
    assert.equal(result.text, "Saved.");
    const sent = JSON.stringify(model.received[0]!.body["tools"]);
    assert.ok(sent.includes("memory_20250818"), sent);
    const results = (index: number) => JSON.stringify(model.received[index]!.body["messages"]);
    assert.ok(results(1).includes("File created successfully at /memories/channel/workspace/lunch.md"));
    assert.ok(results(2).includes("subject_type: say whom this file is about"), results(2));
    assert.equal((await live(place, `memtool/${place.channel}/channel/workspace/lunch.md`))[0]!.body, "Lunch at noon");
  } finally {
    await model.close();
  }
});
