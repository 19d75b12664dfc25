// A backend for Anthropic's memory tool (memory_20250818) that keeps its files as Archivist memories of one
// place, mapping paths exactly as the Python backend does (clients/python/archivist_client/anthropic.py):
// - `/memories/{scope}/...` is a memory of that scope (`workspace`, `channel` or `person`) in the place, found by
//   its source reference `memtool/{channel}/{scope}/...`; the file's text is the memory's body.
// - Every file says whom it is about by its path: in a DM, `/memories/person/{name}` is about the DM's person;
//   elsewhere `/memories/person/{handle}/{name}` is kept for that person alone (`only_for`), and a channel or
//   workspace file sits in a subject folder (`workspace`, `user:{handle}` or `candidate:{id}`). A write outside
//   one is refused, naming `subject_type`: the tool never chooses whom a fact is about for the model.
// - `create` remembers (creating an existing file supersedes it), `str_replace`, `insert` and `rename`
//   supersede (the history is kept), `delete` forgets (a receipt stays).
// Every refusal is a `MemoryToolError` the model reads; an API refusal keeps its typed error as the `cause`.

import { ArchivistError, type ArchivistClient, type Memory, type Place, type RememberInput } from "@archivist/client";

import { FENCE_CLOSE, FENCE_OPEN, PREAMBLE, escape, neutralise } from "./rules.js";
import { pyRepr, quoteSegment } from "./python.js";
import { label } from "./text.js";

const ROOT = "/memories";
const SCOPES = ["workspace", "channel", "person"] as const;
type Scope = (typeof SCOPES)[number];
const BODY_MAX_CHARS = 2000;
const SOURCE_REF_MAX_CHARS = 200;
// Where each kind of place keeps what is written there (the narrowest scope it allows).
const WRITABLE: Record<string, readonly Scope[]> = {
  dm: ["person"],
  private: ["channel", "person"],
  public: ["channel", "workspace", "person"],
};
const NAME = /^[^\x00-\x1f\x7f]+$/;

/** One command of the memory tool, as the model sends it. */
export type MemoryCommand =
  | { command: "view"; path: string; view_range?: [number, number] | number[] }
  | { command: "create"; path: string; file_text: string }
  | { command: "str_replace"; path: string; old_str: string; new_str: string }
  | { command: "insert"; path: string; insert_line: number; insert_text: string }
  | { command: "delete"; path: string }
  | { command: "rename"; old_path: string; new_path: string };

/** A command refused with a message the model can act on (the AI SDK hands it to the model as the tool's error). */
export class MemoryToolError extends Error {
  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = "MemoryToolError";
  }
}

const stripSlashes = (text: string): string => text.replace(/^\/+|\/+$/g, "");

function partition(text: string, separator: string): [string, string] {
  const at = text.indexOf(separator);
  return at === -1 ? [text, ""] : [text.slice(0, at), text.slice(at + separator.length)];
}

function count(text: string, part: string): number {
  return part ? text.split(part).length - 1 : Array.from(text).length + 1;
}

type Attribution = Pick<RememberInput, "only_for" | "subject_type" | "subject_id">;

/** The memory tool's six commands over Archivist, for one place. */
export class ArchivistMemoryBackend {
  readonly client: ArchivistClient;
  readonly place: Place;
  readonly prefix: string;

  constructor({ client, place }: { client: ArchivistClient; place: Place }) {
    this.client = client;
    this.place = { channel: place.channel, kind: place.kind, people: [...(place.people ?? [])] };
    this.prefix = `memtool/${quoteSegment(place.channel)}/`;
  }

  /** Runs one command: the text for the model, or a `MemoryToolError` thrown. */
  async execute(command: MemoryCommand): Promise<string> {
    switch (command.command) {
      case "view":
        return this.view(command.path, command.view_range);
      case "create":
        return this.create(command.path, command.file_text);
      case "str_replace":
        return this.strReplace(command.path, command.old_str, command.new_str);
      case "insert":
        return this.insert(command.path, command.insert_line, command.insert_text);
      case "delete":
        return this.delete(command.path);
      case "rename":
        return this.rename(command.old_path, command.new_path);
      default:
        throw new MemoryToolError(`Unknown command ${pyRepr(String((command as { command: unknown }).command))}.`);
    }
  }

