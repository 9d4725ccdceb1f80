// What a connection can use (docs/protocol.md, "Capabilities"): the initialize result's capabilities
// and `daemon/capabilities`. Each engine's availability comes from its own Engine.availability (the
// daemon names no engine here), each bounded by AVAILABILITY_TIMEOUT_MS; the methods listed are those
// this connection may call (an experimental one only when it opted in).
import os from 'node:os';
import { isExperimentalMethod, isMethodName, type EngineCapability } from '../protocol/index.js';
import { ASTRA_VERSION } from '../discovery/index.js';
import type { Engine } from '../runtime/index.js';
import type { Peer } from './peer.js';

/** An engine whose availability says nothing within this long is reported unavailable. */
export const AVAILABILITY_TIMEOUT_MS = 3000;

export interface CapabilitySource {
  engines: Readonly<Record<string, Engine>>;
  /** ASTRA_HOME when set, else the data directory. */
  home: string;
  /** Every method this daemon serves. */
  methods: readonly string[];
}

export interface Capabilities {
  methods: string[];
  engines: EngineCapability[];
  userAgent: string;
  home: string;
  platform: string;
  experimentalApi: boolean;
}

export const USER_AGENT = `astra/${ASTRA_VERSION} (node ${process.versions.node}; ${os.platform()} ${os.arch()})`;

/** The methods a connection may call: experimental ones only with experimentalApi. */
export function methodsFor(methods: readonly string[], peer: Peer): string[] {
  return methods.filter((m) => peer.experimentalApi || !isMethodName(m) || !isExperimentalMethod(m));
}

export async function capabilitiesFor(src: CapabilitySource, peer: Peer): Promise<Capabilities> {
  const engines = await Promise.all(Object.entries(src.engines).map(([name, engine]) => engineCapability(name, engine)));
  return { methods: methodsFor(src.methods, peer), engines, userAgent: USER_AGENT, home: src.home, platform: process.platform, experimentalApi: peer.experimentalApi };
}

async function engineCapability(name: string, engine: Engine): Promise<EngineCapability> {
  if (!engine.availability) return { name, available: true };
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<EngineCapability>((resolve) => {
    timer = setTimeout(() => resolve({ name, available: false, reason: `the engine did not say whether it is available within ${AVAILABILITY_TIMEOUT_MS} ms` }), AVAILABILITY_TIMEOUT_MS);
  });
  const checked = engine.availability().then(
    (a): EngineCapability => ({ name, available: a.available, ...(a.reason !== undefined ? { reason: a.reason } : {}), ...(a.terminal !== undefined ? { terminal: a.terminal } : {}) }),
    (e: unknown): EngineCapability => ({ name, available: false, reason: `its availability check failed: ${(e as Error)?.message ?? String(e)}` }),
  );
  try {
    return await Promise.race([checked, late]);
  } finally {
    clearTimeout(timer);
  }
}
