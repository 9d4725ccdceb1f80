#!/usr/bin/env node
// Watch a session and run one command in it, end to end:
//   node examples/watch-session.mjs "ls -la"                 # a new session
//   node examples/watch-session.mjs "make test" ses_abc123   # an existing one (takes control)
// It connects (starting the daemon if needed), becomes the session's controller, approves the
// command when the daemon asks, streams the events until the turn completes, then gives control back.
// Build first (npm run build); in your own code, import from 'astra'.
import { AstraClient, OutcomeUnknownError } from '../dist/index.js';

const command = process.argv[2] ?? 'echo hello from astra';
const existingSession = process.argv[3];

const client = await AstraClient.connect({ clientName: 'watch-session', clientVersion: '1.0.0' });
client.on('disconnected', ({ error }) => console.error(`[astra] connection lost (${error?.reason ?? 'closed'}); reconnecting…`));
client.on('reconnected', ({ daemonRestarted }) => console.error(`[astra] reconnected${daemonRestarted ? ' to a new daemon' : ''}`));
client.on('leaseLost', ({ sessionId, reason }) => console.error(`[astra] lost control of ${sessionId} (${reason})`));
client.on('error', (e) => console.error(`[astra] ${e.message}`));

// The controller answers approval requests; here every command is approved and logged.
client.onApproval(async (request) => {
  console.log(`approve? ${request.command} (in ${request.cwd}) -> yes`);
  return 'approve';
});

try {
  const sessionId = existingSession ?? (await client.session.create({ title: `watch: ${command}`, approvalPolicy: 'ask' })).session.id;
  const lease = await client.acquireController(sessionId, { takeover: existingSession !== undefined });
  console.log(`session ${sessionId}, controller epoch ${lease.epoch}`);

  // Subscribe before starting the turn so nothing is missed (sinceSeq defaults to 0: the whole history).
  const events = await client.subscribe(sessionId);

  // turn/start gets an idempotency key; keep it to resolve an OutcomeUnknownError.
  const idempotencyKey = crypto.randomUUID();
  try {
    await client.turn.start({ sessionId, input: { text: command }, idempotencyKey });
  } catch (e) {
    if (!(e instanceof OutcomeUnknownError)) throw e;
    // The connection dropped mid-call: ask what happened instead of guessing.
    const status = await client.mutationStatus(sessionId, idempotencyKey);
    if (status.state === 'unknown') await client.turn.start({ sessionId, input: { text: command }, idempotencyKey });
  }

  for await (const event of events) {
    switch (event.type) {
      case 'command.started':
        console.log(`$ ${event.data.command}`);
        break;
      case 'command.output':
        process.stdout.write(Buffer.from(event.data.data));
        break;
      case 'approval.resolved':
        console.log(`approval ${event.data.decision}`);
        break;
      case 'turn.completed':
        console.log(`turn ${event.data.status}${event.data.exitCode !== undefined ? ` (exit ${event.data.exitCode})` : ''}`);
        break;
    }
    // Breaking out of the loop unsubscribes.
    if (event.type === 'turn.completed') break;
  }
  await lease.release();
} finally {
  await client.close();
}
