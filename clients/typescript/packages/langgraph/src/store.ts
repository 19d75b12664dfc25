/**
 * `ArchivistStore`: a LangGraph.js `BaseStore` whose items are Archivist memories, under Archivist's rules.
 *
 * The namespace says where a memory is kept and whom it is about (src/namespaces.ts); a key is a stable source
 * reference, so `put` of an existing key supersedes the live memory (its history kept) and `delete` forgets
 * it (a receipt stays); `search` recalls in the place with a query and lists the namespace's live items
 * without one; `listNamespaces` lists the places and the namespaces items were written to. The same mapping,
 * refusals and item shape as the Python store, so the two read each other's items.
 */

import {
  ArchivistClient,
  type CorrectInput,
  ForgottenError,
  NotFoundError,
  type Memory,
  type MemoryDetail,
  type Place,
  type RememberInput,
} from "@archivist/client";
import {
  BaseStore,
  InvalidNamespaceError,
  type GetOperation,
  type Item,
  type ListNamespacesOperation,
  type Operation,
  type OperationResults,
  type PutOperation,
  type SearchItem,
  type SearchOperation,
  validateNamespace,
} from "@langchain/langgraph-checkpoint";

import { compareNamespaces, isUnder, matchesCondition, meaningOf, type NamespaceMeaning } from "./namespaces.js";
import { parseSourceRef, SOURCE_REF_PREFIX, sourceRef, sourceRefStart } from "./sourceRef.js";
import { bodyOf, matchesFilter, valueOf, type MemoryLike } from "./values.js";

/** A place as the store is told it: its kind and people (the channel is the key it is given under). */
export type PlaceOption = Omit<Place, "channel">;

export interface ArchivistStoreOptions {
  /** The client to call through; else one made from `url` and `token` (or ARCHIVIST_URL, ARCHIVIST_TOKEN). */
  client?: ArchivistClient;
  url?: string;
  token?: string;
  /** Places by channel; a channel not given here is looked up in the server's directory (`GET /places`). */
  places?: Record<string, PlaceOption>;
}

/** A put with Archivist's extra: `ttl`, minutes until the memory expires. */
export interface ArchivistPutOperation extends PutOperation {
  ttl?: number | undefined;
}

const RECALL_LIMIT = 40;
const PAGE_SIZE = 200;
const PLACES_AT_ONCE = 4;
const DELETE_REASON = "deleted through the LangGraph store";
const UUID = /^[0-9a-f]{8}-?[0-9a-f]{4}-?[0-9a-f]{4}-?[0-9a-f]{4}-?[0-9a-f]{12}$/i;

function itemOf(memory: MemoryLike, namespace: string[], key: string): Item {
  const created = new Date(memory.created_at);
  return { value: valueOf(memory), key, namespace, createdAt: created, updatedAt: created };
}

function byNamespace(namespaces: string[][]): string[][] {
  const unique = new Map(namespaces.map((namespace) => [JSON.stringify(namespace), namespace]));
  return [...unique.values()].sort(compareNamespaces);
}

export class ArchivistStore extends BaseStore {
  readonly client: ArchivistClient;
  readonly places: ReadonlyMap<string, Place>;
  private directory: Map<string, Place> | undefined;

  constructor(options: ArchivistStoreOptions = {}) {
    super();
    this.client = options.client ?? new ArchivistClient({ url: options.url, token: options.token });
    this.places = new Map(
      Object.entries(options.places ?? {}).map(([channel, place]) => [
        channel,
        { channel, kind: place.kind, people: place.people ?? [] },
      ]),
    );
  }

  /** `put`, with `ttl` (minutes) becoming the memory's expiry; a null value deletes, as in a batch. */
  override async put(
    namespace: string[],
    key: string,
    value: Record<string, unknown> | null,
    index?: false | string[],
    options: { ttl?: number } = {},
  ): Promise<void> {
    validateNamespace(namespace); // LangGraph's own checks of a namespace written to
    const operation: ArchivistPutOperation = { namespace, key, value, index, ttl: options.ttl };
    await this.batch([operation]);
  }

