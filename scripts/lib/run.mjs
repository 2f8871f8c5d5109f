// Process helpers shared by start.mjs and test.mjs. Node built-ins only: these
// run before `npm install` has happened.
import { spawn, spawnSync } from 'node:child_process';
import { homedir } from 'node:os';
import { delimiter, join, dirname, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

/** Repository root (the folder holding Cargo.toml and package.json). */
export const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '..', '..');

/** Thrown when a child command fails; `message` names the command. */
export class CommandError extends Error {
  constructor(message, { code = null, signal = null, timedOut = false } = {}) {
    super(message);
    this.name = 'CommandError';
    this.code = code;
    this.signal = signal;
    this.timedOut = timedOut;
  }
}

/** The directory cargo installs binaries into (~/.cargo/bin unless CARGO_HOME says otherwise). */
export function cargoBinDir() {
  return join(process.env.CARGO_HOME || join(homedir(), '.cargo'), 'bin');
}

// Put cargo's bin dir first on PATH for this process and so for every child
// (rustup, cargo, wasm-pack, wasm-bindgen, wasm-bindgen-test-runner).
{
  const bin = cargoBinDir();
  const parts = (process.env.PATH || '').split(delimiter).filter(Boolean);
  if (!parts.includes(bin)) process.env.PATH = [bin, ...parts].join(delimiter);
}

/** Quote a command line for display only. */
export function showCommand(cmd, args = [], env = {}) {
  const q = (s) => (/^[\w@%+=:,./-]+$/.test(s) ? s : `'${String(s).replace(/'/g, `'\\''`)}'`);
  const envPart = Object.entries(env).map(([k, v]) => `${k}=${q(v)}`);
  return [...envPart, q(cmd), ...args.map(q)].join(' ');
}

// Children given a timeout run in their own process group, so a hung suite can
// be killed with everything it started (chromedriver, chromium). Signals that
// reach this process are forwarded to every live child by hand.
const live = new Set();
let signalsHooked = false;
function hookSignals() {
  if (signalsHooked) return;
  signalsHooked = true;
  for (const sig of ['SIGINT', 'SIGTERM', 'SIGHUP']) {
    process.on(sig, () => {
      for (const child of live) killTree(child, sig);
      // Leave a moment for children to exit, then go.
      setTimeout(() => process.exit(128 + (sig === 'SIGINT' ? 2 : sig === 'SIGTERM' ? 15 : 1)), 200);
    });
  }
}

function killTree(child, sig) {
  try {
    process.kill(-child.pid, sig);
  } catch {
    try { child.kill(sig); } catch { /* already gone */ }
  }
}

/**
 * Run a command with inherited stdio. Resolves when it exits with status 0,
 * rejects with a CommandError naming the command otherwise.
 *
 * opts.env: extra environment variables (merged over process.env; a value of
 *   undefined removes the variable for the child).
 * opts.cwd: working directory (default: repository root).
 * opts.timeoutMs: run in a new process group and kill the whole group after
 *   this long (and when it exits, so nothing it started lingers).
 * opts.quiet: do not echo the command line before running it.
 */
export function run(cmd, args = [], opts = {}) {
  const { env = {}, cwd = ROOT, timeoutMs = 0, quiet = false } = opts;
  const detached = timeoutMs > 0 || Boolean(opts.detached);
  const childEnv = { ...process.env };
  for (const [k, v] of Object.entries(env)) {
    if (v === undefined) delete childEnv[k];
    else childEnv[k] = String(v);
  }
  const shown = showCommand(cmd, args, Object.fromEntries(Object.entries(env).filter(([, v]) => v !== undefined)));
  if (!quiet) console.log(`\n$ ${shown}`);
  hookSignals();
  return new Promise((resolveP, rejectP) => {
    let child;
    try {
      child = spawn(cmd, args, {
        cwd,
        env: childEnv,
        // A child in its own process group must not touch the terminal's input
        // (it would be stopped with SIGTTIN), so it gets no stdin.
        stdio: [detached ? 'ignore' : 'inherit', 'inherit', 'inherit'],
        detached,
      });
    } catch (err) {
      rejectP(new CommandError(`Could not start \`${shown}\`: ${err.message}`));
      return;
    }
    live.add(child);
    let timedOut = false;
    let timer = null;
    if (timeoutMs > 0) {
      timer = setTimeout(() => {
        timedOut = true;
        console.error(`\n!! \`${shown}\` ran longer than ${+(timeoutMs / 1000).toFixed(1)} s; killing it`);
        killTree(child, 'SIGTERM');
        setTimeout(() => killTree(child, 'SIGKILL'), 5000).unref();
      }, timeoutMs);
    }
    child.on('error', (err) => {
      live.delete(child);
      if (timer) clearTimeout(timer);
      const hint = err.code === 'ENOENT' ? ` (is \`${cmd}\` installed and on PATH?)` : '';
      rejectP(new CommandError(`Could not run \`${shown}\`: ${err.message}${hint}`));
    });
    child.on('exit', (code, signal) => {
      live.delete(child);
      if (timer) clearTimeout(timer);
      // Make sure nothing it started is left behind in its group.
      if (detached) {
        try { process.kill(-child.pid, 'SIGKILL'); } catch { /* group already empty */ }
      }
      if (code === 0) return resolveP();
      const how = timedOut ? 'timed out' : signal ? `was killed by ${signal}` : `failed with exit code ${code}`;
      rejectP(new CommandError(`Command ${how}: ${shown}`, { code, signal, timedOut }));
    });
  });
}

/**
 * Run a command quietly and return its trimmed stdout, or null when the
 * command is missing or fails. For version and presence checks.
 */
export function capture(cmd, args = [], opts = {}) {
  const r = spawnSync(cmd, args, {
    cwd: opts.cwd || ROOT,
    env: { ...process.env, ...(opts.env || {}) },
    encoding: 'utf8',
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  if (r.error || r.status !== 0) return null;
  return r.stdout.trim();
}

/** Seconds since `t0` (from performance.now()), formatted "12.3 s". */
export function since(t0) {
  return `${((performance.now() - t0) / 1000).toFixed(1)} s`;
}

/** Print a step header. */
export function step(msg) {
  console.log(`\n==> ${msg}`);
}
