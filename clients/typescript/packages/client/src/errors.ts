/**
 * The error family: `ArchivistError` carries what every API refusal says (status, code, detail, the refused
 * `fields`, `retryAfter`); src/generated/errors.ts adds one subclass per code of the schema's `ErrorCode` enum.
 */

/** What an error is made from: the answer's status and its body in the one error shape. */
export interface ErrorInit {
  status: number;
  code: string;
  detail: string;
  /** The refused fields as the API names them, each with its messages (`{text: ["This field may not be blank."]}`). */
  fields?: Record<string, string[]>;
  /** Seconds the server asked to wait (`Retry-After`), on a 429 or 503. */
  retryAfter?: number | undefined;
  /** The answer's body as it came. */
  body?: unknown;
  cause?: unknown;
}

/** Any error the API answered with, or a call that got no answer (`status` 0). */
export class ArchivistError extends Error {
  readonly status: number;
  readonly code: string;
  readonly detail: string;
  readonly fields: Record<string, string[]>;
  readonly retryAfter: number | undefined;
  readonly body: unknown;

  constructor(init: ErrorInit) {
    super(describe(init), init.cause === undefined ? undefined : { cause: init.cause });
    this.name = "ArchivistError";
    this.status = init.status;
    this.code = init.code;
    this.detail = init.detail;
    this.fields = init.fields ?? {};
    this.retryAfter = init.retryAfter;
    this.body = init.body;
  }
}

function describe(init: ErrorInit): string {
  const named = Object.entries(init.fields ?? {})
    .map(([name, messages]) => `${name}: ${messages.join(" ")}`)
    .join("; ");
  return named && !init.detail.includes(named) ? `${init.detail} (${named})` : init.detail;
}

/** No answer at all (the connection failed or timed out): nothing is known to have been written. */
export class UnreachableError extends ArchivistError {
  override readonly code = "unreachable";
  constructor(init: Omit<ErrorInit, "status" | "code">) {
    super({ ...init, status: 0, code: "unreachable" });
    this.name = "UnreachableError";
  }
}

/** 410 on reading a memory: it was forgotten; `receipt` says who erased it, when and why (no body). */
export class ForgottenError extends ArchivistError {
  override readonly code = "gone";
  readonly receipt: Record<string, unknown>;
  constructor(init: Omit<ErrorInit, "code">) {
    super({ ...init, code: "gone" });
    this.name = "ForgottenError";
    const body = init.body as { receipt?: Record<string, unknown> } | undefined;
    this.receipt = body?.receipt ?? {};
  }
}
