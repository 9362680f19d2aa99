// Tests of actors/runtime: mailbox order and exclusivity, backpressure, timers, supervision, ask, stop/drain,
// shutdown order, pipeToSelf. Time-dependent behaviour runs on a fake clock (advanced by hand) and a fixed random
// source, so back-off delays are exact and nothing depends on the machine's speed.
import { test } from "node:test";
import { setFlagsFromString } from "node:v8";
import { runInNewContext } from "node:vm";
import assert from "node:assert/strict";
import {
  type Actor,
  type ActorContext,
  ActorError,
  ActorErrorKind,
  type ActorFailure,
  type ActorRef,
  ActorSystem,
  AskTimeoutError,
  type Cancellable,
  isActorError,
  type Logger,
  MailboxFullError,
  resolveSupervision,
  type RuntimeClock,
  Supervisor,
} from "../../../actors/runtime/index.ts";

// ---------------------------------------------------------------- helpers

/** Timers fire only inside `advance`, in due order (ties in creation order), including timers they create. */
class FakeClock implements RuntimeClock {
  private t = 0;
  private seq = 0;
  private readonly timers = new Map<number, { at: number; fn: () => void }>();

  now(): number {
    return this.t;
  }

  setTimer(fn: () => void, delayMs: number): Cancellable {
    const id = ++this.seq;
    this.timers.set(id, { at: this.t + delayMs, fn });
    return { cancel: () => void this.timers.delete(id) };
  }

  get pending(): number {
    return this.timers.size;
  }

  advance(ms: number): void {
    const end = this.t + ms;
    while (true) {
      let next: [number, { at: number; fn: () => void }] | undefined;
      for (const e of this.timers) if (e[1].at <= end && (next === undefined || e[1].at < next[1].at)) next = e;
      if (next === undefined) break;
      this.timers.delete(next[0]);
      this.t = Math.max(this.t, next[1].at);
      next[1].fn();
    }
    this.t = end;
  }
}

interface LogLine {
  level: string;
  msg: string;
  fields: Record<string, unknown>;
}

function recordingLogger(): { log: Logger; lines: LogLine[] } {
  const lines: LogLine[] = [];
  const at =
    (level: string) =>
    (msg: string, fields?: Record<string, unknown>): void =>
      void lines.push({ level, msg, fields: fields ?? {} });
  return { log: { debug: at("debug"), info: at("info"), warn: at("warn"), error: at("error") }, lines };
}

interface Deferred<T> {
  promise: Promise<T>;
  resolve: (v: T) => void;
  reject: (e: unknown) => void;
}

function deferred<T = void>(): Deferred<T> {
  let resolve: (v: T) => void = () => {};
  let reject: (e: unknown) => void = () => {};
  const promise = new Promise<T>((res, rej) => {
    resolve = res;
    reject = rej;
  });
  return { promise, resolve, reject };
}

/** Lets every pending microtask and immediate run (mailbox loops, lifecycle steps); no wall-clock waiting. */
async function settle(rounds = 20): Promise<void> {
  for (let i = 0; i < rounds; i++) await new Promise((r) => setImmediate(r));
}

/** Polls a condition on the event loop; generous bound, fails loudly instead of hanging. */
async function eventually(cond: () => boolean, what: string, ms = 900): Promise<void> {
  const deadline = Date.now() + ms;
  while (!cond()) {
    if (Date.now() > deadline) assert.fail(`timed out waiting for: ${what}`);
    await new Promise((r) => setImmediate(r));
  }
}

function fakeSystem(): { system: ActorSystem; clock: FakeClock; lines: LogLine[] } {
  const clock = new FakeClock();
  const { log, lines } = recordingLogger();
  return { system: new ActorSystem({ clock, log, random: () => 0.5 }), clock, lines };
}

// ---------------------------------------------------------------- mailbox

type WorkMsg = { type: "work"; n: number } | { type: "report"; reply: (r: { seen: number[]; maxActive: number }) => void };

class Worker implements Actor<WorkMsg> {
  private readonly seen: number[] = [];
  private active = 0;
  private maxActive = 0;

