// The tools an agent calls: remember, recall, correct and forget, each one API call in the place the tools
// serve. What a tool hands back is text the model reads: the facts as render's fenced, labelled block, or the
// API's refusal in its own words (returned, not thrown, so the model can act on it).

import { ArchivistError, type ArchivistClient, type Place } from "@archivist/client";
import { tool } from "ai";
import { z } from "zod";

import { refusalText } from "./refusal.js";
import { inline } from "./rules.js";
import { fenced, label } from "./text.js";

/** What the tools need: the client to call and the place every call is made in. */
export interface ToolsOptions {
  client: ArchivistClient;
  /** The place of the conversation: the model never chooses it. */
  place: Place;
}

/** The answer's text, or the refusal's when Archivist refused; any other error is thrown. */
async function answered(work: () => Promise<string>): Promise<string> {
  try {
    return await work();
  } catch (error) {
    if (error instanceof ArchivistError) return refusalText(error);
    throw error;
  }
}

const rememberInput = z.object({
  body: z.string().describe("The fact, at most 2,000 characters (refused, never cut)."),
  scope: z.enum(["workspace", "channel", "person"]).optional().describe("Asked-for scope."),
  only_for: z.string().optional().describe("A handle: keep it for this person alone."),
  subject_type: z
    .enum(["user", "candidate", "workspace"])
    .optional()
    .describe("Whom it is about; required outside a DM: workspace for an operational fact."),
  subject_id: z.string().optional().describe("The user's handle or the candidate's id."),
  tier: z.enum(["profile", "log", "note"]).optional().describe("profile, log or note."),
  ttl_days: z.number().int().optional().describe("Keep it this many days (default 90)."),
});

const recallInput = z.object({
  question: z.string().describe("What you want to know."),
  limit: z.number().int().min(1).max(40).default(10).describe("At most this many facts."),
  mode: z
    .enum(["auto", "hybrid", "semantic", "lexical", "recent", "contextual", "reranked"])
    .default("auto")
    .describe("How to rank; auto suits most turns."),
});

const correctInput = z.object({
  memory_id: z.string().describe("The memory to correct."),
  body: z.string().describe("The corrected fact, at most 2,000 characters."),
});

const forgetInput = z.object({
  memory_id: z.string().describe("The memory to forget."),
  reason: z.string().default("").describe("Why, for the receipt (at most 500 characters)."),
});

/** The four tools, for `generateText({tools: archivistTools({client, place})})`. */
export function archivistTools({ client, place }: ToolsOptions) {
  return {
    remember: tool({
      description:
        "Remember a fact said here. The narrowest scope the place allows is used: a DM's fact is that " +
        "person's, a channel's stays in the channel; only_for keeps it for one person.",
      inputSchema: rememberInput,
      execute: (input) =>
        answered(async () => {
          const row = await client.remember({ ...input, place, source_kind: "message" });
          const note = row.scope_reason ? `\n${inline(row.scope_reason)}` : "";
          return `Remembered as ${row.scope} memory ${row.id}.${note}\n${fenced([row])}`;
        }),
    }),
    recall: tool({
      description:
        "Recall the facts most relevant to a question among those recallable here (auto ranks by meaning " +
        "and words; lexical or semantic on request).",
      inputSchema: recallInput,
      execute: (input) =>
        answered(async () => {
          const found = await client.recall({ ...input, place });
          const text = fenced(found.results, { empty: "Nothing recallable here matches." });
          return found.notice ? `${text}\n${inline(found.notice)}` : text;
        }),
    }),
    correct: tool({
      description: "Correct a memory: a new version with this body replaces it; the old one stays in its history.",
      inputSchema: correctInput,
      execute: ({ memory_id, body }) =>
        answered(async () => {
          const row = await client.correct(memory_id, { body, place });
          return `Corrected: new version ${row.id}.\n${fenced([row])}`;
        }),
    }),
    forget: tool({
      description: "Forget a memory for good: its text is erased and only a receipt (who, when, why) stays.",
      inputSchema: forgetInput,
      execute: ({ memory_id, reason }) =>
        answered(async () => `Forgotten: ${label(await client.forget(memory_id, { reason, place }))}`),
    }),
  };
}
