// The block a tool hands a model is the Python client's, character for character: every rule and every line
// compared with what archivist_client made of the same input (fixtures/blocks.json, scripts/make_block_fixture.py).

import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { test } from "node:test";

import { clamp, escape, escapeMarkup, fold, inline, neutralise } from "../src/rules.js";
import { pyRepr, quoteSegment } from "../src/python.js";
import { factLine, fenced, label } from "../src/text.js";

interface RuleCase {
  text: string;
  neutralise: string;
  escape_markup: string;
  fold: string;
  escape: string;
  inline: string;
  inline_80: string;
  clamp_5: string;
  repr: string;
  quote: string;
}
interface RowCase {
  row: Record<string, unknown>;
  fact_line: string;
  fact_line_no_id_clamp_40: string;
  label: string;
}
const fixture = JSON.parse(readFileSync(new URL("../../test/fixtures/blocks.json", import.meta.url), "utf8")) as {
  rules: RuleCase[];
  rows: RowCase[];
  fenced: string;
  fenced_empty: string;
};

test("the fixture holds hostile text and both kinds of row", () => {
  // The positive control: the comparisons below cover marks, entities, clamps and both subject shapes.
  assert.ok(fixture.rules.length >= 200 && fixture.rows.length >= 40);
  assert.ok(fixture.rules.some((one) => one.neutralise.includes("[U+200B]")));
  assert.ok(fixture.rules.some((one) => one.escape.includes("&lt;/memory&gt;")));
  assert.ok(fixture.rows.some((one) => "subject" in one.row) && fixture.rows.some((one) => "subject_type" in one.row));
});

test("every text rule gives what the Python rules give", () => {
  for (const one of fixture.rules) {
    const input = JSON.stringify(one.text);
    assert.equal(neutralise(one.text), one.neutralise, `neutralise ${input}`);
    assert.equal(escapeMarkup(one.text), one.escape_markup, `escape_markup ${input}`);
    assert.equal(fold(one.text), one.fold, `fold ${input}`);
    assert.equal(escape(one.text), one.escape, `escape ${input}`);
    assert.equal(inline(one.text), one.inline, `inline ${input}`);
    assert.equal(inline(one.text, 80), one.inline_80, `inline 80 ${input}`);
    assert.equal(clamp(one.text, 5), one.clamp_5, `clamp ${input}`);
  }
});

test("every memory's line and label are the Python client's", () => {
  for (const one of fixture.rows) {
    const input = JSON.stringify(one.row).slice(0, 200);
    assert.equal(factLine(one.row), one.fact_line, `fact_line ${input}`);
    assert.equal(factLine(one.row, { withId: false, limit: 40 }), one.fact_line_no_id_clamp_40, `fact_line ${input}`);
    assert.equal(label(one.row), one.label, `label ${input}`);
  }
});

test("the fenced block, and the words for no memories, are the Python client's", () => {
  assert.equal(fenced(fixture.rows.slice(0, 5).map((one) => one.row)), fixture.fenced);
  assert.ok(fixture.fenced.startsWith("<memory>\nFacts remembered") && fixture.fenced.endsWith("\n</memory>"));
  assert.equal(fenced([], { empty: "Nothing recallable here matches." }), fixture.fenced_empty);
});

test("paths are quoted and spelled in messages as Python's quote and repr do", () => {
  for (const one of fixture.rules) {
    assert.equal(pyRepr(one.text), one.repr, `repr ${JSON.stringify(one.text)}`);
    assert.equal(quoteSegment(one.text), one.quote, `quote ${JSON.stringify(one.text)}`);
  }
});
