// Keeping sessions tidy: `astra rename`, `astra archive`, `astra unarchive`, `astra rm`. Renaming and
// unarchiving are metadata (docs/protocol.md §6, METADATA): they need no control, so they work while
// a terminal controls the session. Archiving and deleting are controller writes: each takes control
// for the call — and fails naming whoever controls the session instead.
import readline from 'node:readline/promises';
import type { Command } from 'commander';
import { AstraError, type Session } from '../protocol/index.js';
import type { AstraClient } from '../client/index.js';
import { cleanText, fail, type Output } from './output.js';
import { acquireOrExplain, describeHolder, resolveSession, sessionLabel, withClient } from './session-util.js';

export const SESSION_ARG = 'a session id, a unique prefix of one (`ses_` may be left out), or a unique title';

export function registerManageCommands(program: Command, out: Output, env: NodeJS.ProcessEnv): void {
  program
    .command('rename')
    .description('give a session a new title')
    .argument('<session>', SESSION_ARG)
    .argument('<title>', 'the new title (one line; at most 256 characters)')
    .action(async (sessionArg: string, title: string) => {
      if (!title.trim()) fail('the title is empty: give a few words, e.g. astra rename <session> "nightly build"');
      // eslint-disable-next-line no-control-regex
      if (/[\x00-\x1f\x7f-\x9f\u2028\u2029]/.test(title)) fail('a title is one line of plain text: leave out newlines, tabs and escape codes');
      await withClient(env, 'astra rename', async (c) => {
        const s = await resolveSession(c, sessionArg);
        const r = await c.session.rename({ sessionId: s.id, title });
        out.stdout(`renamed ${s.id} to "${cleanText(r.session.title)}"`);
      });
    });

  program
    .command('archive')
    .description('archive a session: hidden from `astra sessions` (shown with --all), its history kept')
    .argument('<session>', SESSION_ARG)
    .action(async (sessionArg: string) => {
      await withClient(env, 'astra archive', async (c) => {
        const s = await resolveSession(c, sessionArg);
        if (s.state === 'archived') {
          out.stdout(`${sessionLabel(s)} is already archived`);
          return;
        }
        await acquireOrExplain(c, s.id);
        await c.session.archive({ sessionId: s.id });
        out.stdout(`archived ${sessionLabel(s)} (\`astra sessions --all\` still lists it)`);
      });
    });

  program
    .command('unarchive')
    .description('undo `astra archive`: the session is listed by `astra sessions` again and can run turns')
    .argument('<session>', SESSION_ARG)
    .action(async (sessionArg: string) => {
      await withClient(env, 'astra unarchive', async (c) => {
        const s = await resolveSession(c, sessionArg);
        if (s.state !== 'archived') {
          out.stdout(`${sessionLabel(s)} is not archived`);
          return;
        }
        await c.session.unarchive({ sessionId: s.id });
        out.stdout(`unarchived ${sessionLabel(s)} (\`astra sessions\` lists it again)`);
      });
    });

  program
    .command('rm')
    .description('delete a session and its whole history for good (asks first on a terminal)')
    .argument('<session>', SESSION_ARG)
    .option('-y, --yes', 'do not ask for confirmation (needed when stdin is not a terminal)')
    .action(async (sessionArg: string, o: { yes?: boolean }) => {
      await withClient(env, 'astra rm', async (c) => {
        const s = await resolveSession(c, sessionArg);
        refuseBusy(s);
        if (!o.yes) {
          if (!process.stdin.isTTY) fail(`not deleting ${s.id} without confirmation: stdin is not a terminal; pass --yes to delete it`);
          if (!(await confirm(`delete ${sessionLabel(s)} and its whole history for good? [y/N] `))) {
            out.stdout(`kept ${s.id}`);
            return;
          }
        }
        await deleteSession(c, s.id);
        out.stdout(`deleted ${sessionLabel(s)}`);
      });
    });
}

/** `rm` does not take a session from a person using it: a running turn or another controller stops it. */
function refuseBusy(s: Session): void {
  if (s.runningTurnId)
    throw new AstraError('turn_in_progress', `a turn is running in ${s.id}: cancel it first (\`astra cancel ${s.id} --wait\`), then delete`, { sessionId: s.id });
  if (s.controller)
    throw new AstraError(
      'lease_held',
      `${s.id} is controlled by ${describeHolder(s.controller)}; detach there first (or \`astra take ${s.id}\`), then delete`,
      { sessionId: s.id },
    );
}

async function deleteSession(c: AstraClient, sessionId: string): Promise<void> {
  // Taking control (never by takeover) closes the gap between the check above and the delete: a
  // controller that arrived meanwhile makes this fail with its name.
  await acquireOrExplain(c, sessionId);
  await c.session.delete({ sessionId });
}

async function confirm(question: string): Promise<boolean> {
  const rl = readline.createInterface({ input: process.stdin, output: process.stderr });
  try {
    const answer = await rl.question(question);
    return /^\s*y(es)?\s*$/i.test(answer);
  } finally {
    rl.close();
  }
}
