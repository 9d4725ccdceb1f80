// Types for protocol-schema.mjs (a plain .mjs so that node can run the generator without a build step of its own).
import type * as Protocol from '../protocol/index.js';

export type ProtocolModule = typeof Protocol;
export function buildProtocolSchema(p: ProtocolModule): Record<string, unknown>;
export function renderProtocolSchema(p: ProtocolModule): string;
