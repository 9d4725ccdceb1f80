#!/usr/bin/env node
// Watch a session and run one command in it, end to end:
//   node examples/watch-session.mjs "ls -la"                 # a new session
//   node examples/watch-session.mjs "ls -la" ses_abc123      # an existing one (takes control);
//                                                            # a unique id prefix is enough
// It connects (starting the daemon if needed), becomes the session's controller, approves the
// command when the daemon asks, streams the events of its own turn until that turn completes, then
// gives control back.
// Build first (npm run build); in your own code, import from 'astra'.
import { AstraClient, AstraError, OutcomeUnknownError } from '../dist/index.js';

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

/** The session with this id, or the one whose id starts with it (`ses_` may be left out). */
async function findSession(idOrPrefix) {
  try {
    return (await client.session.read({ sessionId: idOrPrefix, limit: 1 })).session;
  } catch (e) {
    if (!(e instanceof AstraError) || (e.reason !== 'not_found' && e.reason !== 'invalid_params')) throw e;
  }
  const { sessions } = await client.session.list({ limit: 1000, includeArchived: true });
  const matches = sessions.filter((s) => s.id.startsWith(idOrPrefix) || s.id.startsWith(`ses_${idOrPrefix}`));
  if (matches.length === 1) return matches[0];
  throw new Error(matches.length === 0 ? `no session matches "${idOrPrefix}" (astra sessions lists them)` : `"${idOrPrefix}" matches ${matches.length} sessions: ${matches.map((s) => s.id).join(', ')}; give more of the id`);
}

let exitCode = 0;
try {
  const session = existingSession ? await findSession(existingSession) : (await client.session.create({ title: `watch: ${command}`, approvalPolicy: 'ask' })).session;
  const sessionId = session.id;
  const lease = await client.acquireController(sessionId, { takeover: existingSession !== undefined });
  console.log(`session ${sessionId}, controller epoch ${lease.epoch}`);

  // Subscribe before starting the turn so nothing is missed, from the snapshot's head so the
  // session's older turns are not replayed (sinceSeq: 0 would give the whole history).
  const events = await client.subscribe(sessionId, { sinceSeq: session.headSeq });

  // turn/start gets an idempotency key; keep it to resolve an OutcomeUnknownError.
  const idempotencyKey = crypto.randomUUID();
  let turnId;
  try {
    ({ turnId } = await client.turn.start({ sessionId, input: { text: command }, idempotencyKey }));
  } catch (e) {
    if (!(e instanceof OutcomeUnknownError)) throw e;
    // The connection dropped mid-call: ask what happened instead of guessing.
    const status = await client.mutationStatus(sessionId, idempotencyKey);
    turnId = status.state === 'unknown' ? (await client.turn.start({ sessionId, input: { text: command }, idempotencyKey })).turnId : status.result?.turnId;
  }

  for await (const event of events) {
    // Only this program's own turn (another client may start one later).
    if (turnId === undefined && event.type === 'turn.started') turnId = event.data.turnId; // outcome was in progress
    if (event.data.turnId !== undefined && event.data.turnId !== turnId) continue;
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
} catch (e) {
  // A clear line, not a stack trace: these errors say what went wrong and what to do.
  console.error(`watch-session: ${e instanceof Error ? e.message : String(e)}`);
  exitCode = 1;
} finally {
  await client.close({ releaseLeases: true });
}
process.exitCode = exitCode;