  async batch<Op extends Operation[]>(operations: Op): Promise<OperationResults<Op>> {
    const results: unknown[] = [];
    // One at a time, in order: a put and a later get of the same key in one batch read as written.
    for (const operation of operations) {
      results.push(await this.one(operation));
    }
    return results as OperationResults<Op>;
  }

  private one(operation: Operation): Promise<unknown> {
    if ("value" in operation) return this.putOne(operation as ArchivistPutOperation);
    if ("key" in operation) return this.getOne(operation);
    if ("namespacePrefix" in operation) return this.searchOne(operation);
    if ("matchConditions" in operation || "maxDepth" in operation || "limit" in operation) {
      return this.listNamespacesOne(operation as ListNamespacesOperation);
    }
    return Promise.reject(new TypeError(`Unknown store operation ${JSON.stringify(operation)}.`));
  }

  // --- places -----------------------------------------------------------------------------------

  private async loadDirectory(): Promise<Map<string, Place>> {
    const directory = new Map<string, Place>();
    try {
      for await (const row of this.client.places()) {
        directory.set(row.channel, { channel: row.channel, kind: row.kind as Place["kind"], people: row.people });
      }
    } catch (error) {
      if (!(error instanceof NotFoundError)) throw error; // a server without the places directory
    }
    this.directory = directory;
    return directory;
  }

  /** The place a channel names: given to the store, else from the directory (read again on a miss). */
  async placeFor(channel: string): Promise<Place> {
    const found = this.places.get(channel) ?? this.directory?.get(channel) ?? (await this.loadDirectory()).get(channel);
    if (found !== undefined) return found;
    throw new InvalidNamespaceError(
      `The namespace names the place ${JSON.stringify(channel)}, which this store does not know: pass ` +
        `places: {${JSON.stringify(channel)}: {kind: "dm", people: [...]}} or record the place in Archivist.`,
    );
  }

  private async target(namespace: string[], prefix = false): Promise<NamespaceMeaning & { place: Place }> {
    const meaning = meaningOf(namespace, { prefix });
    return { ...meaning, place: await this.placeFor(meaning.channel) };
  }

  /** The live memory a key names, as seen from its namespace's place (an agent reads in a place). */
  private async live(ref: string, key: string, place: Place): Promise<Memory | MemoryDetail | null> {
    for await (const memory of this.client.list({ place, source_ref: ref, state: "live", page_size: 10 })) {
      if (memory.source.ref === ref) return memory;
    }
    if (!UUID.test(key)) return null;
    // A key that is a memory id (as search answers for memories written some other way) names that memory.
    try {
      const memory = await this.client.get(key, { place });
      return memory.state === "live" ? memory : null;
    } catch (error) {
      if (error instanceof NotFoundError || error instanceof ForgottenError) return null;
      throw error;
    }
  }

  // --- operations -------------------------------------------------------------------------------

  private async getOne(operation: GetOperation): Promise<Item | null> {
    const ref = sourceRef(operation.namespace, operation.key); // a key too long is refused before any call
    const { place } = await this.target(operation.namespace);
    const memory = await this.live(ref, operation.key, place);
    return memory === null ? null : itemOf(memory, operation.namespace, operation.key);
  }

  private async putOne(operation: ArchivistPutOperation): Promise<void> {
    const { namespace, key, value, ttl } = operation;
    // A key too long or a value Archivist cannot keep is refused before any call.
    const ref = sourceRef(namespace, key);
    const written = value === null ? null : bodyOf(value);
    const { place, fields } = await this.target(namespace);
    const existing = await this.live(ref, key, place);
    if (written === null) {
      if (existing !== null) await this.client.forget(existing.id, { reason: DELETE_REASON, place });
      return;
    }
    const { body, extra } = written;
    const expires_at = ttl === undefined ? undefined : new Date(Date.now() + ttl * 60_000).toISOString();
    if (existing !== null) {
      const { occurred_at: _occurred, ...kept } = extra; // a correction keeps when the fact happened
      // The new version keeps the key's source reference, so the key still names the live version.
      const source_ref = existing.source.ref || ref;
      const correction = { body, place, expires_at, source_ref, ...(kept as Partial<CorrectInput>) };
      await this.client.correct(existing.id, correction);
      return;
    }
    // Only what the namespace says of whom goes with the write: outside a DM the server refuses the rest.
    await this.client.remember({
      body,
      place,
      source_kind: "run",
      source_ref: ref,
      expires_at,
      ...fields,
      ...(extra as Partial<RememberInput>),
    });
  }

