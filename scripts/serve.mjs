#!/usr/bin/env node
// The project's small static file server (Node built-ins only).
//
// CLI:    node scripts/serve.mjs [--port N] [--no-isolation] [--root www] [--host H]
//         (PORT in the environment sets the port too; --port wins.)
// Module: import { startServer } from './scripts/serve.mjs';
//         const { server, url, close } = await startServer({ root, port, isolate });
//
// With isolation (the default) every response carries
//   Cross-Origin-Opener-Policy: same-origin
//   Cross-Origin-Embedder-Policy: require-corp
//   Cross-Origin-Resource-Policy: same-origin
// so the page is cross-origin isolated (SharedArrayBuffer, threaded wasm).
// --no-isolation leaves those three out: the single-threaded / embed case.
import { createServer } from 'node:http';
import { createReadStream } from 'node:fs';
import { stat } from 'node:fs/promises';
import { extname, join, resolve, sep, dirname } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';

const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '..');

export const MIME = {
  '.html': 'text/html; charset=utf-8',
  '.htm': 'text/html; charset=utf-8',
  '.js': 'text/javascript; charset=utf-8',
  '.mjs': 'text/javascript; charset=utf-8',
  '.wasm': 'application/wasm',
  '.css': 'text/css; charset=utf-8',
  '.json': 'application/json; charset=utf-8',
  '.map': 'application/json; charset=utf-8',
  '.svg': 'image/svg+xml',
  '.png': 'image/png',
  '.jpg': 'image/jpeg',
  '.jpeg': 'image/jpeg',
  '.gif': 'image/gif',
  '.webp': 'image/webp',
  '.ico': 'image/x-icon',
  // Served as an opaque file (no Content-Encoding), so the page gets the
  // gzip bytes and decompresses them itself.
  '.gz': 'application/gzip',
  '.txt': 'text/plain; charset=utf-8',
  '.md': 'text/plain; charset=utf-8',
  '.ts': 'text/plain; charset=utf-8',
  '.woff2': 'font/woff2',
};

const ISOLATION_HEADERS = {
  'Cross-Origin-Opener-Policy': 'same-origin',
  'Cross-Origin-Embedder-Policy': 'require-corp',
  'Cross-Origin-Resource-Policy': 'same-origin',
};

