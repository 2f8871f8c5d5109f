// Content hashing and build stamps (Node built-ins only).
import { createHash } from 'node:crypto';
import { existsSync, mkdirSync, readdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { join, relative, sep } from 'node:path';
import { ROOT } from './run.mjs';

/** All regular files under `dir` (recursively), sorted, as absolute paths. */
export function listFiles(dir) {
  const out = [];
  const walk = (d) => {
    let entries;
    try {
      entries = readdirSync(d, { withFileTypes: true });
    } catch (err) {
      if (err.code === 'ENOENT') return;
      throw err;
    }
    for (const e of entries) {
      const p = join(d, e.name);
      if (e.isDirectory()) walk(p);
      else if (e.isFile() || (e.isSymbolicLink() && statSync(p, { throwIfNoEntry: false })?.isFile())) out.push(p);
    }
  };
  walk(dir);
  return out.sort();
}

/**
 * SHA-256 over the named files and directories (relative to the repo root;
 * missing ones count as absent) and any extra strings (build flags, tool
 * versions). Paths are part of the hash, so renames and deletions count.
 */
export function hashInputs(paths, extra = []) {
  const h = createHash('sha256');
  for (const rel of paths) {
    const abs = join(ROOT, rel);
    const st = statSync(abs, { throwIfNoEntry: false });
    const files = !st ? [] : st.isDirectory() ? listFiles(abs) : [abs];
    if (!st) h.update(`absent\0${rel}\0`);
    for (const f of files) {
      const data = readFileSync(f);
      h.update(`file\0${relative(ROOT, f).split(sep).join('/')}\0${data.length}\0`);
      h.update(data);
    }
  }
  for (const x of extra) h.update(`extra\0${x}\0`);
  return h.digest('hex');
}

export const STAMP_DIR = join(ROOT, '.build-stamps');

/** Size and mtime of each output file, or null when one is missing. */
function outputSignature(outputs) {
  const sig = {};
  for (const rel of outputs) {
    const st = statSync(join(ROOT, rel), { throwIfNoEntry: false });
    if (!st || !st.isFile()) return null;
    sig[rel] = { size: st.size, mtimeMs: Math.floor(st.mtimeMs) };
  }
  return sig;
}

/**
 * True when the stamp `name` records `hash` and every output file still
 * exists unchanged (same size and mtime as when the stamp was written, so a
 * manual rebuild with other flags is noticed).
 */
export function stampMatches(name, hash, outputs) {
  const file = join(STAMP_DIR, `${name}.json`);
  if (!existsSync(file)) return false;
  let stamp;
  try {
    stamp = JSON.parse(readFileSync(file, 'utf8'));
  } catch {
    return false;
  }
  if (stamp.hash !== hash) return false;
  const now = outputSignature(outputs);
  if (!now) return false;
  return JSON.stringify(now) === JSON.stringify(stamp.outputs);
}

/** Record that `outputs` were built from inputs hashing to `hash`. */
export function writeStamp(name, hash, outputs) {
  mkdirSync(STAMP_DIR, { recursive: true });
  const stamp = { hash, outputs: outputSignature(outputs), written: new Date().toISOString() };
  writeFileSync(join(STAMP_DIR, `${name}.json`), JSON.stringify(stamp, null, 2) + '\n');
}
