// One benchmark process: a peer server, a peer client, or an Astra client, chosen by argv. Each talks
// to the suite (bench/run.ts) with one JSON object per stdout line.
//   node dist/bench/worker.js serve <bare|bare-durable|jsonrpc|grpc> <socket>
//   node dist/bench/worker.js peer <kind> rt|rtblocks <socket>
//   node dist/bench/worker.js peer <kind> stream <socket> <serverPid> <count> <size> [warmupCount]
//   node dist/bench/worker.js peer <kind> fan <socket> <count>
//   node dist/bench/worker.js peer <kind> trigger <socket> <count> <size>
//   node dist/bench/worker.js astra rt|rtblocks|stream|fan|idle|observe <home> ...
//   (rtblocks: round trips block by block as the parent asks on stdin; see lib.ts roundTripBlocks)
//   (astra stream <home> <engine> <text> [warmupText])
// A warm-up runs the same kind of stream first in the same process, unmeasured, so the figure is the
// steady state of both processes (JIT-compiled, heaps grown) — alike for every side.
import { AstraClient } from '../client/index.js';
import type { SessionEvent } from '../protocol/index.js';
import { procCpuUs, roundTripBlocks, roundTrips, tell, wallMs } from './lib.js';
import { bare, bareDurable } from './peers/bare.js';
import { grpcPeer } from './peers/grpc.js';
import { jsonrpc } from './peers/jsonrpc.js';
import type { Peer, PeerClient } from './peers/peer.js';

const PEERS: Record<string, Peer> = { bare, 'bare-durable': bareDurable, jsonrpc, grpc: grpcPeer };


/** Measures a stream from its start to its last event: rate, and CPU per event on both sides. */
function streamMeter(serverPid: number) {
  let events = 0;
  let bytes = 0;
  let t0 = 0n;
  let cpu0: NodeJS.CpuUsage | undefined;
  let serverCpu0 = 0;
  return {
    start() {
      serverCpu0 = procCpuUs(serverPid);
      cpu0 = process.cpuUsage();
      t0 = process.hrtime.bigint();
    },
    onEvent(n: number) {
      events++;
      bytes += n;
    },
    result(): Record<string, number> {
      const sec = Number(process.hrtime.bigint() - t0) / 1e9;
      const cpu = process.cpuUsage(cpu0);
      const serverCpu = procCpuUs(serverPid) - serverCpu0;
      return {
        events,
        bytes,
        seconds: sec,
        eventsPerSec: events / sec,
        mbPerSec: bytes / sec / 1e6,
        clientCpuUsPerEvent: (cpu.user + cpu.system) / events,
        serverCpuUsPerEvent: serverCpu / events,
      };
    },
  };
}

async function peerRole(kind: string, scenario: string, args: string[]): Promise<void> {
  const peer = PEERS[kind];
  if (!peer) throw new Error(`unknown peer "${kind}"`);
  const socketPath = args[0]!;
  const client: PeerClient = await peer.connect(socketPath);
  switch (scenario) {
    case 'rt':
      tell(await roundTrips((n) => client.echo(n)));
      break;
    case 'rtblocks':
      await roundTripBlocks((n) => client.echo(n));
      break;
    case 'stream': {
      const m = streamMeter(Number(args[1]));
      const count = Number(args[2]);
      const size = Number(args[3]);
      if (args[4]) await client.stream({ count: Number(args[4]), size }, () => {});
      m.start();
      await client.stream({ count, size }, (n) => m.onEvent(n));
      tell(m.result());
      break;
    }
    case 'fan': {
      const count = Number(args[1]);
      let events = 0;
      let done!: () => void;
      const all = new Promise<void>((r) => (done = r));
      await client.subscribe(() => {
        if (++events === count) done();
      });
      tell({ ready: true });
      await all;
      tell({ endMs: wallMs(), events });
      break;
    }
    case 'trigger': {
      const startMs = wallMs();
      await client.broadcast({ count: Number(args[1]), size: Number(args[2]) });
      tell({ startMs, queuedMs: wallMs() });
      break;
    }
    default:
      throw new Error(`unknown scenario "${scenario}"`);
  }
  client.close();
}

// ---- Astra, through AstraClient against a real daemon ----

function connectAstra(home: string, name: string): Promise<AstraClient> {
  return AstraClient.connect({ clientName: name, home, autoStart: false, reconnect: false });
}