  async receive(msg: WorkMsg): Promise<void> {
    switch (msg.type) {
      case "work": {
        this.active++;
        this.maxActive = Math.max(this.maxActive, this.active);
        // Varying suspension points: a later message must still not start before this one ends.
        for (let i = 0; i < msg.n % 4; i++) await new Promise((r) => setImmediate(r));
        if (msg.n % 5 === 0) await new Promise((r) => setTimeout(r, 0));
        this.seen.push(msg.n);
        this.active--;
        return;
      }
      case "report":
        msg.reply({ seen: [...this.seen], maxActive: this.maxActive });
        return;
    }
  }
}

test("runtime - one message at a time, in order, even when receive is async", async () => {
  const system = new ActorSystem({ log: recordingLogger().log });
  try {
    const ref = system.spawn<WorkMsg>("worker", () => new Worker());
    for (let n = 0; n < 40; n++) ref.tell({ type: "work", n });
    const r = await system.ask<WorkMsg, { seen: number[]; maxActive: number }>(ref, (reply) => ({ type: "report", reply }), 900);
    assert.deepEqual(r.seen, Array.from({ length: 40 }, (_, i) => i));
    assert.equal(r.maxActive, 1);
  } finally {
    await system.shutdown();
  }
});

type GateMsg = { type: "hold"; gate: Promise<void>; entered: () => void } | { type: "note"; n: number };

class Gated implements Actor<GateMsg> {
  constructor(private readonly notes: number[]) {}

  async receive(msg: GateMsg): Promise<void> {
    switch (msg.type) {
      case "hold":
        msg.entered();
        await msg.gate;
        return;
      case "note":
        this.notes.push(msg.n);
        return;
    }
  }
}

test("runtime - busyHandlers names an actor held by one message (type, since, how long) until the message settles", async () => {
  const { system, clock } = fakeSystem();
  try {
    const notes: number[] = [];
    const ref = system.spawn<GateMsg>("gated", () => new Gated(notes));
    ref.tell({ type: "note", n: 1 });
    await settle();
    assert.deepEqual(system.busyHandlers(0), [], "an idle actor is not busy");
    const gate = deferred();
    const entered = deferred();
    clock.advance(5);
    ref.tell({ type: "hold", gate: gate.promise, entered: () => entered.resolve() });
    await entered.promise;
    clock.advance(20_000);
    ref.tell({ type: "note", n: 2 });
    await settle();
    assert.deepEqual(system.busyHandlers(15_000), [{ actor: "gated", message: "hold", since: 5, ms: 20_000 }]);
    assert.deepEqual(system.busyHandlers(30_000), [], "below the threshold: not reported");
    assert.deepEqual(notes, [1], "the message behind it waits");
    gate.resolve();
    await eventually(() => notes.length === 2, "the next message handled");
    assert.deepEqual(system.busyHandlers(0), []);
  } finally {
    await system.shutdown();
  }
});

test("runtime - a bounded mailbox refuses with MailboxFullError, and accepts again once drained", async () => {
  const system = new ActorSystem({ log: recordingLogger().log });
  try {
    const notes: number[] = [];
    const ref = system.spawn<GateMsg>("bounded", () => new Gated(notes), { mailboxCapacity: 2 });
    const gate = deferred();
    const entered = deferred();
    ref.tell({ type: "hold", gate: gate.promise, entered: entered.resolve });
    await entered.promise; // the held message is out of the queue; capacity counts queued ones
    ref.tell({ type: "note", n: 1 });
    ref.tell({ type: "note", n: 2 });
    assert.throws(
      () => ref.tell({ type: "note", n: 3 }),
      (e: unknown) => e instanceof MailboxFullError && e.kind === ActorErrorKind.MailboxFull && e.retryable && e.capacity === 2,
    );
    gate.resolve();
    await eventually(() => notes.length === 2, "queued notes handled");
    ref.tell({ type: "note", n: 4 });
    await eventually(() => notes.length === 3, "note after backpressure");
    assert.deepEqual(notes, [1, 2, 4]);
  } finally {
    await system.shutdown();
  }
});

