// The worker's capped download (www/worker/fetch.js), in Node: a declared Content-Length past
// the cap is refused before the body is read, and a body without one is counted as it streams
// and abandoned as soon as it passes the cap.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { fetchBytes, MAX_FETCH_BYTES } from '../../www/worker/fetch.js';

// A response streaming `chunks` chunks of `size` bytes, counting how many were pulled.
function streamed(chunks, size, headers = {}) {
  const state = { pulled: 0, cancelled: false };
  const body = new ReadableStream({
    pull(controller) {
      if (state.pulled === chunks) return controller.close();
      state.pulled += 1;
      controller.enqueue(new Uint8Array(size).fill(state.pulled));
    },
    cancel() { state.cancelled = true; },
  }, { highWaterMark: 0 });
  return { response: new Response(body, { headers }), state };
}

test('the cap is 256 MiB', () => {
  assert.equal(MAX_FETCH_BYTES, 256 * 1024 * 1024);
});

test('a body within the cap comes back whole', async () => {
  const { response } = streamed(3, 1000);
  const bytes = await fetchBytes('https://x.example/ok', { maxBytes: 5000, fetch: async () => response });
  assert.equal(bytes.length, 3000);
  assert.equal(bytes[0], 1);
  assert.equal(bytes[2999], 3);
});

test('a body without Content-Length stops being read once it passes the cap', async () => {
  const { response, state } = streamed(1000, 1000);
  await assert.rejects(fetchBytes('https://x.example/big', { maxBytes: 10_000, fetch: async () => response }),
    /https:\/\/x\.example\/big: more than the 10,000 bytes the page downloads/);
  assert.ok(state.pulled <= 12, `read ${state.pulled} chunks of 1,000 bytes`);
  assert.ok(state.cancelled, 'the download was cancelled');
});

test('a declared Content-Length past the cap is refused before the body is read', async () => {
  const { response, state } = streamed(1000, 1000, { 'Content-Length': '1000000' });
  await assert.rejects(fetchBytes('https://x.example/declared', { maxBytes: 10_000, fetch: async () => response }),
    /https:\/\/x\.example\/declared: the server declares 1,000,000 bytes, more than the 10,000 bytes the page downloads/);
  assert.equal(state.pulled, 0);
});

test('HTTP errors and network failures name the URL', async () => {
  await assert.rejects(fetchBytes('https://x.example/missing', { fetch: async () => new Response('no', { status: 404, statusText: 'Not Found' }) }),
    /https:\/\/x\.example\/missing: HTTP 404 Not Found/);
  await assert.rejects(fetchBytes('https://x.example/down', { fetch: async () => { throw new TypeError('Failed to fetch'); } }),
    /https:\/\/x\.example\/down: could not be fetched \(Failed to fetch/);
});