/** Resolves when the turn's `turn.completed` arrives; counts command.output events and bytes (each event once: the Subscription dedups across session/lagged). */
function countTurn(client: AstraClient, sessionId: string, sinceSeq: number, onOutput: (bytes: number) => void) {
  let resolveDone!: (ev: SessionEvent) => void;
  const done = new Promise<SessionEvent>((r) => (resolveDone = r));
  const subscribed = client.subscribe(sessionId, {
    sinceSeq,
    onEvent: (ev) => {
      if (ev.type === 'command.output') onOutput((ev.data as { data: Uint8Array }).data.length);
      else if (ev.type === 'turn.completed') resolveDone(ev);
    },
  });
  return { subscribed, done };
}

/** A new session on `engine` (auto-approved), under control and subscribed; `onSubscribed` runs just before the turn starts. Resolves with the turn's turn.completed. */
async function streamTurn(client: AstraClient, engine: string, title: string, text: string, onOutput: (bytes: number) => void, onSubscribed = () => {}) {
  const { session } = await client.session.create({ title, engine, approvalPolicy: 'auto' });
  await client.acquireController(session.id);
  const { subscribed, done } = countTurn(client, session.id, session.headSeq, onOutput);
  const sub = await subscribed;
  onSubscribed();
  await client.turn.start({ sessionId: session.id, input: { text } });
  return { completed: await done, sub };
}

async function astraRole(scenario: string, args: string[]): Promise<void> {
  const home = args[0]!;
  switch (scenario) {
    case 'rt': {
      const client = await connectAstra(home, 'bench-rt');
      tell(await roundTrips(() => client.ping()));
      await client.close();
      return;
    }
    case 'rtblocks': {
      const client = await connectAstra(home, 'bench-rt');
      await roundTripBlocks(() => client.ping());
      await client.close();
      return;
    }
    case 'stream': {
      // args: engine text [warmupText]
      const [engine, text, warmup] = [args[1]!, args[2]!, args[3]];
      const client = await connectAstra(home, 'bench-stream');
      if (warmup) await (await streamTurn(client, engine, 'bench warm-up', warmup, () => {})).sub.close();
      const m = streamMeter(client.daemonPid);
      const { completed } = await streamTurn(client, engine, 'bench stream', text, (n) => m.onEvent(n), () => m.start());
      tell({ ...m.result(), status: String((completed.data as { status?: unknown }).status) });
      await client.close();
      return;
    }
    case 'fan': {
      // args: sessionId sinceSeq — reports when the turn's turn.completed arrives.
      const client = await connectAstra(home, 'bench-observer');
      let events = 0;
      const { subscribed, done } = countTurn(client, args[1]!, Number(args[2]), () => events++);
      await subscribed;
      tell({ ready: true });
      await done;
      tell({ endMs: wallMs(), events });
      await client.close();
      return;
    }
    case 'idle': {
      // args: n — holds n idle connections until killed.
      const n = Number(args[1]);
      const clients: AstraClient[] = [];
      for (let i = 0; i < n; i++) clients.push(await AstraClient.connect({ clientName: `bench-idle-${i}`, home, autoStart: false, reconnect: false, pingIntervalMs: 0 }));
      tell({ ready: true, connections: clients.length });
      await new Promise(() => {});
      return;
    }
    case 'observe': {
      // args: sessionId — subscribes, then is SIGSTOPped by the suite; never reads again until SIGCONT.
      const client = await connectAstra(home, 'bench-stopped-observer');
      const sub = await client.subscribe(args[1]!, { sinceSeq: Number(args[2]), onEvent: () => {} });
      tell({ ready: true, headSeq: sub.headSeq });
      await new Promise(() => {});
      return;
    }
    default:
      throw new Error(`unknown astra scenario "${scenario}"`);
  }
}

async function main(argv: string[]): Promise<void> {
  const [role, a, b, ...rest] = argv;
  if (role === 'serve') {
    await PEERS[a!]!.serve(b!);
    tell({ ready: true, pid: process.pid });
    return; // the server runs until killed
  }
  if (role === 'peer') await peerRole(a!, b!, rest);
  else if (role === 'astra') await astraRole(a!, [b!, ...rest]);
  else throw new Error(`unknown role "${role}"`);
  process.exit(0);
}

main(process.argv.slice(2)).catch((e: unknown) => {
  tell({ error: e instanceof Error ? `${e.message}` : String(e) });
  process.exit(1);
});