type PayloadMsg = { type: "payload"; data: Uint8Array } | { type: "note"; n: number };

class Consumer implements Actor<PayloadMsg> {
  handled = 0;
  receive(msg: PayloadMsg): void {
    if (msg.type === "payload") this.handled++;
  }
}

/**
 * Sends `n` payloads and returns weak references to them. A separate synchronous function on purpose: a payload
 * created in the async test body could stay reachable from that function's saved registers across an await.
 */
function tellPayloads(ref: ActorRef<PayloadMsg>, n: number): Array<WeakRef<Uint8Array>> {
  const refs: Array<WeakRef<Uint8Array>> = [];
  for (let i = 0; i < n; i++) {
    const data = new Uint8Array(1024);
    refs.push(new WeakRef(data));
    ref.tell({ type: "payload", data });
  }
  return refs;
}

test("runtime - a handled message is no longer reachable from the mailbox (nothing held until a compaction)", async () => {
  // A writer's mailbox carries decoded column batches: a queue that kept its consumed prefix alive held ~130 MB.
  setFlagsFromString("--expose-gc");
  const gc = runInNewContext("gc") as () => void;
  const system = new ActorSystem({ log: recordingLogger().log });
  try {
    const consumer = new Consumer();
    const ref = system.spawn<PayloadMsg>("consumer", () => consumer);
    const handled: Array<WeakRef<Uint8Array>> = [];
    // Fewer than the old compaction threshold (1024), in two bursts with a drained queue between them.
    for (let burst = 0; burst < 2; burst++) {
      handled.push(...tellPayloads(ref, 50));
      await eventually(() => consumer.handled === 50 * (burst + 1), "payloads handled");
    }
    // Let the mailbox loop finish its turn, then collect: only the queue could still hold the payloads.
    await settle();
    gc();
    const alive = handled.filter((w) => w.deref() !== undefined).length;
    assert.equal(alive, 0, `${alive} handled payloads are still reachable`);
    // The mailbox still works after being emptied.
    ref.tell({ type: "payload", data: new Uint8Array(1) });
    await eventually(() => consumer.handled === 101, "payload after drain");
  } finally {
    await system.shutdown();
  }
});

// ---------------------------------------------------------------- timers

type TimerMsg =
  | { type: "arm"; id: string; delayMs: number }
  | { type: "disarm"; id: string }
  | { type: "fire"; id: string }
  | { type: "tick"; gate?: Promise<void> };

class TimerUser implements Actor<TimerMsg> {
  private readonly handles = new Map<string, Cancellable>();

  constructor(
    private readonly events: string[],
    private readonly repeat?: { intervalMs: number; initialDelayMs?: number; gates: Array<Promise<void>> },
  ) {}

  preStart(ctx: ActorContext<TimerMsg>): void {
    if (this.repeat !== undefined) {
      const opts = this.repeat.initialDelayMs === undefined ? {} : { initialDelayMs: this.repeat.initialDelayMs };
      ctx.scheduleRepeatedly(this.repeat.intervalMs, { type: "tick" }, opts);
    }
  }

  async receive(msg: TimerMsg, ctx: ActorContext<TimerMsg>): Promise<void> {
    switch (msg.type) {
      case "arm":
        this.handles.set(msg.id, ctx.scheduleOnce(msg.delayMs, { type: "fire", id: msg.id }));
        return;
      case "disarm":
        this.handles.get(msg.id)?.cancel();
        return;
      case "fire":
        this.events.push(`fire:${msg.id}`);
        return;
      case "tick": {
        this.events.push("tick");
        const gate = this.repeat?.gates.shift();
        if (gate !== undefined) await gate;
        return;
      }
    }
  }
}

