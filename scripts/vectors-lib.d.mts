// Types for vectors-lib.mjs (a plain .mjs so that node can run the generator against dist/).
import type * as Protocol from '../protocol/index.js';
import type * as Ipc from '../ipc/index.js';

export type ProtocolModule = typeof Protocol;
export type IpcModule = Pick<typeof Ipc, 'encode' | 'encodeFrame'>;

export interface WireVector {
  name: string;
  description: string;
  direction: 'client-to-daemon' | 'daemon-to-client';
  kind: 'request' | 'response' | 'error' | 'notification';
  method?: string;
  eventType?: string;
  rejectedWith?: Protocol.ErrorReason;
  message: unknown;
}

export const T0: number;
export function toMeaning(value: unknown): unknown;
export function fromMeaning(meaning: unknown): unknown;
export function fitPayload<T>(ipc: IpcModule, build: (n: number) => T, target: number): T;
export function patternBytes(length: number, seed?: number): Buffer;
export function maxRequestMessage(p: ProtocolModule, ipc: IpcModule): {
  id: number;
  method: 'turn/start';
  params: { sessionId: string; epoch: number; input: { text: string }; idempotencyKey: string };
};
export function maxFrameMessage(p: ProtocolModule, ipc: IpcModule): { id: number; result: unknown };
export function buildVectors(p: ProtocolModule, ipc: IpcModule): WireVector[];
export function renderVector(p: ProtocolModule, ipc: IpcModule, vector: WireVector): { bin: Buffer; json: string };
