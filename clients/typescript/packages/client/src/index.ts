/** @archivist/client: Archivist's agent-turn API on fetch. */
export { ArchivistClient } from "./client.js";
export type { CallOptions, ClientOptions, WriteOptions } from "./client.js";
export { ArchivistError, ForgottenError, UnreachableError } from "./errors.js";
export type { ErrorInit } from "./errors.js";
export * from "./generated/errors.js";
export { IDEMPOTENCY_HEADER } from "./transport.js";
export type * from "./types.js";