test("runtime - scheduleOnce delivers once after its delay; a cancelled timer never delivers", async () => {
  const { system, clock } = fakeSystem();
  try {
    const events: string[] = [];
    const ref = system.spawn<TimerMsg>("once", () => new TimerUser(events));
    ref.tell({ type: "arm", id: "a", delayMs: 100 });
    ref.tell({ type: "arm", id: "b", delayMs: 100 });
    ref.tell({ type: "disarm", id: "b" });
    await settle();
    clock.advance(99);
    await settle();
    assert.deepEqual(events, []);
    clock.advance(1);
    await settle();
    assert.deepEqual(events, ["fire:a"]);
    clock.advance(10_000);
    await settle();
    assert.deepEqual(events, ["fire:a"]);
    assert.equal(clock.pending, 0);
  } finally {
    await system.shutdown();
  }
});

test("runtime - a repeated timer keeps at most one tick pending behind a slow receive", async () => {
  const { system, clock, lines } = fakeSystem();
  try {
    const events: string[] = [];
    const slow = deferred();
    const ref = system.spawn<TimerMsg>("repeat", () => new TimerUser(events, { intervalMs: 10, initialDelayMs: 0, gates: [slow.promise] }));
    await settle();
    clock.advance(0); // initialDelayMs 0: the first tick is due at once
    await settle();
    assert.deepEqual(events, ["tick"]); // and its receive is now stuck on `slow`
    clock.advance(100); // ten intervals: one tick queues, the other nine are skipped
    await settle();
    assert.deepEqual(events, ["tick"]);
    slow.resolve();
    await settle();
    assert.deepEqual(events, ["tick", "tick"]);
    assert.ok(lines.some((l) => l.msg.startsWith("timer tick skipped")));
    clock.advance(10); // ticking resumes at the interval
    await settle();
    assert.deepEqual(events, ["tick", "tick", "tick"]);
    await system.stop(ref);
    assert.equal(clock.pending, 0, "stop cancels the repeated timer");
  } finally {
    await system.shutdown();
  }
});

test("runtime - stopping an actor cancels its timers; queued ticks are not delivered", async () => {
  const { system, clock } = fakeSystem();
  const events: string[] = [];
  const ref = system.spawn<TimerMsg>("timers", () => new TimerUser(events, { intervalMs: 50, gates: [] }));
  ref.tell({ type: "arm", id: "later", delayMs: 500 });
  await settle();
  assert.equal(clock.pending, 2);
  await system.stop(ref);
  assert.equal(clock.pending, 0);
  clock.advance(1000);
  await settle();
  assert.deepEqual(events, []);
  await system.shutdown();
});

// ---------------------------------------------------------------- supervision

type CounterMsg =
  | { type: "add"; n: number }
  | { type: "boom"; thrown: unknown }
  | { type: "get"; reply: (r: { count: number; incarnation: number }) => void };

class Counter implements Actor<CounterMsg> {
  private count = 0;

  constructor(
    private readonly incarnation: number,
    private readonly stops: number[],
  ) {}

  receive(msg: CounterMsg): void {
    switch (msg.type) {
      case "add":
        this.count += msg.n;
        return;
      case "boom":
        throw msg.thrown;
      case "get":
        msg.reply({ count: this.count, incarnation: this.incarnation });
        return;
    }
  }

  postStop(): void {
    this.stops.push(this.incarnation);
  }
}