  // --- paths ----------------------------------------------------------------------------

  /** [scope, name within it] for a path; [null, ""] for the root. */
  private parts(path: string): [Scope | null, string] {
    if (path !== ROOT && !path.startsWith(ROOT + "/")) {
      throw new MemoryToolError(`Paths start with ${ROOT}, e.g. ${ROOT}/channel/notes.md; got ${pyRepr(path)}.`);
    }
    const rest = stripSlashes(path.slice(ROOT.length));
    if (!rest) return [null, ""];
    const [scope, name] = partition(rest, "/");
    if (!(SCOPES as readonly string[]).includes(scope)) {
      throw new MemoryToolError(`${ROOT} holds the folders ${SCOPES.join(", ")}; ${pyRepr(scope)} is not one of them.`);
    }
    if (name.split("/").includes("..") || (name && !NAME.test(name))) {
      throw new MemoryToolError(`${pyRepr(path)} is not a file name this tool accepts.`);
    }
    return [scope as Scope, name];
  }

  private ref(scope: string, name: string): string {
    const ref = `${this.prefix}${scope}/${name}`;
    if (Array.from(ref).length > SOURCE_REF_MAX_CHARS) {
      const room = SOURCE_REF_MAX_CHARS - Array.from(this.prefix).length - scope.length - 1;
      throw new MemoryToolError(`The path is too long to keep; use a name of at most ${room} characters.`);
    }
    return ref;
  }

  private pathOf(memory: Memory): string {
    return `${ROOT}/${memory.source.ref.slice(this.prefix.length)}`;
  }

  private async rows(filters: { source_ref_prefix?: string; source_ref?: string }, pageSize: number) {
    const found: Memory[] = [];
    for await (const row of this.client.list({ place: this.place, state: "live", page_size: pageSize, ...filters })) {
      found.push(row);
    }
    return found;
  }

  private async files(scope: string | null = null, under = ""): Promise<Memory[]> {
    const start = this.prefix + (scope ? `${scope}/` : "") + (under ? `${under.replace(/\/+$/, "")}/` : "");
    const rows = await this.rows({ source_ref_prefix: start }, 200);
    return rows.filter((row) => row.source.ref.startsWith(start));
  }

  private async file(path: string): Promise<Memory | null> {
    const [scope, name] = this.parts(path);
    if (scope === null || !name) return null;
    const ref = this.ref(scope, name);
    const rows = await this.rows({ source_ref: ref }, 10);
    return rows.find((row) => row.source.ref === ref) ?? null;
  }

  private async existing(path: string): Promise<Memory> {
    const found = await this.file(path);
    if (found === null) throw new MemoryToolError(`There is no file at ${path}. View ${ROOT} to see what there is.`);
    return found;
  }

  private writable(scope: Scope): void {
    const allowed = WRITABLE[this.place.kind] ?? [];
    if (!allowed.includes(scope)) {
      const where = allowed.map((name) => `${ROOT}/${name}`).join(" or ");
      throw new MemoryToolError(
        `In this ${this.place.kind} place memories are kept in ${where}, not ${ROOT}/${scope}; write there.`,
      );
    }
  }

  /** Whom the file at `scope`/`name` is about, as remember's fields; refused when its path does not say. */
  private attribution(scope: Scope, name: string): Attribution {
    if (this.place.kind === "dm") return {}; // the DM's record names its person
    const [folder, rest] = partition(name, "/");
    if (scope === "person") {
      if (!rest) {
        throw new MemoryToolError(
          `Outside a DM a person file names its person: write ${ROOT}/person/HANDLE/${name}, ` +
            "with the handle of the person it is kept for.",
        );
      }
      return { only_for: folder };
    }
    const [kind, subjectId] = partition(folder, ":");
    if (rest && folder === "workspace") return { subject_type: "workspace" };
    if (rest && (kind === "user" || kind === "candidate") && subjectId) {
      return { subject_type: kind, subject_id: subjectId };
    }
    throw new MemoryToolError(
      `subject_type: say whom this file is about with its folder: ${ROOT}/${scope}/workspace/${name} for an ` +
        `operational note, ${ROOT}/${scope}/user:HANDLE/${name} for a person, or ${ROOT}/${scope}/candidate:ID/${name} ` +
        "for a candidate.",
    );
  }

