// Bootstrap: install what is missing, and only that. Every check is a quick
// local command, so a warm machine passes through here in well under a second.
import { existsSync, readdirSync, readFileSync, statSync, utimesSync } from 'node:fs';
import { join } from 'node:path';
import { ROOT, CommandError, capture, run, step } from './run.mjs';

const WASM_TARGET = 'wasm32-unknown-unknown';

// ---------------------------------------------------------------- npm deps

/**
 * `npm install` only when node_modules is missing, or package.json /
 * package-lock.json is newer than npm's record of the last install
 * (node_modules/.package-lock.json).
 */
export async function ensureNpmDeps() {
  const marker = join(ROOT, 'node_modules', '.package-lock.json');
  const markerSt = statSync(marker, { throwIfNoEntry: false });
  let reason = null;
  if (!existsSync(join(ROOT, 'node_modules'))) reason = 'node_modules is missing';
  else if (!markerSt) reason = 'node_modules/.package-lock.json is missing';
  else {
    for (const f of ['package.json', 'package-lock.json']) {
      const st = statSync(join(ROOT, f), { throwIfNoEntry: false });
      if (st && st.mtimeMs > markerSt.mtimeMs) { reason = `${f} is newer than node_modules`; break; }
    }
  }
  if (!reason) {
    console.log('npm dependencies: up to date');
    return;
  }
  step(`npm dependencies: installing (${reason})`);
  await run('npm', ['install', '--no-audit', '--no-fund']);
  // npm leaves the marker untouched when nothing needed changing; touch it so
  // the next run sees the install as newer than package.json.
  if (existsSync(marker)) {
    const now = new Date();
    utimesSync(marker, now, now);
  }
}

// ---------------------------------------------------------------- Rust

function requireRustup() {
  const v = capture('rustup', ['--version']);
  if (!v) {
    throw new CommandError(
      'rustup was not found (looked on PATH and in ~/.cargo/bin). Install it from https://rustup.rs ' +
        '(curl --proto =https --tlsv1.2 -sSf https://sh.rustup.rs | sh -s -- -y), then run this again.',
    );
  }
}

function installedToolchains() {
  const out = capture('rustup', ['toolchain', 'list']) || '';
  return out.split('\n').map((l) => l.trim().split(/\s+/)[0]).filter(Boolean);
}

function hasToolchain(list, channel) {
  // "nightly-x86_64-unknown-linux-gnu" counts; a dated "nightly-2025-01-01-..." does not.
  const re = new RegExp(`^${channel}-(?!\\d{4}-\\d{2}-\\d{2})`);
  return list.some((t) => re.test(t) || t === channel);
}

function installedLines(args) {
  const out = capture('rustup', args);
  return out === null ? [] : out.split('\n').map((l) => l.trim());
}

/**
 * stable and nightly toolchains, the wasm32 target for both, rust-src for
 * nightly (build-std needs it). Nightly is the rolling `nightly`, never a
 * pinned date.
 */
export async function ensureRust() {
  requireRustup();
  const toolchains = installedToolchains();
  for (const channel of ['stable', 'nightly']) {
    if (hasToolchain(toolchains, channel)) continue;
    step(`Rust ${channel} toolchain: installing`);
    await run('rustup', ['toolchain', 'install', channel, '--profile', 'minimal']);
  }
  for (const channel of ['stable', 'nightly']) {
    const targets = installedLines(['target', 'list', '--installed', '--toolchain', channel]);
    if (targets.includes(WASM_TARGET)) continue;
    step(`${WASM_TARGET} target for ${channel}: installing`);
    await run('rustup', ['target', 'add', WASM_TARGET, '--toolchain', channel]);
  }
  const comps = installedLines(['component', 'list', '--installed', '--toolchain', 'nightly']);
  if (!comps.some((c) => c === 'rust-src' || c.startsWith('rust-src-') || c.startsWith('rust-src '))) {
    step('rust-src for nightly: installing');
    await run('rustup', ['component', 'add', 'rust-src', '--toolchain', 'nightly']);
  }
  console.log('Rust toolchains: stable + nightly, wasm32 targets, nightly rust-src: present');
}

