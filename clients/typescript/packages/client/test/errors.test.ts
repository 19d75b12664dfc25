import assert from "node:assert/strict";
import { createServer } from "node:net";
import { before, test } from "node:test";
import {
  ArchivistError,
  ERROR_CLASSES,
  ERROR_CODES,
  IDEMPOTENCY_HEADER,
  NotFoundError,
  ThrottledError,
  UnauthenticatedError,
  UnreachableError,
} from "../src/index.js";
import { client, DM, makePlaces, required } from "./live.js";

before(() => makePlaces());

/** Makes the real server answer this token 429 for about `seconds`. */
async function throttle(seconds: number): Promise<void> {
  const answer = await fetch(required("ARCHIVIST_TEST_THROTTLE_URL"), {
    method: "POST",
    body: JSON.stringify({ seconds }),
  });
  assert.equal(answer.status, 204);
}

interface Sent {
  method: string;
  key: string | null;
  status: number | undefined;
  at: number;
}

/** A fetch that sends with the real one and records each try: its method, idempotency key and answer. */
function recording(): { sent: Sent[]; fetch: typeof fetch } {
  const sent: Sent[] = [];
  const recorder: typeof fetch = async (input, init) => {
    const one: Sent = {
      method: init?.method ?? "GET",
      key: new Headers(init?.headers).get(IDEMPOTENCY_HEADER),
      status: undefined,
      at: performance.now(),
    };
    sent.push(one);
    const response = await fetch(input, init);
    one.status = response.status;
    return response;
  };
  return { sent, fetch: recorder };
}

/** A loopback port nothing listens on. */
async function closedPort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const port = (server.address() as { port: number }).port;
  await new Promise((resolve) => server.close(resolve));
  return port;
}

test("one error class per code of the schema's ErrorCode enum", () => {
  assert.ok(ERROR_CODES.includes("invalid") && ERROR_CODES.includes("throttled"));
  for (const code of ERROR_CODES) {
    const error = new ERROR_CLASSES[code]({ status: 400, code, detail: "x" });
    assert.ok(error instanceof ArchivistError);
    assert.equal(error.code, code);
  }
});

test("an unknown id is NotFoundError and a bad token UnauthenticatedError", async () => {
  await assert.rejects(client({ place: DM }).get(crypto.randomUUID()), NotFoundError);
  const stranger = client({ place: DM, token: "not-a-token" });
  await assert.rejects(stranger.recall({ question: "x" }), (error: unknown) => {
    assert.ok(error instanceof UnauthenticatedError);
    assert.equal(error.status, 401);
    return true;
  });
});

test("a 429 with no retries left is ThrottledError carrying the server's Retry-After", async () => {
  await throttle(1);
  const archivist = client({ place: DM, retries: 0 });
  const refused = await archivist.recall({ question: "x" }).catch((error: unknown) => error);
  assert.ok(refused instanceof ThrottledError, String(refused));
  assert.equal(refused.status, 429);
  assert.ok(refused.retryAfter !== undefined && refused.retryAfter > 0, `retryAfter ${refused.retryAfter}`);
  // A Retry-After longer than the client will wait ends the call at once, with the same error.
  const impatient = client({ place: DM, maxRetryWait: 0 });
  await assert.rejects(impatient.recall({ question: "x" }), ThrottledError);
});

test("a throttled write waits Retry-After and succeeds, sending the same Idempotency-Key again", async () => {
  await throttle(1);
  const { sent, fetch } = recording();
  const archivist = client({ place: DM, fetch });
  const fact = await archivist.remember({ body: "Likes tea" });
  assert.equal(fact.body, "Likes tea");
  assert.deepEqual(
    sent.map((one) => one.status),
    [429, 201],
  );
  assert.ok(sent[0]!.key && sent[0]!.key === sent[1]!.key, `keys ${sent.map((one) => one.key).join(", ")}`);
  assert.ok(sent[1]!.at - sent[0]!.at >= 900, `waited ${sent[1]!.at - sent[0]!.at} ms`);
});

test("a write given an idempotency key sends it, and sending it again answers the first write", async () => {
  const { sent, fetch } = recording();
  const archivist = client({ place: DM, fetch });
  const key = crypto.randomUUID();
  const first = await archivist.remember({ body: "Drinks oat milk" }, { idempotencyKey: key });
  const again = await archivist.remember({ body: "Drinks oat milk" }, { idempotencyKey: key });
  assert.equal(again.id, first.id);
  assert.deepEqual(
    sent.map((one) => one.key),
    [key, key],
  );
  await archivist.recall({ question: "milk" });
  assert.equal(sent[2]!.key, null); // a read carries no key
});

test("no answer at all is retried with the same key, then UnreachableError", async () => {
  const tries: (string | null)[] = [];
  const counting: typeof fetch = (input, init) => {
    tries.push(new Headers(init?.headers).get(IDEMPOTENCY_HEADER));
    return fetch(input, init);
  };
  const archivist = client({ url: `http://127.0.0.1:${await closedPort()}`, place: DM, retries: 1, fetch: counting });
  await assert.rejects(archivist.remember({ body: "x" }), (error: unknown) => {
    assert.ok(error instanceof UnreachableError);
    assert.equal(error.status, 0);
    return true;
  });
  assert.equal(tries.length, 2);
  assert.ok(tries[0] && tries[0] === tries[1]);
});

test("a try longer than the timeout is ended, and tried again (the same key) before UnreachableError", async () => {
  const tries: (string | null)[] = [];
  const slow: typeof fetch = (input, init) => {
    tries.push(new Headers(init?.headers).get(IDEMPOTENCY_HEADER));
    return new Promise((_, reject) => init?.signal?.addEventListener("abort", () => reject(init.signal?.reason)));
  };
  const archivist = client({ place: DM, timeout: 50, retries: 1, fetch: slow });
  await assert.rejects(archivist.remember({ body: "x" }), (error: unknown) => {
    assert.ok(error instanceof UnreachableError);
    assert.match(error.message, /No answer within 50 ms/);
    return true;
  });
  assert.equal(tries.length, 2);
  assert.ok(tries[0] && tries[0] === tries[1]);
});

test("an abort signal ends a call while it waits to try again", async () => {
  await throttle(1);
  const archivist = client({ place: DM });
  const controller = new AbortController();
  const started = performance.now();
  setTimeout(() => controller.abort(), 100);
  await assert.rejects(archivist.recall({ question: "x" }, { signal: controller.signal }), { name: "AbortError" });
  assert.ok(performance.now() - started < 800, `ended after ${performance.now() - started} ms`);
  await new Promise((resolve) => setTimeout(resolve, 1000)); // the token's throttle passes before the next file
});
