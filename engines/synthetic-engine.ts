// The `synthetic` engine: a load generator for benchmarks and tests. Its input is
// `count=N size=B [batch=K]`: it emits N command.output events of B bytes each, K per tick, as fast
// as the runtime takes them (when emit() says the journal is behind, it waits for drained()),
// without running anything. A cancelled turn stops at the next tick.
import { AstraError, LIMITS } from '../protocol/index.js';
import type { Engine, EngineContext, EngineResult } from '../runtime/engine.js';

export interface SyntheticSpec {
  count: number;
  size: number;
  batch: number;
}

export function parseSyntheticSpec(text: string): SyntheticSpec {
  const spec: SyntheticSpec = { count: 1, size: 200, batch: 1000 };
  for (const part of text.trim().split(/\s+/).filter(Boolean)) {
    const m = /^(count|size|batch)=(\d+)$/.exec(part);
    if (!m) throw new AstraError('invalid_params', `synthetic engine input is "count=N size=B [batch=K]"; cannot read "${part}"`);
    spec[m[1] as keyof SyntheticSpec] = Number(m[2]);
  }
  if (spec.size > LIMITS.maxOutputChunkBytes) throw new AstraError('invalid_params', `synthetic engine: size must be at most ${LIMITS.maxOutputChunkBytes} bytes per event`);
  spec.batch = Math.max(1, spec.batch);
  return spec;
}

export function createSyntheticEngine(): Engine {
  return {
    events: ['command.output'],
    async runTurn(ctx: EngineContext): Promise<EngineResult> {
      let spec: SyntheticSpec;
      try {
        spec = parseSyntheticSpec(ctx.input.text);
      } catch (e) {
        return { status: 'failed', error: (e as Error).message };
      }
      const line = Buffer.alloc(spec.size, 'x');
      if (spec.size > 0) line[spec.size - 1] = 0x0a;
      for (let sent = 0; sent < spec.count; ) {
        if (ctx.signal.aborted) return { status: 'cancelled' };
        const end = Math.min(spec.count, sent + spec.batch);
        let behind = false;
        while (sent < end && !behind) {
          behind = !ctx.emit('command.output', { turnId: ctx.turnId, stream: 'stdout', data: line });
          sent++;
        }
        await new Promise((r) => setImmediate(r));
        if (behind) await ctx.drained();
      }
      return { status: 'completed', exitCode: 0 };
    },
  };
}
