// A language-model middleware that puts the turn's memory block in front of the model and has Archivist
// record the injection, so GET /api/v1/injections/{turn} shows what the model was given and replay works.
//
// Before each model call it asks render for the turn (the question is the last user message), then inserts the
// block as a system message after the call's own system messages (providers refuse a system message between
// conversation messages). The turn id is the call's `providerOptions.archivist.turnId`, else `ai-<uuid>`; it is
// handed back as `providerMetadata.archivist.turnId` with the block's hash. Render answers the recorded block
// again for a turn id it has seen with the same question, so the steps of one tool loop share one injection.

import { randomUUID } from "node:crypto";

import type { ArchivistClient, Place, Rendered } from "@archivist/client";
import type {
  LanguageModelV3CallOptions,
  LanguageModelV3Middleware,
  LanguageModelV3Prompt,
  LanguageModelV3StreamPart,
  SharedV3ProviderMetadata,
} from "@ai-sdk/provider";

/** The API's limit on render's question, in characters. */
export const QUESTION_MAX_CHARS = 2000;
const CONTROL_CHARS = /[\x00-\x08\x0b-\x1f\x7f-\x9f]/g;
const LONE_SURROGATE = /[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/g;

export interface MemoryMiddlewareOptions {
  client: ArchivistClient;
  /** The place of the conversation; a call's `providerOptions.archivist.place` overrides it. */
  place: Place;
  /** Called with each render's answer (the block, its facts, its hash), e.g. to log the turn id. */
  onRender?: (rendered: Rendered) => void;
}

/** What a call may say to the middleware under `providerOptions.archivist`. */
export interface ArchivistCallOptions {
  turnId?: string;
  place?: Place;
}

function callOptions(params: LanguageModelV3CallOptions): ArchivistCallOptions {
  const given = params.providerOptions?.["archivist"] ?? {};
  return {
    turnId: typeof given["turnId"] === "string" ? given["turnId"] : undefined,
    place: (given["place"] as Place | undefined) ?? undefined,
  };
}

/** The last user message's text, as render takes a question: no control characters, at most 2,000 characters. */
export function questionOf(prompt: LanguageModelV3Prompt): string {
  const last = [...prompt].reverse().find((message) => message.role === "user");
  if (!last || last.role !== "user") return "";
  const said = last.content.flatMap((part) => (part.type === "text" ? [part.text] : [])).join(" ");
  const clean = said.replace(LONE_SURROGATE, "\ufffd").replace(CONTROL_CHARS, " ").trim();
  return Array.from(clean).slice(0, QUESTION_MAX_CHARS).join("");
}

/** The prompt with the block as a system message after its leading system messages. */
function withBlock(prompt: LanguageModelV3Prompt, block: string): LanguageModelV3Prompt {
  const at = prompt.findIndex((message) => message.role !== "system");
  const index = at === -1 ? prompt.length : at;
  return [...prompt.slice(0, index), { role: "system", content: block }, ...prompt.slice(index)];
}

function metadata(params: LanguageModelV3CallOptions): SharedV3ProviderMetadata | undefined {
  const given = params.providerOptions?.["archivist"];
  if (!given || typeof given["turnId"] !== "string") return undefined;
  return { archivist: { turnId: given["turnId"], sha256: (given["sha256"] as string | undefined) ?? "" } };
}

/** The middleware, for `wrapLanguageModel({model, middleware: archivistMemory({client, place})})`. */
export function archivistMemory({ client, place, onRender }: MemoryMiddlewareOptions): LanguageModelV3Middleware {
  return {
    specificationVersion: "v3",
    async transformParams({ params }) {
      const asked = callOptions(params);
      const turnId = asked.turnId ?? `ai-${randomUUID()}`;
      const rendered = await client.render({
        turn_id: turnId,
        question: questionOf(params.prompt),
        place: asked.place ?? place,
      });
      onRender?.(rendered);
      // The turn id rides on the call's options to the wrappers below, which hand it back with the answer.
      const providerOptions = {
        ...params.providerOptions,
        archivist: { ...params.providerOptions?.["archivist"], turnId, sha256: rendered.sha256 ?? "" },
      };
      const prompt = rendered.text ? withBlock(params.prompt, rendered.text) : params.prompt;
      return { ...params, prompt, providerOptions };
    },
    async wrapGenerate({ doGenerate, params }) {
      const result = await doGenerate();
      const added = metadata(params);
      return added ? { ...result, providerMetadata: { ...result.providerMetadata, ...added } } : result;
    },
    async wrapStream({ doStream, params }) {
      const result = await doStream();
      const added = metadata(params);
      if (!added) return result;
      const tagged = new TransformStream<LanguageModelV3StreamPart, LanguageModelV3StreamPart>({
        transform(part, controller) {
          controller.enqueue(
            part.type === "finish" ? { ...part, providerMetadata: { ...part.providerMetadata, ...added } } : part,
          );
        },
      });
      return { ...result, stream: result.stream.pipeThrough(tagged) };
    },
  };
}
