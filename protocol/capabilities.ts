// What a connection can use (docs/protocol.md §5, "Capabilities"): the engines this daemon has and
// whether each is available, the daemon's user agent, home and platform — in the initialize result
// and in `daemon/capabilities`. And the experimental surface: the event fields sent only to a
// connection that said `capabilities.experimentalApi: true` (the methods are marked in the method table).
import { arr, bool, obj, oneOf, opt, str, type Infer } from './schema.js';
import type { EventType } from './types.js';

/**
 * One engine. `available: false`: a session/create on it with the daemon's defaults is refused
 * (`reason` says why and what to do). `reason` on an available engine says how it runs degraded
 * (commands on pipes). `terminal`: where its commands run ('pty' a pseudo-terminal, 'pipes').
 */
export const engineCapabilitySchema = obj({
  name: str(),
  available: bool(),
  reason: opt(str()),
  terminal: opt(oneOf(['pty', 'pipes'] as const)),
});

export type EngineCapability = Infer<typeof engineCapabilitySchema>;

/** The part of the initialize result that says what this daemon and this connection can use. */
export const capabilitiesShape = {
  /** The engines this daemon has, each with its availability. */
  engines: opt(arr(engineCapabilitySchema)),
  /** `astra/<version> (node <version>; <platform> <arch>)`. */
  userAgent: opt(str()),
  /** The daemon's home (ASTRA_HOME, or the default). */
  home: opt(str()),
  /** Node's process.platform of the daemon: 'linux', 'darwin', ... */
  platform: opt(str()),
  /** This connection said experimentalApi: true: experimental methods and event fields are open to it. */
  experimentalApi: opt(bool()),
};

/**
 * Event fields sent only to connections that opted in (experimentalApi): left out for the others.
 * `acp.update`'s `update` is the agent's ACP update as it came (opaque, bounded): its shape follows
 * the ACP SDK's and may change with it, so a client that reads it says it knows that.
 */
export const EXPERIMENTAL_EVENT_FIELDS: { readonly [T in EventType]?: readonly string[] } = {
  'acp.update': ['update'],
};