test("runtime - a failed actor restarts fresh after an exponential back-off; queued messages survive, the failing one is dropped", async () => {
  const { system, clock, lines } = fakeSystem();
  try {
    let built = 0;
    const stops: number[] = [];
    const failures: ActorFailure[] = [];
    const ref = system.spawn<CounterMsg>("counter", () => new Counter(++built, stops), {
      supervision: { minBackoffMs: 100, maxBackoffMs: 1000, resetAfterMs: 1000, maxRestarts: 10, withinMs: 60_000, onFailure: (f) => failures.push(f) },
    });
    const get = (): Promise<{ count: number; incarnation: number }> =>
      system.ask<CounterMsg, { count: number; incarnation: number }>(ref, (reply) => ({ type: "get", reply }), 10_000);

    ref.tell({ type: "add", n: 5 });
    assert.deepEqual(await get(), { count: 5, incarnation: 1 });

    // A non-Error throw, then two messages that arrive while the actor is down.
    ref.tell({ type: "boom", thrown: "kaput" });
    ref.tell({ type: "add", n: 1 });
    ref.tell({ type: "add", n: 2 });
    await settle();
    assert.equal(failures.length, 1);
    const f = failures[0];
    assert.ok(f !== undefined && f.error instanceof Error, "non-Error throws are normalised");
    assert.equal(f.error.message, "kaput");
    assert.equal(f.phase, "receive");
    assert.deepEqual(f.message, { type: "boom", thrown: "kaput" });
    const logged = lines.find((l) => l.level === "error" && l.fields["actor"] === "counter");
    assert.ok(logged !== undefined && logged.fields["err"] instanceof Error && logged.fields["messageType"] === "boom");
    assert.deepEqual(stops, [1], "the failed instance got its postStop");
    assert.equal(ref.stopped, false);

    clock.advance(99);
    await settle();
    assert.equal(built, 1, "still backing off");
    clock.advance(1);
    await settle();
    assert.equal(built, 2);
    assert.deepEqual(await get(), { count: 3, incarnation: 2 }, "fresh state; queued messages kept, failing one dropped");

    // The second consecutive failure waits twice as long.
    ref.tell({ type: "boom", thrown: new Error("again") });
    await settle();
    clock.advance(199);
    await settle();
    assert.equal(built, 2);
    clock.advance(1);
    await settle();
    assert.equal(built, 3);

    // A healthy run of resetAfterMs brings the back-off back to the minimum.
    clock.advance(1000);
    ref.tell({ type: "boom", thrown: new Error("after a quiet period") });
    await settle();
    clock.advance(100);
    await settle();
    assert.equal(built, 4);
    assert.deepEqual(await get(), { count: 0, incarnation: 4 });
  } finally {
    await system.shutdown();
  }
});

test("runtime - back-off doubles up to the maximum with ±jitter, resets after a healthy run, counts restarts in a window", () => {
  const strategy = resolveSupervision({ minBackoffMs: 100, maxBackoffMs: 500, jitter: 0.2, resetAfterMs: 1000, maxRestarts: 3, withinMs: 50 });
  const s = new Supervisor(strategy, () => 0.5);
  // Each failure 60 ms after the previous one: outside the 50 ms window, so never escalated.
  const delays = [0, 60, 120, 180, 240].map((t) => {
    const d = s.decide(t);
    assert.equal(d.action, "restart");
    return d.action === "restart" ? d.delayMs : -1;
  });
  assert.deepEqual(delays, [100, 200, 400, 500, 500]);
  s.running(300);
  assert.deepEqual(s.decide(1300), { action: "restart", delayMs: 100, attempt: 1 });

  const low = new Supervisor(strategy, () => 0).decide(0);
  const high = new Supervisor(strategy, () => 0.999999).decide(0);
  assert.deepEqual([low.action === "restart" && low.delayMs, high.action === "restart" && high.delayMs], [80, 120]);

  const tight = new Supervisor(strategy, () => 0.5);
  assert.deepEqual(
    [0, 1, 2, 3].map((t) => tight.decide(t).action),
    ["restart", "restart", "restart", "escalate"],
  );
  assert.throws(() => resolveSupervision({ minBackoffMs: 10, maxBackoffMs: 5 }), (e: unknown) => isActorError(e, ActorErrorKind.InvalidArgument));
  assert.throws(() => resolveSupervision({ jitter: 1 }), (e: unknown) => isActorError(e, ActorErrorKind.InvalidArgument));
});

