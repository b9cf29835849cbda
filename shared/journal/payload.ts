import { brotliCompressSync, brotliDecompressSync, constants } from "node:zlib";

/**
 * Payload storage in a journal item. DynamoDB bills a write per started KB of the whole item, and
 * an event's item is written at least twice (accepted, finished), so a 1 KB payload stored as
 * text makes every write cost 2 WRU. Payloads above PACK_THRESHOLD_BYTES are stored
 * brotli-compressed (binary) when that is smaller; JSON with repeated keys and URLs usually
 * shrinks 2–4×, which keeps a typical 1 KB payload's item under 1 KB. Smaller payloads stay text,
 * readable in the console. Items written before this existed carry `payload` and read unchanged.
 */
export const PACK_THRESHOLD_BYTES = 256;

export function packPayload(json: string): { payload: string } | { payloadz: Uint8Array } {
  const bytes = Buffer.byteLength(json, "utf8");
  if (bytes <= PACK_THRESHOLD_BYTES) return { payload: json };
  const packed = brotliCompressSync(json, {
    params: {
      // Quality 4 with a 64 KB window: about 50 µs for a 1 KB payload (1,148 → 386 bytes), where
      // the defaults (quality 11, 4 MB window) take over 1 ms; an API call packs up to 500.
      [constants.BROTLI_PARAM_QUALITY]: 4,
      [constants.BROTLI_PARAM_LGWIN]: 16,
      [constants.BROTLI_PARAM_MODE]: constants.BROTLI_MODE_TEXT,
      [constants.BROTLI_PARAM_SIZE_HINT]: bytes,
    },
  });
  return packed.length < bytes ? { payloadz: new Uint8Array(packed) } : { payload: json };
}

export function unpackPayload(item: { payload?: string; payloadz?: Uint8Array }): string {
  if (item.payloadz !== undefined) return brotliDecompressSync(item.payloadz).toString("utf8");
  // Every item has one of the two; an item without either is a fault worth failing loudly on.
  if (item.payload === undefined) throw new TypeError("journal item has neither payload nor payloadz");
  return item.payload;
}