function makeHandler(rootDir, isolate) {
  const base = { 'Cache-Control': 'no-cache', 'X-Content-Type-Options': 'nosniff', ...(isolate ? ISOLATION_HEADERS : {}) };

  const send = (req, res, status, body, headers = {}) => {
    const buf = Buffer.from(body);
    res.writeHead(status, { ...base, 'Content-Type': 'text/plain; charset=utf-8', 'Content-Length': buf.length, ...headers });
    res.end(req.method === 'HEAD' ? undefined : buf);
  };

  return async (req, res) => {
    try {
      if (req.method !== 'GET' && req.method !== 'HEAD') {
        return send(req, res, 405, 'Method Not Allowed\n', { Allow: 'GET, HEAD' });
      }
      // Parse the path by hand: new URL() would read "//x/y" as a host.
      const rawPath = req.url.split(/[?#]/)[0];
      const query = req.url.slice(rawPath.length).split('#')[0];
      if (!rawPath.startsWith('/')) return send(req, res, 400, 'Bad Request\n');
      let pathname;
      try {
        pathname = decodeURIComponent(rawPath);
      } catch {
        return send(req, res, 400, 'Bad Request\n');
      }
      // Reject traversal outright rather than normalising it away.
      const segments = pathname.split('/');
      if (pathname.includes('\0') || pathname.includes('\\') || segments.includes('..')) {
        return send(req, res, 403, 'Forbidden\n');
      }
      // Collapse empty and "." segments: "//" and "/./x" are "/" and "/x".
      pathname = '/' + segments.filter((x) => x && x !== '.').join('/') + (pathname.endsWith('/') && segments.some((x) => x && x !== '.') ? '/' : '');
      let file = resolve(rootDir, '.' + pathname);
      if (file !== rootDir && !file.startsWith(rootDir + sep)) return send(req, res, 403, 'Forbidden\n');

      let st = await stat(file).catch(() => null);
      if (st && st.isDirectory()) {
        if (!pathname.endsWith('/')) {
          // Redirect so relative URLs in the index resolve inside the directory.
          return send(req, res, 301, 'Moved Permanently\n', { Location: encodeURI(pathname + '/') + query });
        }
        file = join(file, 'index.html');
        st = await stat(file).catch(() => null);
      }
      if (!st || !st.isFile()) return send(req, res, 404, 'Not Found\n');

      const type = MIME[extname(file).toLowerCase()] || 'application/octet-stream';
      res.writeHead(200, {
        ...base,
        'Content-Type': type,
        'Content-Length': st.size,
        'Last-Modified': st.mtime.toUTCString(),
      });
      if (req.method === 'HEAD') return res.end();
      const stream = createReadStream(file);
      stream.on('error', () => res.destroy());
      stream.pipe(res);
    } catch (err) {
      if (!res.headersSent) send(req, res, 500, 'Internal Server Error\n');
      else res.destroy();
      console.error(`serve: ${req.method} ${req.url}: ${err.message}`);
    }
  };
}

/**
 * Start serving `root` (default www/). port 0 picks a free port. `isolate`
 * (default true) adds the COOP/COEP/CORP headers. `host` defaults to
 * 127.0.0.1 (loopback only); the returned url uses "localhost", which browsers
 * treat as a secure context (needed for WebGPU).
 */
export function startServer({ root = join(ROOT, 'www'), port = 8080, isolate = true, host = '127.0.0.1' } = {}) {
  const rootDir = resolve(root);
  const server = createServer(makeHandler(rootDir, isolate));
  return new Promise((resolveP, rejectP) => {
    server.once('error', rejectP);
    server.listen(port, host, () => {
      server.off('error', rejectP);
      const actual = server.address().port;
      const shownHost = host === '127.0.0.1' || host === '::1' || host === '0.0.0.0' || host === '::' ? 'localhost' : host;
      const url = `http://${shownHost}:${actual}/`;
      const close = () =>
        new Promise((r) => {
          server.close(() => r());
          server.closeAllConnections?.();
        });
      resolveP({ server, url, port: actual, close });
    });
  });
}

function parseArgs(argv) {
  const opts = { root: join(ROOT, 'www'), port: Number(process.env.PORT || 8080), isolate: true, host: '127.0.0.1' };
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i];
    const val = () => {
      if (a.includes('=')) return a.slice(a.indexOf('=') + 1);
      if (i + 1 >= argv.length) throw new Error(`${a} needs a value`);
      return argv[++i];
    };
    if (a === '--no-isolation') opts.isolate = false;
    else if (a === '--port' || a.startsWith('--port=')) opts.port = Number(val());
    else if (a === '--root' || a.startsWith('--root=')) opts.root = resolve(val());
    else if (a === '--host' || a.startsWith('--host=')) opts.host = val();
    else if (a === '-h' || a === '--help') {
      console.log('usage: node scripts/serve.mjs [--port N] [--no-isolation] [--root DIR] [--host H]');
      process.exit(0);
    } else throw new Error(`unknown argument ${a}`);
  }
  if (!Number.isInteger(opts.port) || opts.port < 0 || opts.port > 65535) throw new Error(`bad port ${opts.port}`);
  return opts;
}

/** Serve until SIGINT/SIGTERM; used by the CLI below and by start.mjs. */
export async function serveForever(opts) {
  const { url, close } = await startServer(opts);
  console.log(
    `\nServing ${opts.root} at ${url}` +
      (opts.isolate === false ? ' (no cross-origin isolation headers)' : ' (cross-origin isolated: COOP/COEP)') +
      '\nPress Ctrl+C to stop.',
  );
  const stop = async () => {
    await close();
    process.exit(0);
  };
  process.once('SIGINT', stop);
  process.once('SIGTERM', stop);
}

if (process.argv[1] && import.meta.url === pathToFileURL(resolve(process.argv[1])).href) {
  let opts;
  try {
    opts = parseArgs(process.argv.slice(2));
  } catch (err) {
    console.error(`serve: ${err.message}`);
    process.exit(2);
  }
  serveForever(opts).catch((err) => {
    console.error(`serve: ${err.code === 'EADDRINUSE' ? `port ${opts.port} is already in use (try --port N or PORT=N)` : err.message}`);
    process.exit(1);
  });
}
