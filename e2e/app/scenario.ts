// An app of agentmsg's daemon, as a desktop app's backend would be one:
// its types are generated from the daemon's OpenAPI document
// (openapi-typescript writes api.d.ts), its calls go through openapi-fetch
// over loopback TCP with the daemon's token, and it follows the event
// stream with fetch. e2e/app/app_test.go compiles it (tsc, strict) and runs
// it against a real daemon on a private tmux server, with stand-in agents:
// ana (busy), bob (ready) and cy (in a dialog) in team alpha.
//
// It asks the test for what only the test can do by a line on stdout
// ("ASK ana ready"); the test answers nothing, it does it. Any broken
// promise throws, and the process exits 1 saying which.

import createClient from "openapi-fetch";
import type { components, paths } from "./api.js";

type Event = components["schemas"]["Event"];
type StreamItem = components["schemas"]["StreamItem"];
type DeliveryState = components["schemas"]["DeliveryState"];
type Verdict = components["schemas"]["Verdict"];

const base = need("AGENTMSG_URL");
const token = need("AGENTMSG_TOKEN");
const team = "alpha";

const api = createClient<paths>({ baseUrl: base, headers: { Authorization: `Bearer ${token}` } });

function need(name: string): string {
  const v = process.env[name];
  if (!v) throw new Error(`${name} is not set`);
  return v;
}

function check(ok: boolean, what: string): asserts ok {
  if (!ok) throw new Error(what);
}

function ask(what: string): void {
  process.stdout.write(`ASK ${what}\n`);
}

function log(what: string): void {
  process.stdout.write(`app: ${what}\n`);
}

// A message id the app chooses: MSG_<FROM>_<8 hex>.
function newID(): string {
  const hex = Array.from({ length: 8 }, () => Math.floor(Math.random() * 16).toString(16)).join("");
  return `MSG_APP_${hex}`;
}

// One SSE event of GET /v1/events, its data typed.
interface Item {
  id: number | undefined;
  name: string; // "" for the log's events; dropped, expired, reset
  data: StreamItem;
}

// Stream follows GET /v1/events from after lastID (the snapshot's as_of,
// or the last id seen), as a queue the app takes events from.
class Stream {
  private items: Item[] = [];
  private waiters: Array<() => void> = [];
  private ctl = new AbortController();
  private ended = false;
  last: number;

  constructor(lastID: number, query = "") {
    this.last = lastID;
    void this.run(lastID, query);
  }

  private async run(lastID: number, query: string): Promise<void> {
    const headers: Record<string, string> = { Authorization: `Bearer ${token}` };
    if (lastID >= 0) headers["Last-Event-ID"] = String(lastID);
    try {
      const res = await fetch(`${base}/v1/events${query}`, { headers, signal: this.ctl.signal });
      check(res.ok && res.body !== null, `GET /v1/events: HTTP ${res.status}`);
      const reader = res.body.pipeThrough(new TextDecoderStream()).getReader();
      let buf = "";
      for (;;) {
        const { value, done } = await reader.read();
        if (done) break;
        buf += value;
        let end: number;
        while ((end = buf.indexOf("\n\n")) >= 0) {
          const block = buf.slice(0, end);
          buf = buf.slice(end + 2);
          this.take(block);
        }
      }
    } catch (e) {
      if (!this.ctl.signal.aborted) throw e;
    } finally {
      this.ended = true;
      this.wake();
    }
  }

  private take(block: string): void {
    let id: number | undefined;
    let name = "";
    let data = "";
    for (const line of block.split("\n")) {
      if (line.startsWith(":")) continue; // a keepalive
      if (line.startsWith("id: ")) id = Number(line.slice(4));
      else if (line.startsWith("event: ")) name = line.slice(7);
      else if (line.startsWith("data: ")) data += line.slice(6);
    }
    if (data === "") return;
    const item: Item = { id, name, data: JSON.parse(data) as StreamItem };
    if (id !== undefined) this.last = id;
    this.items.push(item);
    this.wake();
  }

  private wake(): void {
    for (const w of this.waiters.splice(0)) w();
  }

