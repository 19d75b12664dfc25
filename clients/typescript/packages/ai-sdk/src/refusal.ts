// A refusal as a model reads it: the API's own words, folded and escaped like every line a model is handed,
// laid out as the MCP server's tool errors are (clients/mcp/archivist_mcp/results.py).

import type { ArchivistError } from "@archivist/client";

import { inline } from "./rules.js";

/** `Archivist refused this call (400 invalid): detail`, then `- field: messages` for each refused field. */
export function refusalText(error: ArchivistError): string {
  const lines = [`Archivist refused this call (${error.status || "no answer"} ${error.code}): ${inline(error.detail)}`];
  for (const [name, messages] of Object.entries(error.fields)) {
    lines.push(`- ${inline(name, 100)}: ${inline(messages.join(" "))}`);
  }
  return lines.join("\n");
}