test("runtime - after maxRestarts within the window the actor is stopped and onEscalate is called", async () => {
  const { system, clock } = fakeSystem();
  try {
    let built = 0;
    const escalated: Error[] = [];
    const ref = system.spawn<CounterMsg>(
      "doomed",
      () => {
        const n = ++built;
        return {
          preStart: () => Promise.reject(new Error(`cannot start #${n}`)),
          receive: () => {},
        };
      },
      { supervision: { minBackoffMs: 10, maxBackoffMs: 1000, maxRestarts: 2, withinMs: 10_000, onEscalate: (e) => escalated.push(e) } },
    );
    await settle();
    clock.advance(10); // restart 1
    await settle();
    clock.advance(20); // restart 2
    await settle();
    assert.equal(built, 3);
    assert.equal(escalated.length, 1);
    assert.equal(escalated[0]?.message, "cannot start #3");
    assert.equal(ref.stopped, true);
    assert.equal(system.lookup("doomed"), undefined, "the name is free again");
    clock.advance(10_000);
    await settle();
    assert.equal(built, 3, "no restart after escalation");
    assert.doesNotThrow(() => ref.tell({ type: "add", n: 1 }), "telling a stopped actor is a dead letter");
  } finally {
    await system.shutdown();
  }
});

test("runtime - a child that gives up fails its parent, whose fresh instance spawns a fresh child", async () => {
  const { system, clock } = fakeSystem();
  try {
    let parents = 0;
    let children = 0;
    type ParentMsg = { type: "noop" };
    const parent = system.spawn<ParentMsg>(
      "parent",
      () => {
        parents++;
        return {
          preStart: (ctx: ActorContext<ParentMsg>) => {
            children++;
            ctx.spawn<CounterMsg>("child", () => new Counter(children, []), { supervision: { maxRestarts: 0 } });
          },
          receive: () => {},
        };
      },
      { supervision: { minBackoffMs: 10 } },
    );
    await settle();
    const child1 = system.lookup<CounterMsg>("parent/child");
    assert.ok(child1 !== undefined);
    child1.tell({ type: "boom", thrown: new Error("child broke") });
    await settle();
    assert.equal(child1.stopped, true);
    clock.advance(10);
    await settle();
    assert.equal(parents, 2);
    const child2 = system.lookup<CounterMsg>("parent/child");
    assert.ok(child2 !== undefined && child2 !== child1 && !child2.stopped);
    assert.equal(parent.stopped, false);
  } finally {
    await system.shutdown();
  }
});

// ---------------------------------------------------------------- ask

type PingMsg = { type: "ping"; reply: (r: "pong") => void } | { type: "ignore"; reply: (r: "pong") => void };

const pinger = (): Actor<PingMsg> => ({
  receive(msg: PingMsg): void {
    switch (msg.type) {
      case "ping":
        msg.reply("pong");
        return;
      case "ignore":
        return;
    }
  },
});

test("runtime - ask resolves with the reply, rejects with AskTimeoutError, and refuses stopped actors", async () => {
  const { system, clock } = fakeSystem();
  try {
    const ref = system.spawn<PingMsg>("pinger", pinger);
    assert.equal(await system.ask<PingMsg, "pong">(ref, (reply) => ({ type: "ping", reply }), 50), "pong");

    const silent = system.ask<PingMsg, "pong">(ref, (reply) => ({ type: "ignore", reply }), 50);
    await settle();
    clock.advance(50);
    await assert.rejects(silent, (e: unknown) => e instanceof AskTimeoutError && e.timeoutMs === 50 && e.actor === "pinger");

    await system.stop(ref);
    await assert.rejects(
      system.ask<PingMsg, "pong">(ref, (reply) => ({ type: "ping", reply }), 50),
      (e: unknown) => e instanceof ActorError && e.kind === ActorErrorKind.Stopped,
    );
  } finally {
    await system.shutdown();
  }
});

// ---------------------------------------------------------------- stop, drain, shutdown

type StopMsg =
  | { type: "hold"; gate: Promise<void>; entered: () => void }
  | { type: "note"; n: number; slow?: Promise<string> }
  | { type: "piped"; value: string };

class Recorder implements Actor<StopMsg> {
  constructor(
    private readonly events: string[],
    private readonly abortedAfterHold: boolean[],
  ) {}

  async receive(msg: StopMsg, ctx: ActorContext<StopMsg>): Promise<void> {
    switch (msg.type) {
      case "hold":
        msg.entered();
        await msg.gate;
        this.abortedAfterHold.push(ctx.signal.aborted);
        return;
      case "note":
        this.events.push(`note${msg.n}`);
        if (msg.slow !== undefined) {
          ctx.pipeToSelf(
            msg.slow,
            (value) => ({ type: "piped", value }),
            (e) => ({ type: "piped", value: e.message }),
          );
        }
        return;
      case "piped":
        this.events.push(`piped:${msg.value}`);
        return;
    }
  }