  // next is the next event, or a failure after ms.
  async next(ms = 30000): Promise<Item> {
    const deadline = Date.now() + ms;
    for (;;) {
      const item = this.items.shift();
      if (item) return item;
      check(!this.ended, "the event stream ended");
      const left = deadline - Date.now();
      check(left > 0, `no event within ${ms} ms`);
      await new Promise<void>((resolve) => {
        const t = setTimeout(resolve, left);
        this.waiters.push(() => {
          clearTimeout(t);
          resolve();
        });
      });
    }
  }

  // until takes events until one of message id reaches a type in types,
  // and returns every event of id it saw on the way.
  async until(id: string, types: Event["type"][], ms = 30000): Promise<Event[]> {
    const seen: Event[] = [];
    const deadline = Date.now() + ms;
    for (;;) {
      const item = await this.next(Math.max(1, deadline - Date.now()));
      const ev = item.data;
      check(ev.type !== "reset" && ev.type !== "expired" && ev.type !== "dropped", `the stream said ${ev.type}`);
      if ("message_id" in ev && ev.message_id === id) {
        seen.push(ev);
        if (types.includes(ev.type)) return seen;
      }
    }
  }

  close(): void {
    this.ctl.abort();
  }
}

// A snapshot of the agents, then the stream from its as_of.
async function snapshot(): Promise<Stream> {
  const { data, error } = await api.GET("/v1/agents", { params: { query: { team } } });
  check(data !== undefined, `GET /v1/agents: ${JSON.stringify(error)}`);
  const states = new Map(data.agents.map((a) => [a.agent, a.state]));
  log(`agents as of event ${data.as_of}: ${JSON.stringify(Object.fromEntries(states))}`);
  check(states.get("ana") === "busy" && states.get("bob") === "ready" && states.get("cy") === "dialog",
    `the agents' states: ${JSON.stringify(Object.fromEntries(states))}`);
  return new Stream(data.as_of);
}

// 1. Send to a busy agent without waiting; follow it to its end.
async function asyncSend(stream: Stream): Promise<void> {
  const sent = await api.POST("/v1/send", {
    body: { team, agent: "ana", text: "the build is green", from: "app", wait: false, ready_timeout: "2s" },
  });
  check(sent.response.status === 202, `async send: HTTP ${sent.response.status} ${JSON.stringify(sent.error ?? sent.data)}`);
  const accepted = sent.data;
  check(accepted !== undefined && "stored" in accepted && !("verdict" in accepted), "async send: no SendAccepted");
  const id = accepted.id;
  log(`sent ${id} without waiting: recorded ${accepted.stored}`);
  const first = await stream.until(id, ["message.recorded"]);
  check(first[0]?.type === "message.recorded", `the first event of ${id}: ${JSON.stringify(first[0])}`);
  await stream.until(id, ["message.deferred"]);
  log(`${id} deferred: ana is busy`);
  ask("ana ready");
  const end = await stream.until(id, ["message.submitted", "message.queued", "message.failed", "message.typed"], 60000);
  const last = end[end.length - 1];
  check(last?.type === "message.submitted", `${id} ended ${last?.type}`);
  const { data } = await api.GET("/v1/messages/{id}", { params: { path: { id } } });
  check(data !== undefined && data.copies.length === 1, "GET /v1/messages: one copy");
  const state: DeliveryState | undefined = data.copies[0]?.message.delivery?.state;
  check(state === "submitted", `GET /v1/messages/${id}: its copy is ${state}`);
  log(`${id} submitted, and GET /v1/messages says so`);
}