/**
 * The exact version the crate pins for wasm-bindgen (`wasm-bindgen = "=X"`
 * in Cargo.toml). Falls back to the version locked in Cargo.lock.
 */
export function wasmBindgenVersion() {
  const toml = readFileSync(join(ROOT, 'Cargo.toml'), 'utf8');
  const m =
    toml.match(/^\s*wasm-bindgen\s*=\s*"=?\s*([0-9][^"]*)"/m) ||
    toml.match(/^\s*wasm-bindgen\s*=\s*\{[^}\n]*\bversion\s*=\s*"=?\s*([0-9][^"]*)"/m);
  if (m) return m[1].trim();
  const lockPath = join(ROOT, 'Cargo.lock');
  if (existsSync(lockPath)) {
    const lock = readFileSync(lockPath, 'utf8');
    const l = lock.match(/\[\[package\]\]\s*\nname = "wasm-bindgen"\s*\nversion = "([^"]+)"/);
    if (l) return l[1];
  }
  throw new CommandError('Could not find the wasm-bindgen version in Cargo.toml (expected a line like wasm-bindgen = "=0.2.130").');
}

function toolVersion(bin) {
  const out = capture(bin, ['--version']);
  if (!out) return null;
  const m = out.match(/(\d+\.\d+\.\d+\S*)/);
  return m ? m[1] : out;
}

/** wasm-bindgen-cli at exactly the crate's wasm-bindgen version. Returns the version. */
export async function ensureWasmBindgen() {
  const want = wasmBindgenVersion();
  const have = toolVersion('wasm-bindgen');
  if (have === want) {
    console.log(`wasm-bindgen ${have}: present`);
    return have;
  }
  step(
    have
      ? `wasm-bindgen-cli: ${have} found, the crate needs ${want}; reinstalling (several minutes)`
      : `wasm-bindgen-cli ${want}: installing (several minutes on 2 cores)`,
  );
  // No --locked: it fails when the registry index lags behind the lock file.
  const args = ['install', 'wasm-bindgen-cli', '--version', want];
  if (have) args.push('--force');
  await run('cargo', args, { env: { RUSTUP_TOOLCHAIN: 'stable' } });
  const now = toolVersion('wasm-bindgen');
  if (now !== want) throw new CommandError(`wasm-bindgen --version reports ${now ?? 'nothing'} after installing ${want}; is another wasm-bindgen earlier on PATH?`);
  return now;
}

/** wasm-pack, any version. Returns the version. */
export async function ensureWasmPack() {
  const have = toolVersion('wasm-pack');
  if (have) {
    console.log(`wasm-pack ${have}: present`);
    return have;
  }
  step('wasm-pack: installing (several minutes on 2 cores)');
  await run('cargo', ['install', 'wasm-pack'], { env: { RUSTUP_TOOLCHAIN: 'stable' } });
  const now = toolVersion('wasm-pack');
  if (!now) throw new CommandError('wasm-pack still not found after `cargo install wasm-pack`.');
  return now;
}

/** Everything `npm start` needs before building. Returns tool versions. */
export async function bootstrap() {
  step('Bootstrap: checking tools');
  await ensureNpmDeps();
  await ensureRust();
  const wasmBindgen = await ensureWasmBindgen();
  const wasmPack = await ensureWasmPack();
  return { wasmBindgen, wasmPack };
}

// ---------------------------------------------------------------- test tools

export const CHROMIUM = '/usr/bin/chromium';
export const CHROMEDRIVER = '/usr/bin/chromedriver';
const ICD_DIR = '/usr/share/vulkan/icd.d';
const APT_PACKAGES = ['chromium', 'chromium-driver', 'mesa-vulkan-drivers'];

/** Path of Mesa's lavapipe Vulkan ICD manifest, preferring this machine's arch. */
export function findLavapipeIcd() {
  let names;
  try {
    names = readdirSync(ICD_DIR);
  } catch {
    return null;
  }
  const lvp = names.filter((n) => /^lvp_icd\..*\.json$/.test(n)).sort();
  if (!lvp.length) return null;
  const arch = { x64: 'x86_64', arm64: 'aarch64', ia32: 'i686', arm: 'armv7l' }[process.arch] || process.arch;
  return join(ICD_DIR, lvp.find((n) => n.includes(`.${arch}.`)) || lvp[0]);
}