  private supersede(memory: Memory, body: string): Promise<Memory> {
    // A correction's source reference would otherwise name the version it replaces; the file keeps its path.
    return this.client.correct(memory.id, { body, place: this.place, source_ref: memory.source.ref });
  }

  private static fits(text: string): void {
    const length = Array.from(text).length;
    if (length > BODY_MAX_CHARS) {
      throw new MemoryToolError(
        `The file would be ${length} characters; a memory holds at most ${BODY_MAX_CHARS}. ` +
          "Split it into several files, each one fact or topic.",
      );
    }
  }

  private async call<T>(work: () => Promise<T>): Promise<T> {
    try {
      return await work();
    } catch (error) {
      if (error instanceof ArchivistError) {
        throw new MemoryToolError(`Archivist refused: ${error.message}`, { cause: error });
      }
      throw error;
    }
  }

  // --- commands -------------------------------------------------------------------------

  async view(path: string, viewRange?: readonly number[]): Promise<string> {
    const [scope, name] = this.parts(path);
    if (scope === null) return this.viewRoot();
    const memory = name ? await this.call(() => this.file(path)) : null;
    if (memory === null) {
      const files = await this.call(() => this.files(scope, name));
      if (name && !files.length) throw new MemoryToolError(`There is no file or folder at ${path}.`);
      const lines = [`Directory ${path}:`];
      for (const row of files) {
        lines.push(`- ${this.pathOf(row)} (${Array.from(row.body).length} characters; ${label(row)})`);
      }
      return files.length ? lines.join("\n") : `Directory ${path} is empty.`;
    }
    let numbered = memory.body.split("\n").map((line, index) => [index + 1, line] as const);
    if (viewRange && viewRange.length) {
      const first = viewRange[0]!;
      const given = viewRange[viewRange.length - 1]!;
      const last = given === -1 ? numbered.length : given;
      numbered = numbered.filter(([n]) => first <= n && n <= last);
    }
    // The file is memory a model reads, so it gets render's fence, preamble and label; each line keeps its
    // spacing (str_replace matches it) but shows invisible characters as marks and cannot close the fence.
    const lines = numbered.map(([n, line]) => `${String(n).padStart(6)}\t${escape(neutralise(line))}`);
    return [`File ${path}:`, FENCE_OPEN, PREAMBLE, "", `- [${label(memory)}]`, ...lines, FENCE_CLOSE].join("\n");
  }

  private async viewRoot(): Promise<string> {
    const counts: Record<string, number> = { workspace: 0, channel: 0, person: 0 };
    for (const row of await this.call(() => this.files())) {
      const scope = row.source.ref.slice(this.prefix.length).split("/", 1)[0]!;
      counts[scope] = (counts[scope] ?? 0) + 1;
    }
    const writable = WRITABLE[this.place.kind] ?? [];
    const lines = [`Directory ${ROOT} (place ${this.place.channel}, ${this.place.kind}):`];
    for (const scope of SCOPES) {
      lines.push(`- ${ROOT}/${scope}/ (${counts[scope]} files${writable.includes(scope) ? "" : ", read-only here"})`);
    }
    return lines.join("\n");
  }

  async create(path: string, fileText: string): Promise<string> {
    const [scope, name] = this.parts(path);
    if (scope === null || !name) {
      throw new MemoryToolError(`Create a file inside a scope folder, e.g. ${ROOT}/channel/notes.md.`);
    }
    this.writable(scope);
    const about = this.attribution(scope, name);
    ArchivistMemoryBackend.fits(fileText);
    const found = await this.call(() => this.file(path));
    if (found !== null) {
      const replaced = await this.call(() => this.supersede(found, fileText));
      return `File ${path} replaced (memory ${replaced.id}; the earlier version is kept in its history).`;
    }
    const ref = this.ref(scope, name);
    const row = await this.call(() =>
      this.client.remember({ body: fileText, place: this.place, scope, source_kind: "run", source_ref: ref, ...about }),
    );
    if (row.scope !== scope) {
      await this.call(() =>
        this.client.forget(row.id, { reason: "written to the wrong scope folder", place: this.place }),
      );
      throw new MemoryToolError(
        `Archivist keeps this as a ${row.scope} memory (${row.scope_reason}); write it under ${ROOT}/${row.scope}.`,
      );
    }
    return `File created successfully at ${path} (memory ${row.id}).`;
  }

