// Memories as a model may be shown them, built the way the Python client's archivist_client/text.py builds
// them from the same rules (./rules.ts): one line per fact saying whom it is about and where it came from,
// the memory's id (and a state other than live) after the date, so a model can name the memory it means.

import {
  FACT_CLAMP,
  factLine as ruleLine,
  fencedLines,
  label as ruleLabel,
  sourceWords,
  type LabelParts,
} from "./rules.js";

/** A memory as the API answers it (remember, recall, list, correct, forget): only the fields a line reads. */
export type MemoryRow = object;

type Fields = Record<string, unknown>;

function get(row: unknown, name: string, otherwise: unknown = ""): unknown {
  if (row === null || typeof row !== "object") return otherwise;
  return name in row ? (row as Fields)[name] : otherwise;
}

const text = (value: unknown): string => (value === null || value === undefined ? "" : String(value));

const ISO = /^(\d{4})-(\d{2})-(\d{2})(?:[T ](\d{2}):(\d{2})(?::(\d{2})(?:\.(\d{1,6}))?)?)?(Z|[+-]\d{2}:?\d{2})?$/;

/** The ISO date of a time (in UTC, as render dates a fact), or the first ten characters of its text. */
export function isoDate(value: unknown): string {
  if (value instanceof Date) return value.toISOString().slice(0, 10);
  if (typeof value !== "string") return Array.from(text(value)).slice(0, 10).join("");
  const found = ISO.exec(value);
  if (!found) return Array.from(value).slice(0, 10).join("");
  const [, year, month, day, hour, minute, second, , zone] = found;
  if (!zone || hour === undefined) return `${year}-${month}-${day}`;
  const offset = zone === "Z" ? "Z" : zone.length === 5 ? `${zone.slice(0, 3)}:${zone.slice(3)}` : zone;
  const at = new Date(`${year}-${month}-${day}T${hour}:${minute}:${second ?? "00"}${offset}`);
  return Number.isNaN(at.getTime()) ? value.slice(0, 10) : at.toISOString().slice(0, 10);
}

/** [type, label] of whom the row is about: recall names it in `subject`; a listed memory by its id. */
function subject(row: unknown): [string, string] {
  const named = get(row, "subject", null);
  if (named !== null && named !== undefined) return [text(get(named, "type", "workspace")), text(get(named, "label"))];
  const subjectType = text(get(row, "subject_type", "workspace")) || "workspace";
  const subjectId = text(get(row, "subject_id"));
  if (subjectType !== "user") return [subjectType, subjectId];
  // A listed memory names a person by account id only: the scope's own person is named by the scope's label.
  const isScopePerson = get(row, "scope") === "person" && subjectId === get(row, "scope_ref", null);
  return [subjectType, isScopePerson ? text(get(row, "scope_label")) : ""];
}

function labelled(row: unknown, withId: boolean): LabelParts {
  const source = get(row, "source", null) ?? {};
  const [subjectType, subjectLabel] = subject(row);
  const rank = get(row, "rank", null);
  const state = text(get(row, "state", "live")) || "live";
  const extra = withId ? [`memory ${text(get(row, "id"))}`] : [];
  if (state !== "live") extra.push(state);
  const newer = rank !== null && rank !== undefined ? get(rank, "newer", null) : null;
  // Recall put a newer result on the same matter above it: say so, so the older is read as history.
  if (newer) extra.push(withId ? `newer on this: memory ${text(newer)}` : "a newer memory on this");
  return {
    scope: text(get(row, "scope")),
    scopeLabel: text(get(row, "scope_label")),
    subjectType,
    subjectLabel,
    author: text(get(row, "author")),
    source: sourceWords(text(get(source, "kind")), text(get(source, "label")), text(get(source, "ref"))),
    dated: isoDate(get(row, "occurred_at", null) || get(row, "created_at", null)),
    pinned: Boolean(get(row, "pinned", false) || (rank !== null && rank !== undefined && get(rank, "pinned", false))),
    extra,
  };
}

/** `scope · about whom · who · source · date · memory id`, each part escaped, as render labels a line. */
export function label(row: MemoryRow, { withId = true }: { withId?: boolean } = {}): string {
  return ruleLabel(labelled(row, withId));
}

/** `- [label] text`: render's line for the row (with the memory's id unless `withId` is false). */
export function factLine(
  row: MemoryRow,
  { withId = true, limit = FACT_CLAMP }: { withId?: boolean; limit?: number } = {},
) {
  return ruleLine(text(get(row, "body")), labelled(row, withId), limit);
}

/** The rows as one fenced block of labelled lines after render's preamble, or `empty` (outside any fence). */
export function fenced(rows: Iterable<MemoryRow>, { empty = "No memories." }: { empty?: string } = {}): string {
  return fencedLines(Array.from(rows, (row) => factLine(row))) || empty;
}