  private async searchOne(operation: SearchOperation): Promise<SearchItem[]> {
    const { namespacePrefix: prefix, query, filter } = operation;
    const [limit, offset] = [operation.limit ?? 10, operation.offset ?? 0];
    const { place } = await this.target(prefix, true);
    const found: SearchItem[] = [];
    if (query) {
      const asked = { question: query, place, limit: Math.min(limit + offset, RECALL_LIMIT) };
      const recalled = await this.client.recall(asked);
      for (const row of recalled.results) {
        const parsed = parseSourceRef(row.source.ref) ?? { namespace: prefix, key: String(row.id) };
        if (isUnder(parsed.namespace, prefix)) {
          found.push({ ...itemOf(row, parsed.namespace, parsed.key), score: row.rank.score ?? undefined });
        }
      }
    } else {
      const start = sourceRefStart(prefix); // narrows the listing; labels that merely begin alike are skipped below
      const listing = { place, state: "live", page_size: PAGE_SIZE, source_ref_prefix: start } as const;
      for await (const memory of this.client.list(listing)) {
        const parsed = parseSourceRef(memory.source.ref);
        if (parsed === null || !isUnder(parsed.namespace, prefix)) continue;
        found.push(itemOf(memory, parsed.namespace, parsed.key));
        if (found.length >= offset + limit && !filter) break;
      }
    }
    const kept = filter ? found.filter((item) => matchesFilter(item.value, filter)) : found;
    return kept.slice(offset, offset + limit);
  }

  private async listNamespacesOne(operation: ListNamespacesOperation): Promise<string[][]> {
    const conditions = operation.matchConditions ?? [];
    const channels = new Set(this.places.keys());
    for (const channel of (await this.loadDirectory()).keys()) channels.add(channel);
    // A prefix naming one channel needs only that place's items; an agent lists what it could recall place by place.
    const named = conditions.find((condition) => condition.matchType === "prefix")?.path[1];
    const scanned = [...channels].filter((channel) => named === undefined || named === "*" || named === channel);
    const namespaces: string[][] = [...channels].map((channel) => ["memories", channel]);
    // A few places at a time: the server answers 429 beyond an organisation's share of requests in flight.
    for (let start = 0; start < scanned.length; start += PLACES_AT_ONCE) {
      const listed = await Promise.all(scanned.slice(start, start + PLACES_AT_ONCE).map((c) => this.namespacesIn(c)));
      namespaces.push(...listed.flat());
    }
    const chosen = namespaces
      .filter((namespace) => conditions.every((condition) => matchesCondition(namespace, condition)))
      .map((namespace) => (operation.maxDepth === undefined ? namespace : namespace.slice(0, operation.maxDepth)));
    const offset = operation.offset ?? 0;
    return byNamespace(chosen).slice(offset, offset + (operation.limit ?? 100));
  }

  private async namespacesIn(channel: string): Promise<string[][]> {
    const place = await this.placeFor(channel);
    const namespaces: string[][] = [];
    const listing = { place, state: "live", page_size: PAGE_SIZE, source_ref_prefix: SOURCE_REF_PREFIX } as const;
    for await (const memory of this.client.list(listing)) {
      const parsed = parseSourceRef(memory.source.ref);
      if (parsed !== null) namespaces.push(parsed.namespace);
    }
    return namespaces;
  }
}
