// Each TypeScript package's cost per call against bare fetch on the same requests, interleaved so drift hits
// both alike; prints the median (p50) and p95 of each and the ratio. Run by bench/typescript_clients.py, which
// starts a server and sets ARCHIVIST_URL and ARCHIVIST_TOKEN; `node bench/overhead.mjs --calls 200` against
// any server with them set.
//
// A package adds cases with packages/NAME/bench/cases.mjs exporting `cases`: a list of
// { name, run(context, index), bare(context, index) }, two async functions doing the same work, the first
// through the package and the second with bare fetch. `context` holds url, api, token, headers, place and
// archivist (an ArchivistClient on that place).
import { access, readdir } from "node:fs/promises";
import { loadavg } from "node:os";
import { performance } from "node:perf_hooks";
import { fileURLToPath } from "node:url";
import { parseArgs } from "node:util";
import { ArchivistClient } from "@archivist/client";

const { values: options } = parseArgs({
  options: { calls: { type: "string", default: "200" }, warmup: { type: "string", default: "20" } },
});
const calls = Number(options.calls);
const warmup = Number(options.warmup);

const url = process.env.ARCHIVIST_URL?.replace(/\/+$/, "");
const token = process.env.ARCHIVIST_TOKEN;
if (!url || !token) throw new Error("Set ARCHIVIST_URL and ARCHIVIST_TOKEN (bench/typescript_clients.py does).");
const api = `${url}/api/v1/`;
const headers = { Authorization: `Bearer ${token}`, Accept: "application/json", "Content-Type": "application/json" };
const place = { channel: "C-bench-ts", kind: "public", people: [] };
const archivist = new ArchivistClient({ url, token, place });
await archivist.putPlace(place.channel, { kind: place.kind, people: [] });
const context = { url, api, token, headers, place, archivist };

/** Bare fetch: the request sent and its JSON read, a refusal thrown. */
async function bare(method, path, body, extra = {}) {
  const response = await fetch(api + path, { method, headers: { ...headers, ...extra }, body: JSON.stringify(body) });
  const text = await response.text();
  if (!response.ok) throw new Error(`${method} ${path}: ${response.status} ${text}`);
  return JSON.parse(text);
}

const clientCases = [
  {
    name: "client recall",
    run: () => archivist.recall({ question: "fact" }),
    bare: () => bare("POST", "recall", { question: "fact", place }),
  },
  {
    name: "client remember",
    run: (_, index) => archivist.remember({ body: `Client fact ${index}`, subject_type: "workspace" }),
    bare: (_, index) =>
      bare(
        "POST",
        "memories",
        { body: `Bare fact ${index}`, place, subject_type: "workspace" },
        { "Idempotency-Key": crypto.randomUUID() },
      ),
  },
];

/** Every package's bench/cases.mjs, by package folder name. */
async function packageCases() {
  const packages = fileURLToPath(new URL("../packages/", import.meta.url));
  const found = [];
  for (const name of (await readdir(packages)).sort()) {
    const module = new URL(`../packages/${name}/bench/cases.mjs`, import.meta.url);
    try {
      await access(module);
    } catch {
      continue; // this package adds no cases
    }
    const { cases } = await import(module.href);
    found.push(...cases.map((one) => ({ ...one, name: one.name.startsWith(name) ? one.name : `${name}: ${one.name}` })));
  }
  return found;
}

async function timed(work) {
  const started = performance.now();
  await work();
  return performance.now() - started;
}

function percentile(values, share) {
  const ordered = [...values].sort((a, b) => a - b);
  return ordered[Math.min(ordered.length - 1, Math.floor(share * ordered.length))];
}

const cases = [...clientCases, ...(await packageCases())];
for (let index = 0; index < warmup; index++) {
  for (const one of cases) {
    await one.run(context, -1 - index);
    await one.bare(context, -1 - index);
  }
}
const times = new Map(cases.map((one) => [one.name, { run: [], bare: [] }]));
for (let index = 0; index < calls; index++) {
  for (const one of cases) {
    const entry = times.get(one.name);
    // Which goes first alternates, so neither always meets a warmer connection or server.
    if (index % 2) {
      entry.run.push(await timed(() => one.run(context, index)));
      entry.bare.push(await timed(() => one.bare(context, index)));
    } else {
      entry.bare.push(await timed(() => one.bare(context, index)));
      entry.run.push(await timed(() => one.run(context, index)));
    }
  }
}

console.log(`Per call, ${calls} calls each, interleaved with bare fetch (ms), Node ${process.version}:`);
console.log(`  ${"case".padEnd(34)} ${"p50".padStart(7)} ${"bare p50".padStart(9)} ${"p95".padStart(7)} ${"bare p95".padStart(9)} ${"overhead".padStart(9)} ${"ratio".padStart(6)}`);
for (const [name, { run, bare: baseline }] of times) {
  const [p50, base50] = [percentile(run, 0.5), percentile(baseline, 0.5)];
  const cells = [p50, base50, percentile(run, 0.95), percentile(baseline, 0.95)].map((value) => value.toFixed(2));
  console.log(
    `  ${name.padEnd(34)} ${cells[0].padStart(7)} ${cells[1].padStart(9)} ${cells[2].padStart(7)} ${cells[3].padStart(9)} ` +
      `${(p50 - base50 >= 0 ? "+" : "") + (p50 - base50).toFixed(2)}`.padStart(9) +
      ` ${(p50 / base50).toFixed(3).padStart(6)}`,
  );
}
console.log(`  load average (1, 5, 15 min) at the end: ${loadavg().map((load) => load.toFixed(2)).join(" ")}`);
