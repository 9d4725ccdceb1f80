// A real daemon (dist/) whose chat engine talks to `baseUrl` (a fake model server), started with
// `astra daemon start` in a fresh home, and raw client processes on it (test/fixtures/driver.mjs).
// The caller's lists get the home and each driver, for its afterEach to clean up.
import { expect } from 'vitest';
import { Driver } from './driver.js';
import { envFor, makeHome, runCli } from './processes.js';

export async function startChatDaemon(baseUrl: string, extraEnv: Record<string, string>, homes: string[], drivers: Driver[]) {
  return startDriverDaemon({ ASTRA_CHAT_BASE_URL: baseUrl, ...extraEnv }, homes, drivers);
}

/** A real daemon started with `astra daemon start` in a fresh home with `extraEnv`, and a maker of driver processes on it (with `driverEnv` added to theirs). */
export async function startDriverDaemon(extraEnv: Record<string, string>, homes: string[], drivers: Driver[], driverEnv?: Record<string, string>) {
  const home = makeHome();
  homes.push(home);
  const env = envFor(home, extraEnv);
  const r = await runCli(['daemon', 'start'], env);
  expect(r.code, r.stderr).toBe(0);
  const driver = async (name: string) => {
    const d = new Driver(env, name, driverEnv);
    drivers.push(d);
    return d.ready();
  };
  return { home, env, driver };
}
