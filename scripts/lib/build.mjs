// Build steps shared by start.mjs and test.mjs: the two wasm packages, the
// embedded MNIST default and the vendored plotting library.
import { copyFileSync, existsSync, mkdirSync, readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { ROOT, CommandError, capture, run, since, step } from './run.mjs';
import { hashInputs, stampMatches, writeStamp } from './hash.mjs';
import { makeMnistAsset } from '../make-mnist-asset.mjs';

/** Inputs of a wasm build: a change in any of these triggers a rebuild. */
const BUILD_INPUTS = ['Cargo.toml', 'Cargo.lock', '.cargo', 'src', 'shaders'];

// Threaded build flags (see /work/shared/TOOLCHAIN.md): atomics + shared
// memory, and the TLS exports wasm-bindgen-rayon needs. They live only in the
// child's environment, never in .cargo/config.toml, so the single-threaded
// and native builds never see them.
const MT_RUSTFLAGS = [
  '-C target-feature=+atomics,+bulk-memory,+simd128',
  '-C link-arg=--shared-memory',
  '-C link-arg=--max-memory=1073741824',
  '-C link-arg=--import-memory',
  '-C link-arg=--export=__wasm_init_tls',
  '-C link-arg=--export=__tls_size',
  '-C link-arg=--export=__tls_align',
  '-C link-arg=--export=__tls_base',
].join(' ');

/** The two wasm packages. `outDir` is relative to the crate root (= repo root). */
export const VARIANTS = {
  st: {
    label: 'single-threaded wasm (stable)',
    outDir: 'www/pkg',
    toolchain: 'stable',
    env: { RUSTUP_TOOLCHAIN: 'stable' },
    args: ['build', '--target', 'web', '--release', '--mode', 'no-install', '--out-dir', 'www/pkg'],
  },
  mt: {
    label: 'threaded wasm (nightly, build-std, atomics)',
    outDir: 'www/pkg-mt',
    toolchain: 'nightly',
    env: { RUSTUP_TOOLCHAIN: 'nightly', CARGO_TARGET_DIR: 'target/mt', RUSTFLAGS: MT_RUSTFLAGS },
    // wasm-pack 0.15 passes trailing args to cargo as they are: no `--` before them.
    args: [
      'build', '--target', 'web', '--release', '--mode', 'no-install', '--out-dir', 'www/pkg-mt',
      '--features', 'threads', '-Z', 'build-std=panic_abort,std',
    ],
  },
};

function outputsOf(v) {
  return [`${v.outDir}/deepbelief.js`, `${v.outDir}/deepbelief_bg.wasm`];
}

/**
 * Build one wasm package with wasm-pack unless the stamp in .build-stamps/
 * matches the hash of its inputs (sources, manifests, flags, tool versions)
 * and the outputs are still the ones it recorded.
 */
export async function buildWasm(name, tools = {}) {
  const v = VARIANTS[name];
  const rustc = capture('rustc', ['--version'], { env: { RUSTUP_TOOLCHAIN: v.toolchain } }) || 'rustc ?';
  const flags = [
    `variant=${name}`,
    `wasm-pack ${v.args.join(' ')}`,
    `env=${JSON.stringify(v.env)}`,
    `inherited RUSTFLAGS=${name === 'mt' ? '' : process.env.RUSTFLAGS || ''}`,
    rustc,
    `wasm-bindgen=${tools.wasmBindgen || ''}`,
    `wasm-pack=${tools.wasmPack || ''}`,
  ];
  const hash = hashInputs(BUILD_INPUTS, flags);
  const outputs = outputsOf(v);
  if (stampMatches(name, hash, outputs)) {
    console.log(`${v.label}: up to date in ${v.outDir}/ (stamp .build-stamps/${name}.json)`);
    return { skipped: true };
  }
  step(`Building ${v.label} into ${v.outDir}/`);
  const t0 = performance.now();
  await run('wasm-pack', v.args, { env: v.env });
  for (const f of outputs) {
    if (!existsSync(join(ROOT, f))) throw new CommandError(`wasm-pack finished but ${f} is missing`);
  }
  // Stamp the hash taken before the build only if the inputs did not change
  // while it ran (someone editing src/ meanwhile gets a rebuild next time).
  if (hashInputs(BUILD_INPUTS, flags) === hash) writeStamp(name, hash, outputs);
  console.log(`${v.label}: built in ${since(t0)}`);
  return { skipped: false };
}

/** uPlot's ES module and stylesheet into www/vendor/ (copied when they differ). */
// Browser files of npm dependencies, copied into www/vendor/ (git-ignored) so the page needs
// no bundler and no network beyond its own origin.
const VENDORED = [
  { pkg: 'uplot', files: [['dist/uPlot.esm.js', 'uPlot.esm.js'], ['dist/uPlot.min.css', 'uPlot.min.css']] },
  { pkg: 'idb-keyval', files: [['dist/index.js', 'idb-keyval.js']] },
];

export function copyVendor() {
  const dst = join(ROOT, 'www', 'vendor');
  mkdirSync(dst, { recursive: true });
  for (const { pkg, files } of VENDORED) {
    let copied = 0;
    for (const [source, target] of files) {
      const from = join(ROOT, 'node_modules', pkg, source);
      if (!existsSync(from)) throw new CommandError(`${from} is missing: run \`npm install\` (${pkg} is a dependency).`);
      const to = join(dst, target);
      const st = statSync(to, { throwIfNoEntry: false });
      if (st && st.size === statSync(from).size && readFileSync(to).equals(readFileSync(from))) continue;
      copyFileSync(from, to);
      copied++;
    }
    const version = JSON.parse(readFileSync(join(ROOT, 'node_modules', pkg, 'package.json'), 'utf8')).version;
    console.log(`${pkg} ${version}: ${copied ? `copied ${copied} file(s) to` : 'up to date in'} www/vendor/`);
  }
}

/** All build steps, in order. */
export async function buildAll(tools) {
  step('Build');
  const t0 = performance.now();
  copyVendor();
  makeMnistAsset();
  await buildWasm('st', tools);
  await buildWasm('mt', tools);
  console.log(`Build done in ${since(t0)}`);
}
