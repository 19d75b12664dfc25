/**
 * What a namespace means in Archivist: the channel it names, and the scope, person or subject it asks for.
 *
 * | namespace | kept in (scope) | about (subject) |
 * | --- | --- | --- |
 * | `["memories", CHANNEL]` | the narrowest scope `CHANNEL` allows | a DM's person; elsewhere the server refuses |
 * | `["memories", CHANNEL, SCOPE]` | `workspace`, `channel` or `person`, as asked | as above |
 * | `["memories", CHANNEL, "person", HANDLE]` | `HANDLE`'s person scope (`only_for`) | `user` `HANDLE` |
 * | `["subjects", CHANNEL, "user" or "candidate", ID]` | the narrowest scope `CHANNEL` allows | that subject |
 * | `["subjects", CHANNEL, "workspace"]` | the narrowest scope `CHANNEL` allows | nobody: an operational fact |
 *
 * The same mapping as the Python store (`archivist_langgraph/store.py`): the store never chooses whom a fact
 * is about, so outside a DM the first two rows are refused by the server, naming `subject_type`.
 */

import { InvalidNamespaceError, type MatchCondition } from "@langchain/langgraph-checkpoint";

export const SCOPES = ["workspace", "channel", "person"] as const;
export const SUBJECT_TYPES = ["candidate", "user"] as const;

/** What a write in the namespace says beside its place (the API's field names). */
export interface NamespaceFields {
  scope?: (typeof SCOPES)[number];
  only_for?: string;
  subject_type?: (typeof SUBJECT_TYPES)[number] | "workspace";
  subject_id?: string;
}

export interface NamespaceMeaning {
  channel: string;
  fields: NamespaceFields;
}

const USAGE =
  "Namespaces are ['memories', CHANNEL], ['memories', CHANNEL, SCOPE], ['memories', CHANNEL, 'person', HANDLE], " +
  "['subjects', CHANNEL, TYPE, ID] or ['subjects', CHANNEL, 'workspace'].";

function mapsToNothing(namespace: readonly string[]): InvalidNamespaceError {
  return new InvalidNamespaceError(`${JSON.stringify(namespace)} maps to nothing in Archivist. ${USAGE}`);
}

function memoriesMeaning(namespace: readonly string[], channel: string): NamespaceMeaning {
  const [, , scope, handle] = namespace;
  if (scope === undefined) {
    return { channel, fields: {} };
  }
  const known = (SCOPES as readonly string[]).includes(scope);
  if (!known || namespace.length > 4 || (handle !== undefined && scope !== "person")) {
    throw mapsToNothing(namespace);
  }
  if (handle !== undefined) {
    return { channel, fields: { scope: "person", only_for: handle } };
  }
  return { channel, fields: { scope: scope as NamespaceFields["scope"] } };
}

function subjectsMeaning(namespace: readonly string[], channel: string, prefix: boolean): NamespaceMeaning {
  const [, , type, id] = namespace;
  if (type === "workspace") {
    if (namespace.length !== 3) {
      throw mapsToNothing(namespace);
    }
    return { channel, fields: { subject_type: "workspace" } };
  }
  // A search may name a prefix of a subject's namespace (all of a channel's subjects, or all its candidates).
  if (namespace.length > 4 || (namespace.length !== 4 && !prefix)) {
    throw mapsToNothing(namespace);
  }
  if (type !== undefined && !(SUBJECT_TYPES as readonly string[]).includes(type)) {
    throw new InvalidNamespaceError(`A subject is a candidate, a user or the workspace, not ${JSON.stringify(type)}.`);
  }
  if (id === undefined) {
    return { channel, fields: {} };
  }
  return { channel, fields: { subject_type: type as NamespaceFields["subject_type"], subject_id: id } };
}

/** The namespace's channel and fields; `prefix` allows the shorter subject namespaces a search may name. */
export function meaningOf(namespace: readonly string[], { prefix = false } = {}): NamespaceMeaning {
  const [root, channel] = namespace;
  if (channel === undefined || (root !== "memories" && root !== "subjects")) {
    throw mapsToNothing(namespace);
  }
  return root === "memories" ? memoriesMeaning(namespace, channel) : subjectsMeaning(namespace, channel, prefix);
}

/** Whether `namespace` begins (`prefix`) or ends (`suffix`) with the condition's labels, `*` matching any. */
export function matchesCondition(namespace: readonly string[], condition: MatchCondition): boolean {
  const { path, matchType } = condition;
  if (path.length > namespace.length) {
    return false;
  }
  const start = matchType === "prefix" ? 0 : namespace.length - path.length;
  return path.every((want, index) => want === "*" || want === namespace[start + index]);
}

/** Tuple order, label by label with a shorter namespace first, as Python sorts the namespaces it lists. */
export function compareNamespaces(a: readonly string[], b: readonly string[]): number {
  for (let index = 0; index < Math.min(a.length, b.length); index += 1) {
    const [left, right] = [a[index] as string, b[index] as string];
    if (left !== right) {
      return left < right ? -1 : 1;
    }
  }
  return a.length - b.length;
}

/** Whether `namespace` lies under `prefix` (or is it). */
export function isUnder(namespace: readonly string[], prefix: readonly string[]): boolean {
  return prefix.length <= namespace.length && prefix.every((label, index) => label === namespace[index]);
}
