/** Archivist for LangGraph.js: `ArchivistStore`, a `BaseStore` whose namespaces map to places, scopes and subjects. */

export { ArchivistStore, type ArchivistPutOperation, type ArchivistStoreOptions, type PlaceOption } from "./store.js";
export { meaningOf, type NamespaceFields, type NamespaceMeaning } from "./namespaces.js";
export { parseSourceRef, sourceRef, SOURCE_REF_MAX_CHARS } from "./sourceRef.js";
export type { ItemValue } from "./values.js";