// 2. A broadcast to the team, cy in a dialog: each copy its own state.
async function broadcast(): Promise<void> {
  const id = newID();
  const body = { team, text: "all hands at three", from: "app", id, ready_timeout: "1s" };
  const { data, error } = await api.POST("/v1/broadcast", { body });
  check(data !== undefined && "results" in data, `broadcast: ${JSON.stringify(error)}`);
  const verdicts = new Map<string, Verdict>(data.results.map((r) => [r.agent, r.verdict]));
  log(`broadcast ${id}: ${data.verdict}, ${JSON.stringify(Object.fromEntries(verdicts))}`);
  check(data.verdict === "deferred" && verdicts.get("cy") === "deferred" && verdicts.get("bob") === "submitted",
    `the broadcast's verdicts: ${data.verdict} ${JSON.stringify(Object.fromEntries(verdicts))}`);
  const msg = await api.GET("/v1/messages/{id}", { params: { path: { id } } });
  check(msg.data !== undefined, `GET /v1/messages/${id}`);
  check(msg.data.message?.delivery === undefined, "the top-level message carries one copy's delivery");
  const states = new Map<string, DeliveryState | undefined>(msg.data.copies.map((c) => [c.inbox, c.message.delivery?.state]));
  for (const c of msg.data.copies) {
    const records = c.delivery;
    check(records[records.length - 1]?.state === c.message.delivery?.state, `copy ${c.inbox}: its message and its last record disagree`);
  }
  check(states.get("cy") === "deferred" && states.get("bob") === "submitted", `each copy's state: ${JSON.stringify(Object.fromEntries(states))}`);
  // The same broadcast again (its answer lost): answered again, nothing
  // typed twice; another text with that id is 409.
  const again = await api.POST("/v1/broadcast", { body });
  check(again.data !== undefined && again.data.verdict === "deferred", `the broadcast again: ${JSON.stringify(again.error)}`);
  const other = await api.POST("/v1/broadcast", { body: { ...body, text: "another text" } });
  // An error is an Error (code, field) or, for a 400 or 404, maybe the
  // operation's own document with its verdict: "code" tells them apart.
  check(other.response.status === 409 && other.error !== undefined && "code" in other.error && other.error.code === "id_taken",
    `another text, the same id: ${other.response.status} ${JSON.stringify(other.error)}`);
  log(`each copy says its own state; the same id again answers again; another text is 409 id_taken`);
}

// 3. The stream drops; the app reconnects with Last-Event-ID and misses
// nothing, sees nothing twice.
async function reconnect(stream: Stream): Promise<Stream> {
  const last = stream.last;
  stream.close();
  const id = newID();
  const { data } = await api.POST("/v1/send", { body: { team, agent: "bob", text: "while you were away", from: "app", id } });
  check(data !== undefined && "verdict" in data && data.verdict === "submitted", `send to bob: ${JSON.stringify(data)}`);
  const again = new Stream(last);
  const seen = new Set<number>();
  for (;;) {
    const item = await again.next();
    check(item.id !== undefined && item.id > last && !seen.has(item.id), `after reconnecting from ${last}: event ${item.id} again`);
    seen.add(item.id);
    const ev = item.data;
    if ("message_id" in ev && ev.message_id === id && ev.type === "message.submitted") break;
  }
  log(`reconnected from ${last}: ${seen.size} events, none twice, ${id} submitted among them`);
  return again;
}

// 4. A snapshot of the log and its cursor: what follows it comes, and
// nothing before; filters; an error a program reads.
async function snapshotAndCursor(): Promise<void> {
  const page = await api.GET("/v1/log", { params: { query: { team, limit: 1 } } });
  check(page.data !== undefined && "messages" in page.data, "GET /v1/log");
  check(page.data.messages.length === 1 && page.data.next_cursor !== undefined, "GET /v1/log?limit=1: one entry and a cursor");
  const asOf = page.data.as_of;
  const id = newID();
  const filtered = new Stream(asOf, "?agent=bob&types=message.recorded,message.submitted");
  await api.POST("/v1/send", { body: { team, agent: "bob", text: "after the snapshot", from: "app", id } });
  const item = await filtered.next();
  check(item.id !== undefined && item.id > asOf, `from as_of ${asOf}: event ${item.id}`);
  check(item.data.type === "message.recorded" && "message_id" in item.data && item.data.message_id === id,
    `the first event after the snapshot: ${JSON.stringify(item.data)}`);
  filtered.close();
  const bad = await api.POST("/v1/send", { body: { team, agent: "bob", text: "x", from: "app", ready_timeout: "soon" } });
  check(bad.response.status === 400 && bad.error !== undefined && "code" in bad.error && bad.error.code === "wrong_type" && bad.error.exit_code === 2,
    `a bad duration: ${JSON.stringify(bad.error)}`);
  log(`the log's as_of ${asOf}: the next change came first, filtered; a bad field is 400 ${bad.error.code}`);
}

async function main(): Promise<void> {
  const stream = await snapshot();
  await asyncSend(stream);
  await broadcast();
  const again = await reconnect(stream);
  again.close();
  await snapshotAndCursor();
  log("OK");
}

main().then(
  () => process.exit(0),
  (e: unknown) => {
    process.stderr.write(`app: ${e instanceof Error ? e.message : String(e)}\n`);
    process.exit(1);
  },
);
