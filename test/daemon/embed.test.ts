// A library user embeds the host with their own engine (docs/client.md, "Embedding the daemon"): createDaemon({ engine }).
import fs from 'node:fs';
import { afterEach, describe, expect, it } from 'vitest';
import { AstraClient } from '../../client/index.js';
import { createDaemon, type Daemon, type Engine } from '../../daemon/index.js';
import { resolvePaths } from '../../discovery/index.js';
import { cleanupHome, envFor, makeHome } from '../helpers/processes.js';

const homes: string[] = [];
const daemons: Daemon[] = [];
afterEach(async () => {
  await Promise.all(daemons.splice(0).map((d) => d.stop('shutdown')));
  await Promise.all(homes.splice(0).map((h) => cleanupHome(h)));
});

/** An engine that answers in words instead of running commands. */
const echoEngine: Engine = {
  async runTurn(ctx) {
    const decision = await ctx.requestApproval({ command: `say ${ctx.input.text}`, cwd: ctx.cwd });
    if (decision !== 'approve') return { status: 'cancelled' };
    for (const word of ctx.input.text.split(' ')) ctx.emit('message.delta', { turnId: ctx.turnId, text: `${word} ` });
    ctx.emit('message.completed', { turnId: ctx.turnId, text: ctx.input.text });
    return { status: 'completed' };
  },
};

describe('embedding the daemon', () => {
  it('createDaemon({ engine }) serves clients with a custom engine, approvals included', async () => {
    const home = makeHome();
    homes.push(home);
    const env = envFor(home);
    const daemon = createDaemon({ env, engine: echoEngine, idleTimeoutMs: 0 });
    daemons.push(daemon);
    expect(await daemon.start()).toBe(true);
    expect(fs.existsSync(resolvePaths(env).recordPath)).toBe(true);

    const client = await AstraClient.connect({ clientName: 'embedder', env, autoStart: false });
    try {
      expect(client.daemonPid).toBe(process.pid);
      const { session } = await client.session.create({ approvalPolicy: 'ask' });
      expect(session.engine).toBe('custom');
      await client.acquireController(session.id);
      const asked: string[] = [];
      client.onApproval((req) => {
        asked.push(req.command);
        return 'approve';
      });
      const sub = await client.subscribe(session.id);
      await client.turn.start({ sessionId: session.id, input: { text: 'hello from an engine' } });
      const types: string[] = [];
      let text = '';
      for await (const e of sub) {
        types.push(e.type);
        if (e.type === 'message.delta') text += e.data.text;
        if (e.type === 'turn.completed') {
          expect(e.data.status).toBe('completed');
          break;
        }
      }
      expect(asked).toEqual(['say hello from an engine']);
      expect(text.trim()).toBe('hello from an engine');
      expect(types).toEqual(expect.arrayContaining(['approval.requested', 'approval.resolved', 'message.completed']));
    } finally {
      await client.close();
    }
    await daemon.stop('shutdown');
    expect(fs.existsSync(resolvePaths(env).recordPath)).toBe(false);
  });
});
