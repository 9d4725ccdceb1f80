// What is secret stays secret (docs/secrets.md), through a real daemon: the journal's bytes, what an
// observer and the controller receive (events and approval/request) hold the masked text and the
// digests, never the secret; the commands still run with the real values.
import { describe, expect, it } from 'vitest';
import { createHash } from 'node:crypto';
import fs from 'node:fs';
import http from 'node:http';
import type net from 'node:net';
import path from 'node:path';
import { envFor, readRecordFile, runCli, useTempHomes, waitFor, type RecordShape } from '../helpers/processes.js';
import { rawClient, type Note } from '../helpers/raw-client.js';

const home = useTempHomes();

const client = (rec: RecordShape, name: string, notes: Note[], asked: unknown[]) =>
  rawClient(rec, name, notes, (_method, params) => {
    asked.push(params);
    return { decision: 'approve' };
  });


/** Every session event a connection received, single or batched. */
function events(notes: Note[]): any[] { // eslint-disable-line @typescript-eslint/no-explicit-any
  return notes.flatMap((n) => (n.method === 'session/event' ? [n.params] : n.method === 'session/events' ? n.params.events : []));
}

const sha = (s: string) => createHash('sha256').update(s).digest('hex');
const TOKEN = 'abc123';
const BEARER = 'sk-live0123456789abcdefghijKLMN';
const OPENAI = 'sk-proj-Zyxwvu9876543210abcdefgh';
const SECRETS = [TOKEN, BEARER, OPENAI, '0123456789abcdefghij', 'Zyxwvu9876543210'];

function filesUnder(dir: string): string[] {
  return fs.readdirSync(dir, { withFileTypes: true }).flatMap((e) => (e.isDirectory() ? filesUnder(path.join(dir, e.name)) : [path.join(dir, e.name)]));
}

describe('secrets are masked before the journal and every client', () => {
  it('echo SECRET_TOKEN=…, curl with a Bearer key, an OPENAI_API_KEY=… prefix: masked everywhere, run with the real values', async () => {
    const h = home();
    const seen: string[] = [];
    const server = http.createServer((req, res) => {
      seen.push(req.headers.authorization ?? '');
      res.end('ok\n');
    });
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    const port = (server.address() as net.AddressInfo).port;
    expect((await runCli(['daemon', 'start'], envFor(h))).code).toBe(0);
    const rec = readRecordFile(h)!;
    const ctlNotes: Note[] = [];
    const obsNotes: Note[] = [];
    const approvals: unknown[] = [];
    const ctl = await client(rec, 'controller', ctlNotes, approvals);
    const obs = await client(rec, 'observer', obsNotes, []);
    try {
      const { session } = (await ctl.request('session/create', { cwd: h, approvalPolicy: 'ask', title: `deploy API_KEY=${TOKEN}` })) as { session: { id: string; title: string } };
      expect(session.title).toBe('deploy API_KEY=***');
      const sessionId = session.id;
      const { epoch } = (await ctl.request('lease/acquire', { sessionId })) as { epoch: number };
      await ctl.request('session/subscribe', { sessionId, sinceSeq: 0 });
      await obs.request('session/subscribe', { sessionId, sinceSeq: 0 });
      const commands = [
        { text: `echo SECRET_TOKEN=${TOKEN} | sha256sum`, masked: 'echo SECRET_TOKEN=*** | sha256sum', proof: sha(`SECRET_TOKEN=${TOKEN}\n`) },
        { text: `curl -s -H 'Authorization: Bearer ${BEARER}' http://127.0.0.1:${port}/`, masked: `curl -s -H 'Authorization: Bearer ***' http://127.0.0.1:${port}/`, proof: 'ok' },
        { text: `OPENAI_API_KEY=${OPENAI} sh -c 'printf %s "$OPENAI_API_KEY" | sha256sum'`, masked: `OPENAI_API_KEY=*** sh -c 'printf %s "$OPENAI_API_KEY" | sha256sum'`, proof: sha(OPENAI) },
      ];
      for (const [i, c] of commands.entries()) {
        const { turnId } = (await ctl.request('turn/start', { sessionId, epoch, input: { text: c.text }, idempotencyKey: `k${i}` })) as { turnId: string };
        const end = await waitFor(`turn ${i} completed`, () => events(obsNotes).find((e) => e.type === 'turn.completed' && e.data.turnId === turnId));
        await waitFor(`turn ${i} completed at the controller`, () => events(ctlNotes).some((e) => e.type === 'turn.completed' && e.data.turnId === turnId));
        expect(end.data.status).toBe('completed');
        const mine = events(obsNotes).filter((e) => e.data.turnId === turnId);
        const output = Buffer.concat(mine.filter((e) => e.type === 'command.output').map((e) => Buffer.from(e.data.data))).toString();
        expect(output).toContain(c.proof); // ran with the real value
        expect(mine.find((e) => e.type === 'turn.started').data.input.text).toBe(c.masked);
        expect(mine.find((e) => e.type === 'message.user').data.text).toBe(c.masked);
        const started = mine.find((e) => e.type === 'command.started').data;
        expect(started.command).toBe(c.masked);
        expect(started.argsDigest).toBe(sha(JSON.stringify({ command: c.text, cwd: started.cwd })));
        const req = mine.find((e) => e.type === 'approval.requested').data;
        expect(req.command).toBe(c.masked);
        expect(req.paramsDigest).toBe(sha(JSON.stringify({ command: c.text, cwd: req.cwd })));
      }
      expect(seen).toEqual([`Bearer ${BEARER}`]);
      expect(approvals.map((a: any) => a.command)).toEqual(commands.map((c) => c.masked)); // eslint-disable-line @typescript-eslint/no-explicit-any
      expect(events(ctlNotes).map((e) => e.seq)).toEqual(events(obsNotes).map((e) => e.seq));
      for (const received of [JSON.stringify(ctlNotes), JSON.stringify(obsNotes), JSON.stringify(approvals)])
        for (const s of SECRETS) expect(received).not.toContain(s);
    } finally {
      ctl.close();
      obs.close();
      await runCli(['daemon', 'stop'], envFor(h));
      server.close();
    }
    const files = filesUnder(h).filter((f) => f.includes(`${path.sep}sessions${path.sep}`));
    expect(files.some((f) => f.endsWith('journal.astra'))).toBe(true);
    for (const f of files) {
      const bytes = fs.readFileSync(f);
      for (const s of SECRETS) expect(bytes.includes(s), `${f} holds ${s}`).toBe(false);
    }
  });
});
