// @archivist/ai-sdk: Archivist for the Vercel AI SDK: tools, a memory middleware, and the memory tool's backend.

export { ArchivistMemoryBackend, MemoryToolError, type MemoryCommand } from "./memory-tool.js";
export { archivistMemory, questionOf, type ArchivistCallOptions, type MemoryMiddlewareOptions } from "./middleware.js";
export { refusalText } from "./refusal.js";
export { archivistTools, type ToolsOptions } from "./tools.js";
export { factLine, fenced, label, type MemoryRow } from "./text.js";
