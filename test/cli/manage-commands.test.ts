// Finding sessions the way people name them, and keeping them tidy: titles, `ses_`-less prefixes,
// `astra rename`, `archive`, `rm`; what `astra sessions` says about them. Real daemon, a temp home each.
import { describe, expect, it } from 'vitest';
import { runCli, waitFor } from '../helpers/processes.js';
import { listJson, newSession, sessionRows, setup, startCli, useCliCleanup } from './cli-helpers.js';

useCliCleanup();

describe('naming a session', () => {
  it('a unique title or an id prefix without ses_ is enough; an ambiguous one lists the candidates with their titles', async () => {
    const { env } = setup();
    const a = await newSession(env, ['--approval', 'auto', '--title', 'build']);
    const b = await newSession(env, ['--approval', 'auto', '--title', 'deploy']);
    const byTitle = await runCli(['send', 'build', 'echo by title', '--wait'], env);
    expect(byTitle.stderr).toBe('');
    expect(byTitle.stdout).toMatch(/^by title\r?\n$/);
    // Ids made together share their leading characters: the tail is what tells them apart.
    const byBarePrefix = await runCli(['send', b.slice(4, 4 + 20), 'echo by prefix', '--wait'], env);
    expect(byBarePrefix.stdout).toMatch(/^by prefix\r?\n$/);

    await newSession(env, ['--title', 'build']);
    const ambiguous = await runCli(['send', 'build', 'true'], env);
    expect(ambiguous.code).toBe(1);
    expect(ambiguous.stderr).toMatch(/^astra: "build" matches 2 sessions; give more of the id:\n/);
    expect(ambiguous.stderr).toContain(`  ${a} "build"\n`);
  });

  it('attach without an id attaches to the most recently active session and says which', async () => {
    const { env } = setup();
    const older = await newSession(env, ['--approval', 'auto', '--title', 'older']);
    await newSession(env, ['--title', 'newer']);
    // Activity, not creation, makes a session the most recent.
    expect((await runCli(['send', older, 'true', '--wait'], env)).code).toBe(0);
    const a = startCli(['attach'], env);
    await waitFor('attach to name the session', () => a.out().includes('── live ──') || undefined);
    expect(a.out()).toMatch(new RegExp(`^astra: attaching to the most recent session, ${older} "older"\n`));
    a.child.stdin!.end();
    expect(await a.exited).toBe(0);

    const { env: empty } = setup();
    const none = await runCli(['attach'], empty);
    expect(none.code).toBe(1);
    expect(none.stderr).toBe('astra: there are no sessions yet; create one with `astra new`\n');
  });

  it('a whitespace-only send is refused and starts no turn', async () => {
    const { env } = setup();
    const id = await newSession(env, ['--approval', 'auto']);
    const r = await runCli(['send', id, ' \t '], env);
    expect(r.code).toBe(1);
    expect(r.stderr).toMatch(/^astra: the text is empty: give a command line/);
    expect((await sessionRows(env))[0]).toMatchObject({ headSeq: 1 });
  });
});

describe('astra sessions', () => {
  it('shows a turn waiting for approval as such, lists the controller (null when none) and cleans titles', async () => {
    const { env } = setup();
    const id = await newSession(env, ['--title', 'two\nlines \x1b[31mred\x1b[0m\x07']);
    const sent = await runCli(['send', id, 'echo later'], env);
    expect(sent.code).toBe(0);
    await waitFor('the approval to be pending', async () => ((await sessionRows(env))[0]!.pendingApprovals === 1 ? true : undefined));

    const table = await runCli(['sessions'], env);
    expect(table.stdout).toMatch(new RegExp(`^${id}\\s+two lines red\\s+shell\\s+waiting for approval\\s+-\\s+0\\s+`, 'm'));
    expect(table.stdout).not.toMatch(/[\x00-\x09\x0b-\x1f]/);

    const [s] = await listJson(env);
    expect(s).toMatchObject({ id, controller: null, pendingApprovals: 1, runningTurnId: expect.any(String) });
    const holder = startCli(['attach', id], env);
    await waitFor('the attach to take control', async () => ((await sessionRows(env))[0]!.controller ? true : undefined));
    expect((await listJson(env))[0]!.controller).toMatchObject({ clientName: 'astra attach', pid: holder.child.pid });
  });
});

