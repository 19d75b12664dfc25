/**
 * The requests and answers of each operation, taken from the generated schema by operationId: a schema change
 * that renames an operation, a field or an answer fails the type check of whatever uses it.
 */
import type { components, operations } from "./generated/schema.js";

export type { components, operations, paths } from "./generated/schema.js";

type Schemas = components["schemas"];
type OperationId = keyof operations;
type Json<T> = T extends { content: { "application/json": infer Body } } ? Body : never;

/** The JSON body an operation takes. */
export type RequestBody<K extends OperationId> = operations[K] extends { requestBody?: infer Body }
  ? Json<NonNullable<Body>>
  : never;

/** The JSON an operation answers with on success (any 2xx). */
export type Answer<K extends OperationId> = {
  [S in keyof operations[K]["responses"]]: S extends 200 | 201 ? Json<operations[K]["responses"][S]> : never;
}[keyof operations[K]["responses"]];

/** An operation's query parameters. */
export type Query<K extends OperationId> = NonNullable<operations[K]["parameters"]["query"]>;

/** Where a turn happens: a channel, its kind and the people in it. */
export type Place = Schemas["PlaceRequest"];
export type Remembered = Answer<"memories_remember">;
export type Memory = Schemas["MemoryOutput"];
export type MemoryDetail = Answer<"memories_read">;
export type Batch = Answer<"memories_remember_batch">;
export type Recalled = Answer<"turns_recall">;
export type Rendered = Answer<"turns_render">;
export type Injection = Answer<"injections_read">;
export type Replay = Answer<"injections_replay">;
export type Ingested = Answer<"threads_ingest_events">;
export type Thread = Answer<"threads_read">;
export type SubjectExport = Answer<"subjects_export">;
export type SubjectErase = Answer<"subjects_erase">;
export type Claim = Answer<"system_claims_submit">;
export type Person = Answer<"people_put">;
export type PlaceRecord = Answer<"places_put">;
/** The subjects whose memories can be exported or erased. */
export type SubjectType = operations["subjects_export"]["parameters"]["path"]["subject_type"];

/** A request body with its place made optional: the client's default place fills it in. */
type PlaceOptional<T> = Omit<T, "place"> & { place?: Place };

export type RememberInput = PlaceOptional<RequestBody<"memories_remember">>;
/** A batch item is `remember`'s input (the schema leaves items open), with its own idempotency key. */
export type BatchItemInput = RememberInput & { idempotency_key?: string };
export type CorrectInput = PlaceOptional<RequestBody<"memories_correct">>;
export type PinInput = PlaceOptional<RequestBody<"memories_pin">>;
export type ForgetInput = PlaceOptional<RequestBody<"memories_forget">>;
export type RecallInput = PlaceOptional<RequestBody<"turns_recall">>;
export type RenderInput = PlaceOptional<RequestBody<"turns_render">>;
export type EventInput = PlaceOptional<RequestBody<"threads_ingest_events">["events"][number]>;
export type IngestInput = Omit<RequestBody<"threads_ingest_events">, "events"> & { events: EventInput[] };
export type SubjectEraseInput = RequestBody<"subjects_erase">;
export type ClaimInput = RequestBody<"system_claims_submit">;
export type PersonInput = RequestBody<"people_put">;
export type PlaceInput = RequestBody<"places_put">;
/** The memories listing's filters; `place` (the one served) defaults to the client's. */
export type ListQuery = Omit<Query<"memories_list">, "place" | "cursor"> & { place?: Place };
export type PageQuery = Omit<Query<"people_list">, "cursor">;
