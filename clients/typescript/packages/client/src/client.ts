/**
 * `ArchivistClient`: every operation of the agent-turn API as a method, typed from the committed schema.
 * Path parameters come first, then the request's fields as one object (the API's names), then per-call options.
 */
import { type Call, type QueryValue, send, type TransportSettings } from "./transport.js";
import type * as t from "./types.js";

const BATCH_MAX_ITEMS = 100;

export interface ClientOptions {
  /** The server, e.g. http://127.0.0.1:8000; ARCHIVIST_URL when not given. */
  url?: string;
  /** An agent's token; ARCHIVIST_TOKEN when not given. */
  token?: string;
  /** The place a call serves when it names none (the Python client's `place=`). */
  place?: t.Place;
  /** How many times a call is tried again after a 429, a 503 or no answer (default 2). */
  retries?: number;
  /** The longest wait, in seconds, before a try again; a longer Retry-After ends the call with its error (30). */
  maxRetryWait?: number;
  /** Milliseconds one try may take (30000). */
  timeout?: number;
  /** The fetch to send with (the global one by default). */
  fetch?: typeof fetch;
}

export interface CallOptions {
  /** Aborts the call, its waits between tries included. */
  signal?: AbortSignal;
}

export interface WriteOptions extends CallOptions {
  /** The write's Idempotency-Key (a fresh UUID when not given); the same key is sent on every try. */
  idempotencyKey?: string;
}

function environment(name: string): string | undefined {
  const env = (globalThis as { process?: { env?: Record<string, string | undefined> } }).process?.env;
  return env?.[name] || undefined;
}

function segment(value: string | number): string {
  return encodeURIComponent(String(value));
}

function cursorOf(next: string | null | undefined): string | undefined {
  if (!next) return undefined;
  return new URL(next, "http://archivist.invalid").searchParams.get("cursor") ?? undefined;
}

function mergeBatches(batches: t.Batch[]): t.Batch {
  const items: t.Batch["items"] = [];
  for (const batch of batches) {
    const offset = items.length;
    items.push(...batch.items.map((item) => ({ ...item, index: item.index + offset })));
  }
  const sum = (key: "created" | "duplicates" | "refused") => batches.reduce((total, batch) => total + batch[key], 0);
  return { created: sum("created"), duplicates: sum("duplicates"), refused: sum("refused"), items };
}

export class ArchivistClient {
  /** The server's address, without a trailing slash. */
  readonly url: string;
  /** The default place, if the client was given one. */
  readonly place: t.Place | undefined;
  readonly #settings: TransportSettings;