  postStop(): void {
    this.events.push("postStop");
  }
}

test("runtime - stop waits for the message in progress, drops the queue, aborts the signal, runs postStop once", async () => {
  const system = new ActorSystem({ log: recordingLogger().log });
  const events: string[] = [];
  const aborted: boolean[] = [];
  const ref = system.spawn<StopMsg>("dropper", () => new Recorder(events, aborted));
  const gate = deferred();
  const entered = deferred();
  ref.tell({ type: "hold", gate: gate.promise, entered: entered.resolve });
  for (let n = 1; n <= 3; n++) ref.tell({ type: "note", n });
  await entered.promise;
  const stopped = system.stop(ref);
  assert.equal(ref.stopped, true);
  ref.tell({ type: "note", n: 4 }); // dead letter, no throw
  gate.resolve();
  await stopped;
  assert.deepEqual(events, ["postStop"]);
  assert.deepEqual(aborted, [true], "a long receive can observe that its actor is stopping");
  assert.equal(system.lookup("dropper"), undefined);
  await system.stop(ref); // idempotent
  await system.shutdown();
});

test("runtime - stop with drain handles queued messages and pipeToSelf results already under way, then stops", async () => {
  const system = new ActorSystem({ log: recordingLogger().log });
  const events: string[] = [];
  const ref = system.spawn<StopMsg>("drainer", () => new Recorder(events, []));
  const gate = deferred();
  const entered = deferred();
  const slow = deferred<string>();
  ref.tell({ type: "hold", gate: gate.promise, entered: entered.resolve });
  ref.tell({ type: "note", n: 1 });
  ref.tell({ type: "note", n: 2, slow: slow.promise });
  ref.tell({ type: "note", n: 3 });
  await entered.promise;
  let done = false;
  const stopped = system.stop(ref, { drain: true }).then(() => void (done = true));
  ref.tell({ type: "note", n: 99 }); // refused: draining covers what was queued before the stop
  gate.resolve();
  await eventually(() => events.length === 3, "queued notes drained");
  await settle();
  assert.equal(done, false, "the drain waits for the piped result");
  slow.resolve("flushed");
  await stopped;
  assert.deepEqual(events, ["note1", "note2", "note3", "piped:flushed", "postStop"]);
  await system.shutdown();
});

test("runtime - shutdown stops children before parents, newest top-level actor first", async () => {
  const { system } = fakeSystem();
  const order: string[] = [];
  type NoMsg = { type: "noop" };
  const node = (kids: string[]) => (): Actor<NoMsg> => ({
    preStart(ctx: ActorContext<NoMsg>): void {
      for (const k of kids) ctx.spawn<NoMsg>(k, node([]));
    },
    receive(): void {},
    postStop(ctx: ActorContext<NoMsg>): void {
      order.push(ctx.name);
    },
  });
  system.spawn("a", node([]));
  system.spawn("b", node(["x", "y"]));
  system.spawn("c", node(["z"]));
  await settle();
  assert.deepEqual(system.names(), ["a", "b", "c", "b/x", "b/y", "c/z"]);
  await system.shutdown();
  assert.deepEqual(order, ["c/z", "c", "b/y", "b/x", "b", "a"]);
  assert.deepEqual(system.names(), []);
  assert.throws(() => system.spawn("late", node([])), (e: unknown) => isActorError(e, ActorErrorKind.Stopped));
});

