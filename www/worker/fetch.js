// Downloads with a size cap: a URL (from a shared link, say) may name a file of any size, and
// the engine holds the whole file in memory, so a declared Content-Length past the cap is
// refused before the body is read, and the body is counted as it streams and abandoned as
// soon as it passes the cap (servers may omit or understate the length).

export const MAX_FETCH_BYTES = 256 * 1024 * 1024;

const message = (error) => String(error?.message ?? error);
const bytesText = (n) => `${n.toLocaleString('en-US')} bytes`;

// `maxBytes`: the cap; `fetch`: the fetch to use (tests pass their own).
export async function fetchBytes(url, { maxBytes = MAX_FETCH_BYTES, fetch: fetchImpl = fetch } = {}) {
  const tooBig = `more than the ${bytesText(maxBytes)} the page downloads`;
  let response;
  try {
    response = await fetchImpl(url);
  } catch (error) {
    throw new Error(`${url}: could not be fetched (${message(error)}; the server must allow cross-origin requests)`);
  }
  if (!response.ok) throw new Error(`${url}: HTTP ${response.status}${response.statusText ? ` ${response.statusText}` : ''}`);
  const declared = Number(response.headers.get('Content-Length'));
  if (Number.isFinite(declared) && declared > maxBytes) {
    await response.body?.cancel().catch(() => {});
    throw new Error(`${url}: the server declares ${bytesText(declared)}, ${tooBig}`);
  }
  if (!response.body) return new Uint8Array(await response.arrayBuffer());
  const reader = response.body.getReader();
  const chunks = [];
  let total = 0;
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    total += value.length;
    if (total > maxBytes) {
      await reader.cancel().catch(() => {});
      throw new Error(`${url}: ${tooBig}`);
    }
    chunks.push(value);
  }
  const bytes = new Uint8Array(total);
  let at = 0;
  for (const chunk of chunks) {
    bytes.set(chunk, at);
    at += chunk.length;
  }
  return bytes;
}
