/**
 * Sending one call: the same request, `Idempotency-Key` included, until its answer is final. A 429 or 503 is
 * tried again after the `Retry-After` the server sent, a call that got no answer after a short backoff; at most
 * `retries` times, and never waiting longer than `maxRetryWait` seconds at once (then the answer is the error).
 */
import { UnreachableError } from "./errors.js";
import { errorFor, retryAfterSeconds } from "./refusals.js";

export const IDEMPOTENCY_HEADER = "Idempotency-Key";
const RETRY_STATUSES = new Set([429, 503]);

export type QueryValue = string | number | boolean | null | undefined | readonly (string | number | boolean)[];

/** One API call, described: what to send, and whether it writes (then it carries an idempotency key). */
export interface Call {
  method: "GET" | "POST" | "PUT" | "DELETE";
  /** The path under /api/v1/, its segments already encoded. */
  path: string;
  body?: unknown;
  query?: Record<string, QueryValue>;
  write?: boolean;
  idempotencyKey?: string | undefined;
  signal?: AbortSignal | undefined;
}

export interface TransportSettings {
  api: string;
  headers: Record<string, string>;
  retries: number;
  maxRetryWait: number;
  timeout: number;
  fetch: typeof fetch;
}

function urlOf(api: string, call: Call): string {
  const search = new URLSearchParams();
  for (const [name, value] of Object.entries(call.query ?? {})) {
    if (value === undefined || value === null) continue;
    for (const one of Array.isArray(value) ? value : [value]) search.append(name, String(one));
  }
  const query = search.toString();
  return api + call.path + (query ? `?${query}` : "");
}

/** Waits `seconds`, or rejects as soon as `signal` aborts. */
function sleep(seconds: number, signal: AbortSignal | undefined): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal?.aborted) return reject(signal.reason);
    const timer = setTimeout(done, seconds * 1000);
    function done() {
      signal?.removeEventListener("abort", aborted);
      resolve();
    }
    function aborted() {
      clearTimeout(timer);
      reject(signal?.reason);
    }
    signal?.addEventListener("abort", aborted, { once: true });
  });
}

/** The request `call` makes, the same on every try. */
export function requestOf(settings: TransportSettings, call: Call): { url: string; init: RequestInit } {
  const headers: Record<string, string> = { ...settings.headers };
  if (call.body !== undefined) headers["Content-Type"] = "application/json";
  if (call.write) headers[IDEMPOTENCY_HEADER] = call.idempotencyKey ?? crypto.randomUUID();
  const init: RequestInit = { method: call.method, headers };
  if (call.body !== undefined) init.body = JSON.stringify(call.body);
  return { url: urlOf(settings.api, call), init };
}

/** An answer as it came: its status, headers and body, read whole within the try's time. */
interface Answered {
  response: Response;
  text: string;
}

/** One try: sent and read whole before `timeout` ms, or rejected (no answer, the timeout, or `signal`). */
async function attempt(settings: TransportSettings, url: string, init: RequestInit, signal?: AbortSignal) {
  const controller = new AbortController();
  const timer = setTimeout(
    () => controller.abort(new DOMException(`No answer within ${settings.timeout} ms.`, "TimeoutError")),
    settings.timeout,
  );
  const aborted = () => controller.abort(signal?.reason);
  if (signal?.aborted) aborted();
  signal?.addEventListener("abort", aborted, { once: true });
  try {
    const response = await settings.fetch(url, { ...init, signal: controller.signal });
    return { response, text: await response.text() } satisfies Answered;
  } finally {
    clearTimeout(timer);
    signal?.removeEventListener("abort", aborted);
  }
}

/** Seconds to wait before trying again after `response` (undefined: no answer came), or undefined to stop. */
function waitBefore(settings: TransportSettings, tried: number, response: Response | undefined): number | undefined {
  if (tried >= settings.retries) return undefined;
  let wait: number;
  if (response === undefined) {
    wait = 0.25 * 2 ** tried;
  } else {
    if (!RETRY_STATUSES.has(response.status)) return undefined;
    wait = retryAfterSeconds(response.headers) ?? 0.5 * 2 ** tried;
  }
  return wait <= settings.maxRetryWait ? wait : undefined;
}

function answerOf({ response, text }: Answered): unknown {
  if (response.status >= 400) throw errorFor(response, text);
  return text ? JSON.parse(text) : undefined;
}

/** Sends `call` until its answer is final, and answers its JSON (or throws its typed error). */
export async function send(settings: TransportSettings, call: Call): Promise<unknown> {
  const { url, init } = requestOf(settings, call);
  for (let tried = 0; ; tried++) {
    let answered: Answered | undefined;
    let failure: unknown;
    try {
      answered = await attempt(settings, url, init, call.signal);
    } catch (error) {
      if (call.signal?.aborted) throw call.signal.reason;
      failure = error;
    }
    const wait = waitBefore(settings, tried, answered?.response);
    if (wait === undefined) {
      if (answered === undefined) {
        throw new UnreachableError({ detail: `Archivist could not be reached: ${String(failure)}`, cause: failure });
      }
      return answerOf(answered);
    }
    await sleep(wait, call.signal);
  }
}
