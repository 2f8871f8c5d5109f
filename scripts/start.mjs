#!/usr/bin/env node
// `npm start`: install what is missing, build both wasm packages and the data
// assets (each step skipped when up to date), then serve www/ with
// cross-origin isolation at http://localhost:8080 (PORT overrides).
import { join } from 'node:path';
import { ROOT, since, step } from './lib/run.mjs';
import { bootstrap } from './lib/bootstrap.mjs';
import { buildAll } from './lib/build.mjs';
import { serveForever } from './serve.mjs';

const t0 = performance.now();
try {
  const tools = await bootstrap();
  await buildAll(tools);
} catch (err) {
  console.error(`\nnpm start failed: ${err.message}`);
  process.exit(1);
}
step(`Ready in ${since(t0)}; serving`);
const port = Number(process.env.PORT || 8080);
try {
  await serveForever({ root: join(ROOT, 'www'), port, isolate: true });
} catch (err) {
  console.error(err.code === 'EADDRINUSE' ? `Port ${port} is already in use; set PORT=N to use another.` : err.message);
  process.exit(1);
}