  constructor(options: ClientOptions = {}) {
    const url = options.url ?? environment("ARCHIVIST_URL");
    const token = options.token ?? environment("ARCHIVIST_TOKEN");
    if (!url) throw new TypeError("No Archivist URL: pass { url } or set ARCHIVIST_URL.");
    if (!token) throw new TypeError("No Archivist token: pass { token } or set ARCHIVIST_TOKEN.");
    this.url = url.replace(/\/+$/, "");
    this.place = options.place;
    this.#settings = {
      api: `${this.url}/api/v1/`,
      headers: { Authorization: `Bearer ${token}`, Accept: "application/json" },
      retries: options.retries ?? 2,
      maxRetryWait: options.maxRetryWait ?? 30,
      timeout: options.timeout ?? 30_000,
      fetch: options.fetch ?? globalThis.fetch.bind(globalThis),
    };
  }

  #send<T>(call: Call): Promise<T> {
    return send(this.#settings, call) as Promise<T>;
  }

  #write<T>(method: Call["method"], path: string, body: unknown, options: WriteOptions = {}): Promise<T> {
    const { idempotencyKey, signal } = options;
    return this.#send<T>({ method, path, body, write: true, idempotencyKey, signal });
  }

  #place(place: t.Place | undefined): t.Place {
    const resolved = place ?? this.place;
    if (!resolved) throw new TypeError("This call needs a place: pass { place } or give the client a default place.");
    return resolved;
  }

  /** `input` with the place it names, else the client's default, else none. */
  #withPlace<T extends { place?: t.Place }>(input: T): T {
    const place = input.place ?? this.place;
    return place ? { ...input, place } : input;
  }

  /** The `place` query parameter of an agent's read: the channel of the place it serves. */
  #serving(place: t.Place | undefined): { place: string } {
    return { place: this.#place(place).channel };
  }

  async *#pages<Row>(path: string, query: Record<string, QueryValue>, signal?: AbortSignal): AsyncGenerator<Row> {
    let cursor: string | undefined;
    do {
      const page = await this.#send<Row[] | { results: Row[]; next?: string | null }>({
        method: "GET",
        path,
        query: { ...query, cursor },
        signal,
      });
      if (Array.isArray(page)) {
        yield* page; // an unpaginated list (the places one may use)
        return;
      }
      yield* page.results;
      cursor = cursorOf(page.next);
    } while (cursor !== undefined);
  }

  // --- memories --------------------------------------------------------------------------------

  /** Remember a fact said in a place; the narrowest scope the place allows is used (`scope_reason` says). */
  remember(input: t.RememberInput, options?: WriteOptions): Promise<t.Remembered> {
    return this.#write("POST", "memories", { ...input, place: this.#place(input.place) }, options);
  }

  /** Remember many facts, 100 per call; each item is answered on its own and has its own idempotency key. */
  async rememberMany(
    items: Iterable<t.BatchItemInput>,
    options: CallOptions & { place?: t.Place } = {},
  ): Promise<t.Batch> {
    const prepared = Array.from(items, (item) => ({
      ...item,
      place: this.#place(item.place ?? options.place),
      idempotency_key: item.idempotency_key ?? crypto.randomUUID(),
    }));
    const batches: t.Batch[] = [];
    for (let start = 0; start < prepared.length; start += BATCH_MAX_ITEMS) {
      const chunk = { items: prepared.slice(start, start + BATCH_MAX_ITEMS) };
      batches.push(await this.#write<t.Batch>("POST", "memories/batch", chunk, { signal: options.signal }));
    }
    return mergeBatches(batches);
  }

  /** A memory with its provenance, versions and injections, as seen from the place served; a forgotten one
   * throws `ForgottenError` (with its receipt). */
  get(memoryId: string, input: { place?: t.Place } = {}, options: CallOptions = {}): Promise<t.MemoryDetail> {
    const path = `memories/${segment(memoryId)}`;
    return this.#send({ method: "GET", path, query: this.#serving(input.place), signal: options.signal });
  }

  /** Correct a memory: a new version supersedes it (the old one stays in the chain). */
  correct(memoryId: string, input: t.CorrectInput, options?: WriteOptions): Promise<t.Memory> {
    return this.#write("POST", `memories/${segment(memoryId)}/supersede`, this.#withPlace(input), options);
  }

  /** Pin a memory: recalled and rendered before the others. */
  pin(memoryId: string, input: t.PinInput = {}, options?: WriteOptions): Promise<t.Memory> {
    return this.#write("POST", `memories/${segment(memoryId)}/pin`, this.#withPlace(input), options);
  }

  unpin(memoryId: string, input: t.PinInput = {}, options?: WriteOptions): Promise<t.Memory> {
    return this.#write("POST", `memories/${segment(memoryId)}/unpin`, this.#withPlace(input), options);
  }

  /** Forget a memory; the answer is its receipt (who, when, why; no body). */
  forget(memoryId: string, input: t.ForgetInput = {}, options?: WriteOptions): Promise<t.Memory> {
    const body = this.#withPlace({ reason: "", ...input });
    return this.#write("DELETE", `memories/${segment(memoryId)}`, body, options);
  }

  /** Every memory recallable in the place served, newest first, following the cursors. */
  list(query: t.ListQuery = {}, options: CallOptions = {}): AsyncGenerator<t.Memory> {
    const { place, ...filters } = query;
    return this.#pages("memories", { ...filters, ...this.#serving(place) }, options.signal);
  }

  // --- turns -----------------------------------------------------------------------------------

  /** The facts most relevant to a question, among those recallable in the place. */
  recall(input: t.RecallInput, options: CallOptions = {}): Promise<t.Recalled> {
    const body = { ...input, place: this.#place(input.place) };
    return this.#send({ method: "POST", path: "recall", body, signal: options.signal });
  }

  /** The fenced memory block for one turn; the injection is recorded under `turn_id`. */
  render(input: t.RenderInput, options?: WriteOptions): Promise<t.Rendered> {
    return this.#write("POST", "render", { ...input, place: this.#place(input.place) }, options);
  }

  /** The record of what one turn's block injected. */
  injection(turnId: string, options: CallOptions = {}): Promise<t.Injection> {
    return this.#send({ method: "GET", path: `injections/${segment(turnId)}`, signal: options.signal });
  }

  /** Compose a turn's block again from its record (erased facts are named, not shown); writes nothing. */
  replay(turnId: string, options: CallOptions = {}): Promise<t.Replay> {
    return this.#send({ method: "POST", path: `injections/${segment(turnId)}/replay`, body: {}, signal: options.signal });
  }

  /** Post what happened in a thread (at most 100 events); an event without a place takes the default. */
  ingestEvents(threadId: string, input: t.IngestInput, options?: WriteOptions): Promise<t.Ingested> {
    const events = input.events.map((event) => ({ ...event, place: this.#place(event.place) }));
    return this.#write("POST", `threads/${segment(threadId)}/events`, { ...input, events }, options);
  }

  /** A thread's consolidation state and the memories learned from it. */
  thread(threadId: string, options: CallOptions = {}): Promise<t.Thread> {
    return this.#send({ method: "GET", path: `threads/${segment(threadId)}`, signal: options.signal });
  }

  // --- subjects and claims ---------------------------------------------------------------------

  /** Everything held about a subject, oldest first, receipts included. */
  subjectExport(subjectType: t.SubjectType, subjectId: string, options: CallOptions = {}): Promise<t.SubjectExport> {
    const path = `subjects/${segment(subjectType)}/${segment(subjectId)}/memories`;
    return this.#send({ method: "GET", path, signal: options.signal });
  }

  /** Erase everything held about a subject; one receipt per row stays. */
  subjectErase(
    subjectType: t.SubjectType,
    subjectId: string,
    input: t.SubjectEraseInput = {},
    options?: WriteOptions,
  ): Promise<t.SubjectErase> {
    const path = `subjects/${segment(subjectType)}/${segment(subjectId)}/erase`;
    return this.#write("POST", path, { reason: "", ...input }, options);
  }

  /** Submit a system claim for stewards to decide. */
  submitClaim(input: t.ClaimInput, options?: WriteOptions): Promise<t.Claim> {
    return this.#write("POST", "system-claims", input, options);
  }

  claim(claimId: string, options: CallOptions = {}): Promise<t.Claim> {
    return this.#send({ method: "GET", path: `system-claims/${segment(claimId)}`, signal: options.signal });
  }

  // --- the directory and places ----------------------------------------------------------------

  /** Create or update a directory person by handle. */
  putPerson(handle: string, input: t.PersonInput = {}, options?: WriteOptions): Promise<t.Person> {
    return this.#write("PUT", `people/${segment(handle)}`, input, options);
  }

  /** Create or update a place's record: its kind and its members (handles or usernames). */
  putPlace(channel: string, input: t.PlaceInput, options?: WriteOptions): Promise<t.PlaceRecord> {
    return this.#write("PUT", `places/${segment(channel)}`, input, options);
  }

  /** The organisation's people, following the cursors. */
  people(query: t.PageQuery = {}, options: CallOptions = {}): AsyncGenerator<t.Person> {
    return this.#pages("people", { ...query }, options.signal);
  }

  /** The places the caller may use. */
  places(options: CallOptions = {}): AsyncGenerator<t.PlaceRecord> {
    return this.#pages("places", {}, options.signal);
  }
}