function osRelease() {
  try {
    const txt = readFileSync('/etc/os-release', 'utf8');
    const get = (k) => (txt.match(new RegExp(`^${k}=("?)(.*)\\1$`, 'm')) || [])[2] || '';
    return { id: get('ID'), like: get('ID_LIKE'), pretty: get('PRETTY_NAME') };
  } catch {
    return { id: '', like: '', pretty: '' };
  }
}

/**
 * Chromium, ChromeDriver and lavapipe, from apt when missing (as root, or
 * through `sudo -n`). On other systems, stop and say what to install.
 * Returns { chromium, chromedriver, icd }.
 */
export async function ensureTestTools() {
  const missing = () => {
    const m = [];
    if (!existsSync(CHROMIUM)) m.push(CHROMIUM);
    if (!existsSync(CHROMEDRIVER)) m.push(CHROMEDRIVER);
    if (!findLavapipeIcd()) m.push(`${ICD_DIR}/lvp_icd.*.json (Mesa lavapipe)`);
    return m;
  };
  let m = missing();
  if (!m.length) {
    console.log(`Test tools: ${CHROMIUM}, ${CHROMEDRIVER}, ${findLavapipeIcd()}: present`);
    return { chromium: CHROMIUM, chromedriver: CHROMEDRIVER, icd: findLavapipeIcd() };
  }
  const os = osRelease();
  const debianish = /\b(debian|ubuntu)\b/.test(`${os.id} ${os.like}`);
  const hasApt = existsSync('/usr/bin/apt-get') || capture('sh', ['-c', 'command -v apt-get']) !== null;
  if (!debianish || !hasApt) {
    throw new CommandError(
      `Missing test tools: ${m.join(', ')}.\n` +
        `This system (${os.pretty || 'unknown OS'}) is not Debian/Ubuntu with apt-get, so they cannot be installed automatically.\n` +
        'Install, with your package manager:\n' +
        `  - Chromium at ${CHROMIUM} (Debian package "chromium")\n` +
        `  - its matching ChromeDriver at ${CHROMEDRIVER} (Debian package "chromium-driver")\n` +
        `  - Mesa's lavapipe Vulkan driver, whose manifest is ${ICD_DIR}/lvp_icd.<arch>.json (Debian package "mesa-vulkan-drivers")\n` +
        'then run `npm test` again.',
    );
  }
  step(`Test tools: installing ${APT_PACKAGES.join(' ')} (missing: ${m.join(', ')})`);
  const isRoot = typeof process.getuid === 'function' && process.getuid() === 0;
  const aptEnv = { DEBIAN_FRONTEND: 'noninteractive' };
  if (isRoot) {
    await run('apt-get', ['update'], { env: aptEnv });
    await run('apt-get', ['install', '-y', ...APT_PACKAGES], { env: aptEnv });
  } else {
    if (!capture('sh', ['-c', 'command -v sudo'])) {
      throw new CommandError(
        `Missing test tools: ${m.join(', ')}; not root and sudo is not installed. As root run:\n` +
          `  apt-get update && apt-get install -y ${APT_PACKAGES.join(' ')}`,
      );
    }
    try {
      await run('sudo', ['-n', 'env', 'DEBIAN_FRONTEND=noninteractive', 'apt-get', 'update']);
      await run('sudo', ['-n', 'env', 'DEBIAN_FRONTEND=noninteractive', 'apt-get', 'install', '-y', ...APT_PACKAGES]);
    } catch (err) {
      throw new CommandError(
        `${err.message}\nCould not install the test tools with sudo -n (a password may be needed). Run:\n` +
          `  sudo apt-get update && sudo apt-get install -y ${APT_PACKAGES.join(' ')}\nthen \`npm test\` again.`,
      );
    }
  }
  m = missing();
  if (m.length) throw new CommandError(`Still missing after apt-get install: ${m.join(', ')}`);
  return { chromium: CHROMIUM, chromedriver: CHROMEDRIVER, icd: findLavapipeIcd() };
}