test("runtime - names are unique and validated; a throwing factory fails spawn and leaves the name free", async () => {
  const { system } = fakeSystem();
  try {
    system.spawn<PingMsg>("one", pinger);
    assert.throws(() => system.spawn<PingMsg>("one", pinger), (e: unknown) => isActorError(e, ActorErrorKind.NameTaken) && /'one' already exists/.test(e.message));
    for (const bad of ["", "a/b", " padded"]) {
      assert.throws(() => system.spawn<PingMsg>(bad, pinger), (e: unknown) => isActorError(e, ActorErrorKind.InvalidArgument));
    }
    assert.throws(() =>
      system.spawn<PingMsg>("broken", () => {
        throw new Error("bad config");
      }),
    /bad config/);
    assert.equal(system.lookup("broken"), undefined);
    const ref: ActorRef<PingMsg> = system.spawn<PingMsg>("broken", pinger);
    assert.equal(system.lookup<PingMsg>("broken"), ref);
  } finally {
    await system.shutdown();
  }
});

// ---------------------------------------------------------------- pipeToSelf

type PipeMsg =
  | { type: "start"; work: Promise<number> }
  | { type: "later"; delayMs: number; repeat?: boolean }
  | { type: "note"; n: number }
  | { type: "ok"; value: number }
  | { type: "failed"; error: Error }
  | { type: "boom" };

class Piper implements Actor<PipeMsg> {
  constructor(
    private readonly id: number,
    private readonly events: string[],
  ) {}

  receive(msg: PipeMsg, ctx: ActorContext<PipeMsg>): void {
    switch (msg.type) {
      case "start":
        ctx.pipeToSelf(
          msg.work,
          (value) => ({ type: "ok", value }),
          (error) => ({ type: "failed", error }),
        );
        return;
      case "later":
        if (msg.repeat === true) ctx.scheduleRepeatedly(msg.delayMs, { type: "note", n: 0 });
        else ctx.scheduleOnce(msg.delayMs, { type: "note", n: 0 });
        return;
      case "note":
        this.events.push(`#${this.id} note${msg.n}`);
        return;
      case "ok":
        this.events.push(`#${this.id} ok:${msg.value}`);
        return;
      case "failed":
        this.events.push(`#${this.id} failed:${msg.error instanceof Error ? msg.error.message : "not an Error"}`);
        return;
      case "boom":
        throw new Error("boom");
    }
  }
}

test("runtime - pipeToSelf returns async results as messages without blocking the mailbox", async () => {
  const { system } = fakeSystem();
  try {
    const events: string[] = [];
    const ref = system.spawn<PipeMsg>("piper", () => new Piper(1, events));
    const good = deferred<number>();
    const bad = deferred<number>();
    ref.tell({ type: "start", work: good.promise });
    ref.tell({ type: "start", work: bad.promise });
    ref.tell({ type: "note", n: 1 });
    await eventually(() => events.length === 1, "note handled while the work is pending");
    bad.reject("nope"); // not an Error: normalised before onErr
    good.resolve(42);
    await eventually(() => events.length === 3, "both outcomes delivered");
    assert.deepEqual(events.slice(0, 1), ["#1 note1"]);
    assert.deepEqual(events.slice(1).sort(), ["#1 failed:nope", "#1 ok:42"]);
  } finally {
    await system.shutdown();
  }
});

test("runtime - results and timers of a discarded instance never reach its fresh successor", async () => {
  const { system, clock } = fakeSystem();
  try {
    const events: string[] = [];
    let built = 0;
    const ref = system.spawn<PipeMsg>("stale", () => new Piper(++built, events), { supervision: { minBackoffMs: 10 } });
    const work = deferred<number>();
    ref.tell({ type: "start", work: work.promise });
    ref.tell({ type: "later", delayMs: 50 });
    ref.tell({ type: "later", delayMs: 5, repeat: true });
    await settle();
    ref.tell({ type: "boom" });
    clock.advance(5); // a tick of the doomed instance is now queued behind the failing message
    await settle();
    clock.advance(10);
    await settle();
    assert.equal(built, 2);
    work.resolve(7); // completes after instance #1 was discarded
    ref.tell({ type: "note", n: 1 });
    await eventually(() => events.length === 1, "fresh instance handles new messages");
    clock.advance(100); // past the discarded instance's timer
    await settle();
    assert.deepEqual(events, ["#2 note1"]);
  } finally {
    await system.shutdown();
  }
});
