/**
 * A store value as an Archivist memory and back: its text is `content`, with the few fields a memory keeps,
 * and an item reads back as `{content, scope, tier, id}` (the Python store's item shape).
 */

export const EXTRA_FIELDS = ["tier", "pinned", "occurred_at", "source_label"] as const;
const VALUE_FIELDS = new Set<string>(["content", ...EXTRA_FIELDS]);

export type ExtraFields = Partial<Record<(typeof EXTRA_FIELDS)[number], unknown>>;

/** The fields of a value the memory does not keep, refused with their names before anything is sent. */
export function bodyOf(value: Record<string, unknown>): { body: string; extra: ExtraFields } {
  const unknown = Object.keys(value)
    .filter((name) => !VALUE_FIELDS.has(name))
    .sort();
  if (unknown.length > 0) {
    throw new TypeError(
      "Archivist stores a value's text in 'content' (and tier, pinned, occurred_at, source_label); " +
        `it does not keep ${unknown.join(", ")}.`,
    );
  }
  if (!("content" in value)) {
    throw new TypeError("A value needs its text in 'content'.");
  }
  const { content } = value;
  const body = typeof content === "string" ? content : sortedJson(content);
  const extra: ExtraFields = {};
  for (const name of EXTRA_FIELDS) {
    if (name in value) {
      extra[name] = value[name];
    }
  }
  return { body, extra };
}

/** JSON with object keys sorted and Python's separators, as the Python store writes structured content. */
export function sortedJson(content: unknown): string {
  if (Array.isArray(content)) {
    return `[${content.map(sortedJson).join(", ")}]`;
  }
  if (content !== null && typeof content === "object") {
    const entries = Object.keys(content)
      .sort()
      .map((name) => `${JSON.stringify(name)}: ${sortedJson((content as Record<string, unknown>)[name])}`);
    return `{${entries.join(", ")}}`;
  }
  return JSON.stringify(content) ?? "null";
}

/** What an item's value holds. */
export interface ItemValue {
  content: string;
  scope: string;
  tier: string;
  id: string;
}

/** The memory fields an item is made of (a listed memory and a recalled result both carry them). */
export interface MemoryLike {
  id: string;
  body: string;
  scope: string;
  tier: string;
  created_at: string;
}

export function valueOf(memory: MemoryLike): ItemValue {
  return { content: memory.body, scope: memory.scope, tier: memory.tier, id: String(memory.id) };
}

const OPERATORS = new Set(["$eq", "$ne", "$gt", "$gte", "$lt", "$lte", "$in", "$nin"]);

function isOperators(wanted: unknown): wanted is Record<string, unknown> {
  return (
    wanted !== null &&
    typeof wanted === "object" &&
    !Array.isArray(wanted) &&
    Object.keys(wanted).length > 0 &&
    Object.keys(wanted).every((name) => OPERATORS.has(name))
  );
}

function satisfies(have: unknown, operator: string, operand: unknown): boolean {
  switch (operator) {
    case "$eq":
      return have === operand;
    case "$ne":
      return have !== operand;
    case "$gt":
      return Number(have) > Number(operand);
    case "$gte":
      return Number(have) >= Number(operand);
    case "$lt":
      return Number(have) < Number(operand);
    case "$lte":
      return Number(have) <= Number(operand);
    case "$in":
      return Array.isArray(operand) && operand.includes(have);
    default: // $nin
      return !Array.isArray(operand) || !operand.includes(have);
  }
}

/**
 * Whether a value matches a search filter: each key equal to its wanted value, or passing its operators
 * (`$eq`, `$ne`, `$gt`, `$gte`, `$lt`, `$lte`, `$in`, `$nin`), as LangGraph's own stores read a filter.
 */
export function matchesFilter(value: Record<string, unknown>, filter: Record<string, unknown>): boolean {
  return Object.entries(filter).every(([name, wanted]) =>
    isOperators(wanted)
      ? Object.entries(wanted).every(([operator, operand]) => satisfies(value[name], operator, operand))
      : value[name] === wanted,
  );
}