describe('astra rename, archive and rm', () => {
  it('rename retitles, archive hides the session from the default list, rm --yes deletes it and its history', async () => {
    const { env } = setup();
    const id = await newSession(env, ['--title', 'old']);
    const renamed = await runCli(['rename', 'old', 'new name'], env);
    expect(renamed.stderr).toBe('');
    expect(renamed.stdout).toBe(`renamed ${id} to "new name"\n`);
    expect((await sessionRows(env))[0]).toMatchObject({ id, title: 'new name' });
    const twoLines = await runCli(['rename', id, 'a\nb'], env);
    expect(twoLines.code).toBe(1);
    expect(twoLines.stderr).toMatch(/a title is one line of plain text/);

    const archived = await runCli(['archive', 'new name'], env);
    expect(archived.stdout).toMatch(/^archived ses_\w+ "new name"/);
    expect(await listJson(env)).toEqual([]);
    expect((await listJson(env, ['--all']))[0]).toMatchObject({ id, state: 'archived' });

    const noTty = await runCli(['rm', id], env);
    expect(noTty.code).toBe(1);
    expect(noTty.stderr).toMatch(/stdin is not a terminal; pass --yes/);
    expect(await sessionRows(env, { all: true })).toHaveLength(1);

    const rm = await runCli(['rm', id, '--yes'], env);
    expect(rm.stderr).toBe('');
    expect(rm.stdout).toBe(`deleted ${id} "new name"\n`);
    expect(await sessionRows(env, { all: true })).toEqual([]);
    const gone = await runCli(['send', id, 'true'], env);
    expect(gone.stderr).toMatch(/no session has the id/);
  });

  it('rm refuses while a turn runs or another terminal controls the session, naming it, and deletes nothing', async () => {
    const { env } = setup();
    const id = await newSession(env, ['--approval', 'auto']);
    const long = await runCli(['send', id, 'sleep 30'], env);
    expect(long.code).toBe(0);
    const running = await runCli(['rm', id, '--yes'], env);
    expect(running.code).toBe(1);
    expect(running.stderr).toMatch(new RegExp(`a turn is running in ${id}: cancel it first \\(\`astra cancel ${id} --wait\`\\)`));
    expect((await runCli(['cancel', id, '--wait'], env)).code).toBe(0);

    const holder = startCli(['attach', id], env);
    await waitFor('the attach to take control', async () => ((await sessionRows(env))[0]!.controller ? true : undefined));
    const held = await runCli(['rm', id, '--yes'], env);
    expect(held.code).toBe(1);
    expect(held.stderr).toMatch(new RegExp(`${id} is controlled by astra attach \\(pid ${holder.child.pid}\\); detach there first`));
    expect(await sessionRows(env)).toHaveLength(1);
  });

  it('rename works while a terminal controls the session (metadata, not a write to its turns), and the terminal keeps control', async () => {
    const { env } = setup();
    const id = await newSession(env, ['--title', 'before']);
    const holder = startCli(['attach', id], env);
    await waitFor('the attach to take control', async () => ((await sessionRows(env))[0]!.controller ? true : undefined));
    const renamed = await runCli(['rename', id, 'while attached'], env);
    expect(renamed.stderr).toBe('');
    expect(renamed.stdout).toBe(`renamed ${id} to "while attached"\n`);
    const [s] = await sessionRows(env);
    expect(s).toMatchObject({ id, title: 'while attached', controller: { clientName: 'astra attach', pid: holder.child.pid } });
    // The attached terminal hears of it through the session's events.
    await waitFor('the attach to show the new title', () => holder.out().includes('session updated: title "while attached"') || undefined, 15_000);
  });

  it('unarchive undoes archive: listed again and turns run; a session that is not archived is said to be so', async () => {
    const { env } = setup();
    const id = await newSession(env, ['--approval', 'auto', '--title', 'shelved']);
    expect((await runCli(['archive', id], env)).code).toBe(0);
    expect(await sessionRows(env)).toEqual([]);
    const refused = await runCli(['send', id, 'echo nope', '--wait'], env);
    expect(refused.stderr).toMatch(/archived/);

    const back = await runCli(['unarchive', 'shelved'], env);
    expect(back.stderr).toBe('');
    expect(back.stdout).toBe(`unarchived ${id} "shelved" (\`astra sessions\` lists it again)\n`);
    expect((await sessionRows(env))[0]).toMatchObject({ id, state: 'idle' });
    const ran = await runCli(['send', id, 'echo after unarchive', '--wait'], env);
    expect(ran.stdout).toMatch(/^after unarchive\r?\n$/);

    const again = await runCli(['unarchive', id], env);
    expect(again.code).toBe(0);
    expect(again.stdout).toBe(`${id} "shelved" is not archived\n`);
    // The state survives a daemon restart (it is an event in the journal).
    expect((await runCli(['daemon', 'restart'], env)).code).toBe(0);
    expect((await sessionRows(env))[0]).toMatchObject({ id, state: 'idle' });
  });
});
