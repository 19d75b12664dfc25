// What the tests share: the live server's client, places of their own, and stand-in model servers on loopback
// (a model endpoint is outside the project; everything Archivist does is the real server).

import { randomBytes } from "node:crypto";
import { createServer, type IncomingMessage, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";

import { ArchivistClient, type Place } from "@archivist/client";

/** An environment variable the tests need; missing is a failure, never a skip. */
export function required(name: string): string {
  const value = process.env[name];
  if (!value) throw new Error(`${name} is not set: run these tests through clients/typescript/tests (pytest)`);
  return value;
}

export function client(place?: Place): ArchivistClient {
  return new ArchivistClient({ url: required("ARCHIVIST_URL"), token: required("ARCHIVIST_TOKEN"), place });
}

/** The two people the live organisation has (ARCHIVIST_TEST_PEOPLE: "mona,max"). */
export function people(): [string, string] {
  const [first, second] = required("ARCHIVIST_TEST_PEOPLE").split(",");
  if (!first || !second) throw new Error("ARCHIVIST_TEST_PEOPLE names two people");
  return [first, second];
}

/** A place of this package's own (`G-team-ai-…`), its record written, so tests never share a channel. */
export async function newPlace(kind: "dm" | "private" | "public", members: string[]): Promise<Place> {
  const prefix = { dm: "D-mona", private: "G-team", public: "C-general" }[kind];
  const channel = `${prefix}-ai-${randomBytes(4).toString("hex")}`;
  await client().putPlace(channel, { kind, people: members });
  return { channel, kind, people: members };
}

/** A request a stand-in server received. */
export interface Received {
  path: string;
  body: Record<string, unknown>;
}

/** A model server on 127.0.0.1 answering from a script: each request gets the next answer (the last repeats). */
export interface StandIn {
  url: string;
  received: Received[];
  close(): Promise<void>;
}

type Answer = (request: Received, response: ServerResponse) => void;

async function serve(answers: Answer[]): Promise<StandIn> {
  const received: Received[] = [];
  const server = createServer((request: IncomingMessage, response: ServerResponse) => {
    const chunks: Buffer[] = [];
    request.on("data", (chunk: Buffer) => chunks.push(chunk));
    request.on("end", () => {
      const got = { path: request.url ?? "", body: JSON.parse(Buffer.concat(chunks).toString("utf8") || "{}") };
      received.push(got);
      answers[Math.min(received.length - 1, answers.length - 1)]!(got, response);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    received,
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}

function json(response: ServerResponse, body: unknown): void {
  response.writeHead(200, { "content-type": "application/json" });
  response.end(JSON.stringify(body));
}

/** An OpenAI chat-completions answer: text, or one tool call. */
export type ChatReply = { text: string } | { tool: string; arguments: Record<string, unknown> };

function chatAnswer(reply: ChatReply): Answer {
  return (request, response) => {
    const message =
      "text" in reply
        ? { role: "assistant", content: reply.text }
        : {
            role: "assistant",
            content: null,
            tool_calls: [
              {
                id: "call-1",
                type: "function",
                function: { name: reply.tool, arguments: JSON.stringify(reply.arguments) },
              },
            ],
          };
    const finish = "text" in reply ? "stop" : "tool_calls";
    if (request.body["stream"]) {
      response.writeHead(200, { "content-type": "text/event-stream" });
      const delta = { id: "chat-1", object: "chat.completion.chunk", created: 0, model: "stand-in" };
      response.write(`data: ${JSON.stringify({ ...delta, choices: [{ index: 0, delta: message }] })}\n\n`);
      response.write(
        `data: ${JSON.stringify({ ...delta, choices: [{ index: 0, delta: {}, finish_reason: finish }] })}\n\n`,
      );
      response.end("data: [DONE]\n\n");
      return;
    }
    json(response, {
      id: "chat-1",
      object: "chat.completion",
      created: 0,
      model: "stand-in",
      choices: [{ index: 0, message, finish_reason: finish }],
      usage: { prompt_tokens: 1, completion_tokens: 1, total_tokens: 2 },
    });
  };
}

/** A stand-in for an OpenAI-compatible chat-completions server (`/v1/chat/completions`). */
export function chatStandIn(replies: ChatReply[] = [{ text: "Noted." }]): Promise<StandIn> {
  return serve(replies.map(chatAnswer));
}

/** An Anthropic Messages answer: text, or one use of a tool. */
export type MessagesReply = { text: string } | { tool: string; input: Record<string, unknown> };

function messagesAnswer(reply: MessagesReply): Answer {
  return (_request, response) => {
    const content =
      "text" in reply
        ? [{ type: "text", text: reply.text }]
        : [{ type: "tool_use", id: "toolu_1", name: reply.tool, input: reply.input }];
    json(response, {
      id: "msg_1",
      type: "message",
      role: "assistant",
      model: "claude-stand-in",
      content,
      stop_reason: "text" in reply ? "end_turn" : "tool_use",
      stop_sequence: null,
      usage: { input_tokens: 1, output_tokens: 1 },
    });
  };
}

/** A stand-in for Anthropic's Messages API (`/v1/messages`). */
export function messagesStandIn(replies: MessagesReply[]): Promise<StandIn> {
  return serve(replies.map(messagesAnswer));
}
