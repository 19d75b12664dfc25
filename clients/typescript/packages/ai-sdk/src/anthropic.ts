// The memory tool for `@ai-sdk/anthropic`: Anthropic's memory_20250818 with Archivist as its backend.

import { anthropic } from "@ai-sdk/anthropic";
import type { ArchivistClient, Place } from "@archivist/client";

import { ArchivistMemoryBackend } from "./memory-tool.js";

/** `tools: {memory: archivistMemoryTool({client, place})}` for a Claude model through `@ai-sdk/anthropic`. */
export function archivistMemoryTool(options: { client: ArchivistClient; place: Place }) {
  const backend = new ArchivistMemoryBackend(options);
  return anthropic.tools.memory_20250818({ execute: (command) => backend.execute(command) });
}