  async strReplace(path: string, oldStr: string, newStr: string): Promise<string> {
    const memory = await this.call(() => this.existing(path));
    const found = count(memory.body, oldStr);
    if (found === 0) throw new MemoryToolError(`No replacement was made: the text was not found in ${path}.`);
    if (found > 1) {
      throw new MemoryToolError(`The text appears ${found} times in ${path}; include more of it so it is unique.`);
    }
    const at = memory.body.indexOf(oldStr);
    const body = memory.body.slice(0, at) + newStr + memory.body.slice(at + oldStr.length);
    ArchivistMemoryBackend.fits(body);
    const replaced = await this.call(() => this.supersede(memory, body));
    return `The memory file has been edited (memory ${replaced.id}; the earlier version is kept in its history).`;
  }

  async insert(path: string, insertLine: number, insertText: string): Promise<string> {
    const memory = await this.call(() => this.existing(path));
    const lines = memory.body.split("\n");
    if (!(insertLine >= 0 && insertLine <= lines.length)) {
      throw new MemoryToolError(`insert_line must be between 0 and ${lines.length} for ${path}.`);
    }
    lines.splice(insertLine, 0, ...insertText.replace(/\n+$/, "").split("\n"));
    const body = lines.join("\n");
    ArchivistMemoryBackend.fits(body);
    const replaced = await this.call(() => this.supersede(memory, body));
    return `Text inserted at line ${insertLine} in ${path} (memory ${replaced.id}).`;
  }

  async delete(path: string): Promise<string> {
    const [scope, name] = this.parts(path);
    if (scope === null) {
      throw new MemoryToolError(`${ROOT} itself cannot be deleted; delete files or a scope folder's files.`);
    }
    const memory = name ? await this.call(() => this.file(path)) : null;
    const rows = memory !== null ? [memory] : await this.call(() => this.files(scope, name));
    if (!rows.length) throw new MemoryToolError(`There is no file or folder at ${path}.`);
    for (const row of rows) {
      await this.call(() => this.client.forget(row.id, { reason: "deleted by the memory tool", place: this.place }));
    }
    return `Deleted ${path} (${rows.length} memories forgotten; a receipt of each stays).`;
  }

  async rename(oldPath: string, newPath: string): Promise<string> {
    const [oldScope, oldName] = this.parts(oldPath);
    const [newScope, newName] = this.parts(newPath);
    if (!oldName || !newName || oldScope === null || newScope === null) {
      throw new MemoryToolError("Rename files, not folders: name a file in both old_path and new_path.");
    }
    if (oldScope !== newScope) {
      throw new MemoryToolError(
        `A memory's scope cannot change: ${ROOT}/${oldScope} files stay in ${ROOT}/${oldScope}. ` +
          `To keep it as a ${newScope} memory, create ${newPath} with its text, then delete ${oldPath}.`,
      );
    }
    const before = JSON.stringify(this.attribution(oldScope, oldName));
    if (before !== JSON.stringify(this.attribution(newScope, newName))) {
      throw new MemoryToolError(
        `A memory's subject cannot change: ${oldPath} and ${newPath} name different ` +
          "people or subjects. Create the new file with its text, then delete the old one.",
      );
    }
    const memory = await this.call(() => this.existing(oldPath));
    if ((await this.call(() => this.file(newPath))) !== null) {
      throw new MemoryToolError(`${newPath} already exists; delete it first or choose another name.`);
    }
    const ref = this.ref(newScope, newName);
    await this.call(() => this.client.correct(memory.id, { body: memory.body, place: this.place, source_ref: ref }));
    return `Renamed ${oldPath} to ${newPath}.`;
  }
}
