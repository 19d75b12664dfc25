/** An error answer turned into its typed error: the class of its code, from the schema's `ErrorCode` enum. */
import { ArchivistError, ForgottenError } from "./errors.js";
import { ERROR_CLASSES, type ErrorCode } from "./generated/errors.js";

/** `Retry-After` as seconds: a number of seconds or an HTTP date; undefined when absent or unreadable. */
export function retryAfterSeconds(headers: Headers, now: number = Date.now()): number | undefined {
  const raw = headers.get("retry-after");
  if (raw === null || raw.trim() === "") return undefined;
  const seconds = Number(raw);
  if (Number.isFinite(seconds)) return Math.max(0, seconds);
  const date = Date.parse(raw);
  return Number.isNaN(date) ? undefined : Math.max(0, (date - now) / 1000);
}

function isErrorCode(code: unknown): code is ErrorCode {
  return typeof code === "string" && Object.hasOwn(ERROR_CLASSES, code);
}

/** The error for an answer of status 400 or more, its body already read (`text`). */
export function errorFor(response: Response, text: string): ArchivistError {
  let body: unknown = undefined;
  try {
    body = text ? JSON.parse(text) : undefined;
  } catch {
    body = undefined;
  }
  const retryAfter = retryAfterSeconds(response.headers);
  if (response.status === 410) {
    return new ForgottenError({ status: 410, detail: "This memory was forgotten.", body, retryAfter });
  }
  const shaped = body as { error?: unknown; detail?: unknown; fields?: unknown } | undefined;
  const detail =
    typeof shaped?.detail === "string" && shaped.detail
      ? shaped.detail
      : text.slice(0, 500) || `HTTP ${response.status} ${response.statusText}`;
  const fields = (shaped?.fields ?? {}) as Record<string, string[]>;
  const init = { status: response.status, detail, fields, retryAfter, body };
  if (isErrorCode(shaped?.error)) {
    return new ERROR_CLASSES[shaped.error]({ ...init, code: shaped.error });
  }
  return new ArchivistError({ ...init, code: typeof shaped?.error === "string" ? shaped.error : "error" });
}
